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
converter gives a new key and a new conversion.

The decode options are not in the key: a CTranslate2 model holds no search
settings (t2t-exporter only records them in export.json), and the engine passes
its own `translate_batch` arguments on every call.

Where: `<model_dir>/ctranslate2_cache/` when the model directory is writable
(`os.access`), else `$XDG_CACHE_HOME/t2t-lite/ctranslate2/<model>-<hash>/`
(default `~/.cache`; one directory per model directory, named after its
absolute path, which the key also holds). An entry is converted into a hidden
temporary directory beside it and renamed into place when complete, so a reader
sees a whole model or none; of two processes converting the same key at once,
the first rename wins and the other's copy is discarded.

Bounded: a watching server (`t2t-server --watch`) converts every new
checkpoint, so each new entry deletes the model's older ones (`evict`). Every
use stamps its entry (the directory's modification time), and a model keeps
its `KEEP_ENTRIES` most recently used entries, the one just made, and any used
in the last `IN_USE_S` seconds: a process that was just handed an entry may
still be loading it. Once loaded, deleting it is harmless: CTranslate2 reads
the model's files into memory when a translator is made (ctranslate2 4.8.5: a
`Translator` keeps translating after its directory is deleted), as does the
SentencePiece tokenizer. An entry is deleted by renaming it to a hidden
`.deleting-*` name first (atomic), so a reader finds a whole entry or none,
never part of one; a process killed while deleting leaves that hidden directory,
and the next conversion removes it.
"""

import hashlib
import json
import os
import shutil
import stat
import time
from typing import List, Optional, Tuple

from t2t_lite import atomic, checkpoints
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode.search import SearchParams
from t2t_lite.errors import T2TError
from t2t_lite.export import ctranslate2_export, ctranslate2_spec

CACHE_SUBDIR = "ctranslate2_cache"  # inside a writable model directory
TMP_PREFIX = ".tmp-ct2-"            # a conversion in progress (not an entry)
DELETING_PREFIX = ".deleting-"      # an entry being deleted (not an entry)
KEY_FORMAT = 1                      # bumped if the key's contents change meaning
KEEP_ENTRIES = 3                    # a model's most recently used entries kept
IN_USE_S = 60.0                     # an entry used this recently may be loading: kept


def cache_root(model_dir: str) -> Tuple[str, bool]:
    """(the directory holding `model_dir`'s cached conversions, whether it is beside the
    model): `<model_dir>/ctranslate2_cache` if the model directory is writable, else
    the model's own directory in the user's cache (`user_cache_dir`)."""
    beside = os.path.join(model_dir, CACHE_SUBDIR)
    if os.path.isdir(beside):
        if os.access(beside, os.W_OK | os.X_OK):
            return beside, True
    elif os.access(model_dir, os.W_OK | os.X_OK):
        return beside, True
    return user_cache_dir(model_dir), False


def user_cache_dir(model_dir: str) -> str:
    """`$XDG_CACHE_HOME/t2t-lite/ctranslate2/<name>-<hash>` (default `~/.cache`): the
    entries of the model directory `model_dir` when it is not writable.

    One directory per model directory (its name and 12 hex digits of its absolute
    path's SHA-256), so that the bound on entries (`evict`) is per model: the
    conversions of one model never delete another's.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    absolute = os.path.abspath(model_dir)
    tag = hashlib.sha256(absolute.encode()).hexdigest()[:12]
    return os.path.join(base, "t2t-lite", "ctranslate2",
                        f"{os.path.basename(absolute) or 'model'}-{tag}")


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


def conversion_key(model_dir: model_dir_lib.ModelDir, used: List[str], checkpoint_average: int,
                   quantization: str, absolute: bool = False) -> str:
    """The cache entry's name for converting the checkpoints `used` of `model_dir`:
    "<last checkpoint>-avg<N>-<quantization>-<16 hex digits of the key's hash>".

    Args:
      absolute: also key on `model_dir`'s absolute path (a cache shared by models).
    """
    names = (model_dir_lib.HPARAMS_FILE, model_dir_lib.PROBLEM_FILE)
    key = {"format": KEY_FORMAT, "average": checkpoint_average, "quantization": quantization,
           "checkpoints": [[_file_identity(f) for f in _checkpoint_files(p)] for p in used],
           "model": [_file_identity(model_dir.file_path(name)) for name in names],
           "vocab": _file_identity(model_dir.vocab_path),
           "converter": _converter_identity()}
    for name in names:  # the bytes read: the key is of the metadata this load used
        key[name] = hashlib.sha256(model_dir.raw(name)).hexdigest()
    if absolute:
        key["model_dir"] = os.path.abspath(model_dir.path)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return f"{os.path.basename(used[-1])}-avg{checkpoint_average}-{quantization}-{digest}"


def cached_conversion(model_dir: model_dir_lib.ModelDir, checkpoint_path: Optional[str] = None,
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
    ctranslate2_export.check_model_dir(model_dir)  # before anything is written
    ctranslate2_export.require_ctranslate2()
    ctranslate2_export.check_quantization(quantization)
    if tree_constraint:  # checked on every call: an entry may come from tree_constraint=false
        ctranslate2_export.check_problem(model_dir.problem(), SearchParams(), model_dir.vocab())
    used = checkpoints.select_checkpoints(model_dir.path, checkpoint_path or "",
                                          checkpoint_average)
    root, beside = cache_root(model_dir.path)
    path = os.path.join(root, conversion_key(model_dir, used, checkpoint_average, quantization,
                                             absolute=not beside))
    if touch(path):
        return path, used
    try:
        os.makedirs(root, exist_ok=True)
        atomic.remove_stale(root, TMP_PREFIX)
        atomic.remove_stale(root, DELETING_PREFIX)
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
    touch(path)
    evict(root, os.path.basename(path))
    return path, used


def touch(path: str) -> bool:
    """Stamps the entry `path` as used now (its directory's modification time, which
    `evict` ranks entries by); whether the entry is there to be used.

    Stamped first, then used: an entry deleted before its stamp is not found here
    (converted again), and one stamped is kept by `evict` for `IN_USE_S` seconds.
    """
    try:
        os.utime(path)
        return True
    except FileNotFoundError:
        return False
    except OSError:  # another user's entry: it keeps its stamp, and may go sooner
        return os.path.isdir(path)


def entries(root: str) -> List[Tuple[int, str]]:
    """(last use in ns since the epoch, name) of each entry of the cache directory
    `root`, most recently used first (a conversion or deletion in progress is hidden,
    not an entry)."""
    found = []
    for name in os.listdir(root):
        if name.startswith("."):
            continue
        try:
            info = os.stat(os.path.join(root, name))
        except OSError:
            continue  # deleted meanwhile by another process
        if stat.S_ISDIR(info.st_mode):
            found.append((info.st_mtime_ns, name))
    return sorted(found, reverse=True)


def evict(root: str, current: str, keep: int = KEEP_ENTRIES,
          in_use_s: float = IN_USE_S) -> List[str]:
    """Deletes the entries of `root` (one model's) beyond its `keep` most recently used.

    Kept whatever their rank: `current` (the entry just made) and every entry used
    in the last `in_use_s` seconds (another process may be loading it; a process
    that has loaded one is not harmed by its deletion, see the module docstring).
    Another process deleting the same entries at once is harmless: each entry is
    deleted by whichever renames it first (`_delete`).

    Returns:
      The names of the entries this call deleted.
    """
    ranked = entries(root)
    recent = time.time_ns() - int(in_use_s * 1e9)
    kept = {current} | {name for _, name in ranked[:keep]}
    return [name for used, name in ranked
            if name not in kept and used < recent and _delete(root, name, recent)]


def _last_used(path: str) -> Optional[int]:
    """The stamp `touch` left on `path` (ns), or None if it is gone."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _delete(root: str, name: str, recent: int) -> bool:
    """Deletes the entry `name` of `root` unless it was used at or after `recent` (ns):
    renamed onto a new empty hidden directory (`.deleting-<pid>@<host>@*`, atomic, so
    a reader finds the whole entry or none), then removed.

    The stamp is read again just before the rename (a process may have been handed
    the entry since `evict` ranked it, while earlier entries were being removed)
    and once more after it: an entry stamped in between is renamed back.

    Returns:
      Whether this call deleted it (False: used since, or gone already, deleted by
      another process).
    """
    entry = os.path.join(root, name)
    used = _last_used(entry)
    if used is None or used >= recent:
        return False
    try:
        aside = atomic.make_temp_dir(root, DELETING_PREFIX)
    except OSError:
        return False  # a cache this process cannot write: nothing can be deleted
    try:
        os.rename(entry, aside)  # replaces the empty directory
    except OSError:
        os.rmdir(aside)
        return False
    if (_last_used(aside) or 0) >= recent:
        try:
            os.rename(aside, entry)
            return False
        except OSError:
            pass  # the key was converted again meanwhile: that copy serves
    shutil.rmtree(aside, ignore_errors=True)
    return True
