"""Checkpoint files of a model directory: listing, step numbers, restoring weights.

A checkpoint is a `ckpt-N` prefix written by `tf.train.CheckpointManager`
(`ckpt-N.index`, `ckpt-N.data-*`), listed oldest first in the directory's
`checkpoint` state file. Training checkpoints also hold the optimizer and the
input position; `restore_weights` reads only the model's weights.

Reading while a trainer writes (TensorFlow 2.21, checked in its source): a
save writes the data files under a temporary name and renames them, then
writes `ckpt-N.index` in place (not atomically), and only then rewrites the
state file (atomically: a temporary file renamed). So a checkpoint named in
the state file is complete, and one that is not may be half-written: readers
choose from the state file only. After each save the trainer deletes the
checkpoints beyond `keep_checkpoint_max`, `.index` first, so a listed
checkpoint can vanish before or while it is read: `read_listed` then lists
again and reads the checkpoints that are the latest now.
"""

from typing import Callable, List

import tensorflow as tf

from t2t_lite import atomic
from t2t_lite.errors import T2TError

READ_ATTEMPTS = 10  # a reader slower than this many saves of the trainer gives up


class CheckpointGone(T2TError):
    """A checkpoint's files are missing: never written, or deleted (by a trainer's
    `keep_checkpoint_max`) before or while it was read."""


def list_checkpoints(model_dir: str) -> List[str]:
    """The checkpoint prefixes of `model_dir` that its `checkpoint` file lists
    and whose index exists, oldest first.

    A trainer killed while it deletes an old checkpoint (`keep_checkpoint_max`)
    leaves it listed without its index (TensorFlow deletes the index first)
    until its next save; such a checkpoint is not offered.

    While `model_dir` is being replaced (a `best/` or an average), it lists
    the checkpoints of its complete previous copy (`atomic.readable_dir`).

    Raises:
      T2TError: the directory has no checkpoint.
    """
    state = tf.train.get_checkpoint_state(atomic.readable_dir(model_dir))
    listed = list(state.all_model_checkpoint_paths) if state else []  # joined with model_dir
    complete = [p for p in listed if tf.io.gfile.exists(p + ".index")]
    if not complete:
        raise T2TError(f"No checkpoints in {model_dir}; train with t2t-trainer first.")
    return complete


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
      CheckpointGone: no such checkpoint, or one deleted while it was read.
      T2TError: a checkpoint written for other variables or shapes, or damaged
        (a data file shorter than its index says).
    """
    if not _files_exist(path):
        raise CheckpointGone(f"Checkpoint {path} does not exist (no {path}.index).")
    try:
        status = tf.train.Checkpoint(model=model).restore(path)
        status.expect_partial().assert_existing_objects_matched()
    except IndexError as e:  # TensorFlow's reader of a cut data file: "Read less bytes ..."
        if not _files_exist(path):
            raise CheckpointGone(f"Checkpoint {path} was deleted while it was read.") from None
        raise T2TError(f"Checkpoint {path} is damaged: {e} (a data file cut short; "
                       "read another checkpoint or restore the file).") from None
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        if not _files_exist(path):  # deleted while it was read
            raise CheckpointGone(f"Checkpoint {path} was deleted while it was read (a trainer "
                                 "keeps only its last keep_checkpoint_max).") from None
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise T2TError(f"Checkpoint {path} does not match the model in its directory "
                       f"(different variables or shapes): {first_line}") from None


def _files_exist(path: str) -> bool:
    """Whether the index and at least one data file of the prefix `path` exist."""
    return tf.io.gfile.exists(path + ".index") and bool(tf.io.gfile.glob(path + ".data-*"))


def read_listed(model_dir: str, read: Callable[[List[str]], None], checkpoint_path: str = "",
                average: int = 1) -> List[str]:
    """Calls `read(paths)` on `select_checkpoints(model_dir, checkpoint_path, average)`,
    selecting again while a trainer deletes the selected checkpoints under it.

    Returns:
      The prefixes `read` read in full.

    Raises:
      CheckpointGone: a checkpoint of a given `checkpoint_path` is gone.
      T2TError: as `select_checkpoints`; a listed checkpoint whose files are
        missing; `READ_ATTEMPTS` selections all deleted while they were read.
    """
    paths = select_checkpoints(model_dir, checkpoint_path, average)
    for _ in range(READ_ATTEMPTS):
        try:
            read(paths)
            return paths
        except CheckpointGone as gone:
            if checkpoint_path:
                raise  # the user's choice: nothing to read instead
            again = select_checkpoints(model_dir, "", average)
            if again == paths:
                raise T2TError(f"{gone} {model_dir}/checkpoint still lists it: were its files "
                               "deleted by hand?") from None
            paths = again
    raise T2TError(f"The checkpoints of {model_dir} were deleted {READ_ATTEMPTS} times while "
                   "they were read (a trainer saving often with a small keep_checkpoint_max); "
                   "raise the trainer's --keep_checkpoint_max or read a copy of the directory.")


def save_weights(model, directory: str, step: int) -> str:
    """Writes `model`'s weights alone as `directory/ckpt-<step>`, keeping only that
    checkpoint in the directory's state file; returns the prefix."""
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory,
                                         max_to_keep=1)
    return manager.save(checkpoint_number=step)
