"""A real `Trainer` in its own process, saving a checkpoint every step: the writer
that the tests of readers race against.

    python tests/background_trainer.py MODEL_DIR

MODEL_DIR is a model directory from `model_dirs.make_model_dir(..., steps=())`
(metadata, no checkpoint). The batches are random ids (no t2t-datagen: its
vocabulary takes minutes on a loaded CPU); what the test needs is the
trainer's real checkpoint writing: `tf.train.CheckpointManager` saving each
step and deleting all but the last 2 (`--keep_checkpoint_max=2`). It trains
until killed.
"""

import sys

import numpy as np
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.train.schedule import make_optimizer
from t2t_lite.train.trainer import Trainer, TrainOptions

OPTIONS = TrainOptions(train_steps=10 ** 9, eval_every=0, log_every=0, save_checkpoints_steps=1,
                       save_checkpoints_secs=0, keep_checkpoint_max=2)


def main(model_dir: str) -> None:
    directory = model_dir_lib.ModelDir.open(model_dir)
    hparams = directory.hparams
    vocab_size = directory.vocab_size
    ids = np.random.default_rng(0).integers(3, vocab_size, size=(64, 2, 12), dtype=np.int32)

    def dataset_fn(input_context, seed):
        data = {"inputs": ids[:, 0], "targets": ids[:, 1]}
        return tf.data.Dataset.from_tensor_slices(data).shuffle(64, seed=seed).repeat().batch(8)

    hparams = hparams.parse("tokens_per_step=0")  # one batch a step
    trainer = Trainer(hparams, directory.build_model(), make_optimizer(hparams),
                      dataset_fn, model_dir, OPTIONS)
    trainer.train()


if __name__ == "__main__":
    main(sys.argv[1])
