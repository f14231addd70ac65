"""A mixed training run (--train_mix) interrupted and resumed ends with the weights of
an uninterrupted one, bit for bit on one device.

The iterator checkpoint holds the position of each corpus's stream (its shuffle
buffer included) and of `sample_from_datasets`' seeded draws; a resumed run
continues the same draws. tests/train/test_trainer_kill.py shows that a SIGKILL
anywhere resumes from the last checkpoint as this stop does.
"""

import numpy as np

from t2t_lite.data import mixing
from t2t_lite.train.experiment import make_trainer
from t2t_lite.train.trainer import TrainOptions

from mix_data import MAIN, OTHER, write_problem
from test_trainer import tiny_hparams, weights
from toy_data import REVERSE_VOCAB, reverse_examples

MIX = f"alpha=1,beta=3,{OTHER}=2"


def train(data_dir, output_dir, steps):
    options = TrainOptions(train_steps=steps, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0,
                           eval_bleu_sentences=0)
    trainer = make_trainer(tiny_hparams(), MAIN, data_dir, str(output_dir), REVERSE_VOCAB,
                           options, train_mix=MIX)
    result = trainer.train()
    assert trainer.exact_data_resume  # the iterator itself is in the checkpoint
    return trainer, result


def test_mixed_run_interrupted_and_resumed_equals_uninterrupted(tmp_path):
    data_dir = str(tmp_path / "data")
    write_problem(data_dir, MAIN, [("alpha", reverse_examples(200, 0), 2),
                                   ("beta", reverse_examples(100, 1), 1)],
                  dev=reverse_examples(20, 3))
    write_problem(data_dir, OTHER, [(OTHER, reverse_examples(100, 2), 1)])
    assert len(mixing.train_sources(data_dir, MAIN, MIX)) == 3
    full, full_result = train(data_dir, tmp_path / "full", 6)
    train(data_dir, tmp_path / "resumed", 3)
    resumed, resumed_result = train(data_dir, tmp_path / "resumed", 6)
    assert resumed.step == full.step == 6
    assert resumed_result.loss == full_result.loss
    for a, b in zip(weights(full), weights(resumed)):
        np.testing.assert_array_equal(a, b)
