"""The self-describing model directory.

Everything the decoder and the exporter need is written here when training
starts, so they rebuild the model from this directory alone:

    hparams.json   the resolved HParams (set + overrides)
    problem.json   {"problem": name, "vocab_file": file name, "vocab_size": n}
    <vocab file>   a copy of the problem's subword model
    checkpoint, ckpt-N.*   weights (tf.train.CheckpointManager)
    train/, eval/  TensorBoard event files
"""

import json
import os
import shutil
from typing import Any, Dict

from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

HPARAMS_FILE = "hparams.json"
PROBLEM_FILE = "problem.json"


def _write_atomically(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def prepare(model_dir: str, hparams: HParams, problem_name: str, vocab_path: str,
            vocab_size: int) -> None:
    """Creates or checks `model_dir` for a training run.

    A new directory gets the metadata and a copy of the vocabulary. An
    existing one must have been written for the same hparams and problem:
    anything else is an error rather than a silent mix of two runs.

    Raises:
      T2TError: unwritable directory, or metadata that conflicts with the
        requested run.
    """
    try:
        os.makedirs(model_dir, exist_ok=True)
    except OSError as e:
        raise T2TError(f"Cannot create output directory {model_dir!r}: {e.strerror}.") from None
    if not os.access(model_dir, os.W_OK):
        raise T2TError(f"Output directory {model_dir!r} is not writable.")
    problem = {"problem": problem_name, "vocab_file": os.path.basename(vocab_path),
               "vocab_size": vocab_size}
    hparams_path = os.path.join(model_dir, HPARAMS_FILE)
    if os.path.exists(hparams_path):
        existing = read_hparams(model_dir)
        if existing != hparams:
            diff = {k: (v, hparams.to_dict()[k]) for k, v in existing.to_dict().items()
                    if hparams.to_dict()[k] != v}
            raise T2TError(
                f"{model_dir} was trained with other hparams (saved vs requested: {diff}); "
                "use a new --output_dir or the same --hparams_set/--hparams.")
        saved_problem = read_problem(model_dir)
        if saved_problem != problem:
            raise T2TError(f"{model_dir} was trained on {saved_problem}, not {problem}; "
                           "use a new --output_dir.")
        return
    shutil.copyfile(vocab_path, os.path.join(model_dir, problem["vocab_file"]))
    _write_atomically(os.path.join(model_dir, PROBLEM_FILE), json.dumps(problem, indent=2))
    _write_atomically(hparams_path, hparams.to_json())  # last: marks the directory complete


def _read_json(model_dir: str, name: str) -> Any:
    path = os.path.join(model_dir, name)
    if not os.path.exists(path):
        raise T2TError(f"{model_dir} is not a t2t-lite model directory (no {name}); "
                       "train with t2t-trainer --output_dir first.")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise T2TError(f"Corrupt {path}: {e}") from None


def read_hparams(model_dir: str) -> HParams:
    """The resolved hparams the model in `model_dir` was trained with."""
    return HParams.from_dict(_read_json(model_dir, HPARAMS_FILE))


def read_problem(model_dir: str) -> Dict[str, Any]:
    """{"problem", "vocab_file", "vocab_size"} of the model in `model_dir`."""
    problem = _read_json(model_dir, PROBLEM_FILE)
    if not isinstance(problem, dict) or set(problem) != {"problem", "vocab_file", "vocab_size"}:
        raise T2TError(f"Corrupt {os.path.join(model_dir, PROBLEM_FILE)}.")
    return problem


def vocab_path(model_dir: str) -> str:
    """The copy of the subword model inside `model_dir`."""
    path = os.path.join(model_dir, read_problem(model_dir)["vocab_file"])
    if not os.path.exists(path):
        raise T2TError(f"Vocabulary {path} is missing from the model directory.")
    return path


def copy_metadata(src_dir: str, dst_dir: str) -> None:
    """Copies hparams, problem and vocabulary (e.g. for an averaged checkpoint)."""
    os.makedirs(dst_dir, exist_ok=True)
    problem = read_problem(src_dir)
    for name in (problem["vocab_file"], PROBLEM_FILE, HPARAMS_FILE):
        shutil.copyfile(os.path.join(src_dir, name), os.path.join(dst_dir, name))
