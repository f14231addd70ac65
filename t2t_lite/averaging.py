"""Checkpoint averaging (the paper's section 6.1).

The paper averaged the last 5 checkpoints (base) or 20 (big), written at
10-minute intervals. Only model weights are averaged; optimizer slots and the
data position are not part of the average. `t2t_lite.model_dir_writer` writes an
averaged model directory; the decoder and the exporter average on the fly.
"""

from typing import List, Sequence

import numpy as np

from t2t_lite import checkpoints
from t2t_lite.checkpoints import restore_weights


def average_into(model, paths: Sequence[str]) -> None:
    """Sets `model`'s weights to the mean of its weights in the checkpoints `paths`.

    The sum is taken in float64, so the order of the checkpoints does not change
    the result beyond the final rounding to each variable's dtype.
    """
    if len(paths) == 1:
        restore_weights(model, paths[0])
        return
    total = None
    for path in paths:
        restore_weights(model, path)
        values = [v.numpy().astype(np.float64) for v in model.weights]
        total = values if total is None else [t + v for t, v in zip(total, values)]
    for variable, value in zip(model.weights, total):
        variable.assign((value / len(paths)).astype(variable.dtype))


def restore_latest(model, model_dir: str, checkpoint_path: str = "", average: int = 1) -> List[str]:
    """Sets `model`'s weights to the checkpoint `checkpoint_path` (default: the
    latest complete one of `model_dir`), or to the mean of the last `average`
    up to it, also while a trainer writes and deletes checkpoints there
    (`checkpoints.read_listed`).

    Returns:
      The checkpoint prefixes read.
    """
    return checkpoints.read_listed(model_dir, lambda paths: average_into(model, paths),
                                   checkpoint_path, average)
