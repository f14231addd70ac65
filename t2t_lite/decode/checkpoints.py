"""Loading a model from its directory, and averaging checkpoints (section 6.1).

The paper averaged the last 5 checkpoints (base) or 20 (big), written at
10-minute intervals. Only model weights are averaged; optimizer slots and the
data position are not part of the averaged checkpoint.
"""

import os
from typing import TYPE_CHECKING, List, Optional, Tuple

import numpy as np
import tensorflow as tf

import t2t_lite
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.train import model_dir as model_dir_lib

if TYPE_CHECKING:
    import keras

    from t2t_lite.data.vocab import SubwordVocab


def list_checkpoints(model_dir: str) -> List[str]:
    """The checkpoint prefixes of `model_dir`, oldest first."""
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


def _restore(model, path: str) -> None:
    if not tf.io.gfile.exists(path + ".index"):
        raise T2TError(f"Checkpoint {path} does not exist (no {path}.index).")
    try:
        status = tf.train.Checkpoint(model=model).restore(path)
        status.expect_partial().assert_existing_objects_matched()
    except (ValueError, AssertionError, tf.errors.OpError) as e:
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise T2TError(f"Checkpoint {path} does not match the model in its directory "
                       f"(different variables or shapes): {first_line}") from None


def average_into(model, paths: List[str]) -> None:
    """Sets `model`'s weights to the mean of its weights in the checkpoints `paths`."""
    total = None
    for path in paths:
        _restore(model, path)
        values = [v.numpy().astype(np.float64) for v in model.weights]
        total = values if total is None else [t + v for t, v in zip(total, values)]
    for variable, value in zip(model.weights, total):
        variable.assign((value / len(paths)).astype(variable.dtype))


PRECISIONS = ("float32", "bfloat16")


def load_model(model_dir: str, checkpoint_path: Optional[str] = None,
               checkpoint_average: int = 1, precision: str = "float32",
               ) -> Tuple["keras.Model", "SubwordVocab", HParams, dict]:
    """Rebuilds the model of `model_dir` and restores (or averages) its weights.

    Args:
      model_dir: a directory written by t2t-trainer or t2t-avg-checkpoints.
      checkpoint_path: a specific `ckpt-N` prefix; default: the latest.
      checkpoint_average: average the last N checkpoints (up to the chosen one).
      precision: "float32", or "bfloat16" to compute in bfloat16 (Keras'
        mixed_bfloat16 policy: float32 weights, bfloat16 matmuls and cache,
        float32 softmax and logits), as in training with --precision.
    Returns:
      (model, vocab, hparams, problem info from problem.json).
    """
    import keras

    from t2t_lite.data.vocab import SubwordVocab

    if precision not in PRECISIONS:
        raise T2TError(f"precision must be one of {PRECISIONS}, got {precision!r}.")
    hparams = model_dir_lib.read_hparams(model_dir)
    problem = model_dir_lib.read_problem(model_dir)
    vocab = SubwordVocab.from_file(model_dir_lib.vocab_path(model_dir))
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16" if precision == "bfloat16" else "float32")
    try:
        model = t2t_lite.build_model(hparams, problem["vocab_size"])
    finally:
        keras.config.set_dtype_policy(previous_policy)
    if checkpoint_average < 1:
        raise T2TError(f"--checkpoint_average must be >= 1, got {checkpoint_average}.")
    if checkpoint_path:
        paths = [checkpoint_path]
        if checkpoint_average > 1:
            available = list_checkpoints(model_dir)
            if checkpoint_path not in available:
                raise T2TError(f"{checkpoint_path} is not among the checkpoints of {model_dir}.")
            end = available.index(checkpoint_path) + 1
            paths = available[max(0, end - checkpoint_average):end]
    else:
        paths = list_checkpoints(model_dir)[-checkpoint_average:]
    if len(paths) == 1:
        _restore(model, paths[0])
    else:
        average_into(model, paths)
    return model, vocab, hparams, problem


def write_averaged(model_dir: str, avg_dir: str, paths: List[str]) -> str:
    """Averages the checkpoints `paths` of `model_dir` into a new model directory `avg_dir`.

    Returns:
      The written checkpoint prefix (`avg_dir/ckpt-<last step>`).
    """
    if os.path.abspath(avg_dir) == os.path.abspath(model_dir):
        raise T2TError("--avg_dir must differ from the model directory.")
    hparams = model_dir_lib.read_hparams(model_dir)
    problem = model_dir_lib.read_problem(model_dir)
    model = t2t_lite.build_model(hparams, problem["vocab_size"])
    average_into(model, paths)
    model_dir_lib.copy_metadata(model_dir, avg_dir)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), avg_dir,
                                         max_to_keep=1)
    return manager.save(checkpoint_number=checkpoint_step(paths[-1]))
