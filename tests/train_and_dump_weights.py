"""Runs t2t-trainer, then writes the weights its model ended with to a .npz file.

    python tests/train_and_dump_weights.py WEIGHTS.npz [t2t-trainer flags...]

For multi-worker tests: a non-chief worker keeps no checkpoint of its own (it
saves into a scratch directory it removes), so its weights are only seen in
its process. The program otherwise runs unchanged (`t2t_lite.bin.t2t_trainer`).
"""

import sys

import numpy as np

from t2t_lite.bin import t2t_trainer
from t2t_lite.train import trainer as trainer_lib


def main(weights_file: str, argv) -> int:
    train = trainer_lib.Trainer.train

    def train_then_dump(self):
        result = train(self)
        np.savez(weights_file, *[v.numpy() for v in self.model.weights])
        return result

    trainer_lib.Trainer.train = train_then_dump
    return t2t_trainer.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
