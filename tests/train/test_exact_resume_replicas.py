"""A resumed run on 2 replicas continues from the same data position as an
uninterrupted one (MirroredStrategy over the 2 logical CPUs that conftest.py
makes before TensorFlow starts)."""

import numpy as np
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.train.keras_internals import set_random_seed
from t2t_lite.train.schedule import make_optimizer
from t2t_lite.train.trainer import Trainer, TrainOptions

from toy_data import REVERSE_VOCAB, reverse_examples


def test_two_replicas_interrupted_and_resumed_equal_uninterrupted(mirrored_strategy,
                                                                  tmp_path):
    examples = reverse_examples(96, 4)
    width = max(len(x) for pair in examples for x in pair)
    data = np.array([[list(x) + [0] * (width - len(x)) for x in pair] for pair in examples],
                    np.int32)
    # Dropout on; 2 micro-batches of 4 sentences per replica per step.
    hp = registry.hparams("transformer_tiny").parse(
        "hidden_size=32,filter_size=64,batch_size=40,tokens_per_step=160")

    def dataset_fn(input_context, seed):
        ds = tf.data.Dataset.from_tensor_slices({"inputs": data[:, 0], "targets": data[:, 1]})
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds.shuffle(96, seed=seed).repeat().batch(4)

    def run(output_dir, steps):
        strategy = mirrored_strategy()
        set_random_seed(1)
        with strategy.scope():
            model = t2t_lite.build_model(hp, REVERSE_VOCAB)
            optimizer = make_optimizer(hp)
        options = TrainOptions(train_steps=steps, eval_every=0, log_every=1000,
                               save_checkpoints_steps=0, save_checkpoints_secs=0)
        trainer = Trainer(hp, model, optimizer, dataset_fn, output_dir, options, strategy)
        assert trainer.accumulate == 2 and not trainer.exact_data_resume
        result = trainer.train()
        return ([v.numpy() for v in model.trainable_variables],
                int(trainer.batches_read.numpy()), result.tokens)

    full, read_full, tokens_full = run(str(tmp_path / "full"), 8)
    run(str(tmp_path / "resumed"), 3)
    resumed, read_resumed, tokens_resumed = run(str(tmp_path / "resumed"), 8)
    assert read_full == read_resumed == 16, (read_full, read_resumed)
    # Tokens trained on: every replica's micro-batches (8 steps x 2 replicas x 2 micro-
    # batches x 4 rows, each row padded to `width`), the same after a resume.
    assert tokens_full["padded"] == tokens_full["padded_targets"] == 8 * 2 * 2 * 4 * width
    assert tokens_resumed == tokens_full
    diff = max(float(np.abs(a - b).max()) for a, b in zip(full, resumed))
    assert diff < 1e-6, diff
