"""A model directory's CTranslate2 conversion, made once and reused (--engine=ctranslate2).

    path = cached_conversion("runs/ende", checkpoint_average=5, quantization="int8")
    # -> "runs/ende/ctranslate2_cache/ckpt-3000-avg5-int8-1f0c...", converted by
    #    t2t-exporter's own `export_ctranslate2` the first time, reused after

The entry's name holds a key (`conversion_key`) over everything the converted
weights depend on: the checkpoint prefixes read (each file's name, size and
modification time), --checkpoint_average, the quantization, the model's
hparams.json, problem.json and vocabulary file, and the converter itself (the
source of ctranslate2_export.py and ctranslate2_spec.py, and the ctranslate2
version). A new checkpoint, a retrained or re-averaged one, or a changed
converter gives a new key and a new conversion; old entries stay until removed.

The decode options are not in the key: a CTranslate2 model holds no search
settings (t2t-exporter only records them in export.json), and the engine passes
its own `translate_batch` arguments on every call.

Where: `<model_dir>/ctranslate2_cache/` when the model directory is writable
(`os.access`), else `$XDG_CACHE_HOME/t2t-lite/ctranslate2/` (default
`~/.cache`), where the key also holds the model directory's absolute path. An
entry is converted into a hidden temporary directory beside it and renamed into
place when complete, so a reader sees a whole model or none; of two processes
converting the same key at once, the first rename wins and the other's copy is
discarded.
"""

import hashlib
import json
import os
import shutil
from typing import List, Optional, Tuple

from t2t_lite import atomic, checkpoints
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode.search import SearchParams
from t2t_lite.errors import T2TError
from t2t_lite.export import ctranslate2_export, ctranslate2_spec

CACHE_SUBDIR = "ctranslate2_cache"  # inside a writable model directory
TMP_PREFIX = ".tmp-ct2-"            # a conversion in progress (not an entry)
KEY_FORMAT = 1                      # bumped if the key's contents change meaning


def cache_root(model_dir: str) -> Tuple[str, bool]:
    """(the directory holding `model_dir`'s cached conversions, whether it is beside the
    model): `<model_dir>/ctranslate2_cache` if the model directory is writable, else
    the user's cache directory."""
    beside = os.path.join(model_dir, CACHE_SUBDIR)
    if os.path.isdir(beside):
        if os.access(beside, os.W_OK | os.X_OK):
            return beside, True
    elif os.access(model_dir, os.W_OK | os.X_OK):
        return beside, True
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "t2t-lite", "ctranslate2"), False


def _file_identity(path: str) -> List:
    stat = os.stat(path)
    return [os.path.basename(path), stat.st_size, stat.st_mtime_ns]


def _checkpoint_files(prefix: str) -> List[str]:
    directory, name = os.path.split(prefix)
    return sorted(os.path.join(directory, f) for f in os.listdir(directory or ".")
                  if f == name + ".index" or f.startswith(name + ".data-"))


def _converter_identity() -> str:
    import ctranslate2

    digest = hashlib.sha256(ctranslate2.__version__.encode())
    for module in (ctranslate2_export, ctranslate2_spec):
        with open(module.__file__, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def conversion_key(model_dir: str, used: List[str], checkpoint_average: int,
                   quantization: str, absolute: bool = False) -> str:
    """The cache entry's name for converting the checkpoints `used` of `model_dir`:
    "<last checkpoint>-avg<N>-<quantization>-<16 hex digits of the key's hash>".

    Args:
      absolute: also key on `model_dir`'s absolute path (a cache shared by models).
    """
    model_files = [model_dir_lib.file_path(model_dir, name)
                   for name in (model_dir_lib.HPARAMS_FILE, model_dir_lib.PROBLEM_FILE)]
    key = {"format": KEY_FORMAT, "average": checkpoint_average, "quantization": quantization,
           "checkpoints": [[_file_identity(f) for f in _checkpoint_files(p)] for p in used],
           "model": [_file_identity(f) for f in model_files if os.path.exists(f)],
           "vocab": _file_identity(model_dir_lib.vocab_path(model_dir)),
           "converter": _converter_identity()}
    for path in model_files:
        if os.path.exists(path):
            with open(path, "rb") as f:
                key[os.path.basename(path)] = hashlib.sha256(f.read()).hexdigest()
    if absolute:
        key["model_dir"] = os.path.abspath(model_dir)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return f"{os.path.basename(used[-1])}-avg{checkpoint_average}-{quantization}-{digest}"


def cached_conversion(model_dir: str, checkpoint_path: Optional[str] = None,
                      checkpoint_average: int = 1, quantization: str = "float32",
                      tree_constraint: bool = True) -> Tuple[str, List[str]]:
    """The path of `model_dir`'s CTranslate2 model for these checkpoints, converting
    it (with `ctranslate2_export.export_ctranslate2`) only if no entry has its key.

    Args:
      model_dir: a model directory written by t2t-trainer or t2t-avg-checkpoints.
      checkpoint_path: a `ckpt-N` prefix (default: the latest).
      checkpoint_average: average the last N checkpoints (up to the chosen one).
      quantization: the weights' type (`ctranslate2_export.QUANTIZATIONS`).
      tree_constraint: as --decode_hparams' (a constrained problem is refused if True).

    Returns:
      (the entry's path, the checkpoint prefixes it was converted from).

    Raises:
      T2TError: the exporter's errors (ctranslate2 missing, unknown quantization, a
        model or problem CTranslate2 cannot represent, no checkpoint), or an
        unwritable cache directory.
    """
    ctranslate2_export.require_ctranslate2()
    ctranslate2_export.check_quantization(quantization)
    model_dir_lib.require_dir(model_dir)
    if tree_constraint:  # checked on every call: an entry may come from tree_constraint=false
        ctranslate2_export.check_problem(model_dir_lib.problem_of(model_dir),
                                         SearchParams(), model_dir_lib.load_vocab(model_dir))
    used = checkpoints.select_checkpoints(model_dir, checkpoint_path or "", checkpoint_average)
    root, beside = cache_root(model_dir)
    path = os.path.join(root, conversion_key(model_dir, used, checkpoint_average, quantization,
                                             absolute=not beside))
    if os.path.isdir(path):
        return path, used
    try:
        os.makedirs(root, exist_ok=True)
        atomic.remove_stale(root, TMP_PREFIX)
        tmp = atomic.make_temp_dir(root, TMP_PREFIX)
    except OSError as e:
        raise T2TError(f"Cannot write the CTranslate2 cache {root!r}: {e.strerror}.") from None
    try:
        params = SearchParams(tree_constraint=tree_constraint)
        version = ctranslate2_export.export_ctranslate2(
            model_dir, os.path.join(tmp, "export"), params, used[-1], checkpoint_average,
            quantization)
        try:
            os.rename(version, path)  # atomic; fails if another process got there first
        except OSError:
            if not os.path.isdir(path):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path, used
