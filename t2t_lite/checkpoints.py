"""Checkpoint files of a model directory: listing, step numbers, restoring weights.

A checkpoint is a `ckpt-N` prefix written by `tf.train.CheckpointManager`
(`ckpt-N.index`, `ckpt-N.data-*`), listed oldest first in the directory's
`checkpoint` state file. Training checkpoints also hold the optimizer and the
input position; `restore_weights` reads only the model's weights.
"""

from typing import List

import tensorflow as tf

from t2t_lite.errors import T2TError


def list_checkpoints(model_dir: str) -> List[str]:
    """The checkpoint prefixes of `model_dir`, oldest first.

    Raises:
      T2TError: the directory has no checkpoint.
    """
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None or not state.all_model_checkpoint_paths:
        raise T2TError(f"No checkpoints in {model_dir}; train with t2t-trainer first.")
    return list(state.all_model_checkpoint_paths)  # already joined with model_dir


def checkpoint_step(path: str) -> int:
    """The step number in a `.../ckpt-N` prefix."""
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        raise T2TError(f"{path} is not a checkpoint prefix like .../ckpt-1000.") from None


def select_checkpoints(model_dir: str, checkpoint_path: str = "", average: int = 1) -> List[str]:
    """The prefixes to restore: `checkpoint_path` (default: the latest) and, with
    `average` > 1, the checkpoints before it, `average` in all (fewer if there
    are not that many).

    Raises:
      T2TError: `average` < 1, no checkpoints, or a `checkpoint_path` that is not
        among the directory's checkpoints when averaging.
    """
    if average < 1:
        raise T2TError(f"--checkpoint_average must be >= 1, got {average}.")
    if checkpoint_path and average == 1:
        return [checkpoint_path]
    available = list_checkpoints(model_dir)
    if not checkpoint_path:
        return available[-average:]
    if checkpoint_path not in available:
        raise T2TError(f"{checkpoint_path} is not among the checkpoints of {model_dir}.")
    end = available.index(checkpoint_path) + 1
    return available[max(0, end - average):end]


def restore_weights(model, path: str) -> None:
    """Restores `model`'s weights from the checkpoint prefix `path`.

    Raises:
      T2TError: no such checkpoint, or one written for other variables or shapes.
    """
    if not tf.io.gfile.exists(path + ".index"):
        raise T2TError(f"Checkpoint {path} does not exist (no {path}.index).")
    try:
        status = tf.train.Checkpoint(model=model).restore(path)
        status.expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise T2TError(f"Checkpoint {path} does not match the model in its directory "
                       f"(different variables or shapes): {first_line}") from None


def save_weights(model, directory: str, step: int) -> str:
    """Writes `model`'s weights alone as `directory/ckpt-<step>`, keeping only that
    checkpoint in the directory's state file; returns the prefix."""
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory,
                                         max_to_keep=1)
    return manager.save(checkpoint_number=step)
