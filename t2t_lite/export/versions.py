"""Numbered export versions written atomically (TF Serving's directory layout).

TF Serving (and CTranslate2 users following the same convention) look only at
subdirectories of the export base named by an integer. A version is written in
full into a hidden temporary directory inside the base and renamed to its number
when complete: a reader polling the base never sees a half-written version, and
a writer killed midway leaves only a hidden `.tmp-export-<pid>@<host>@*`
directory, which no server loads. The next export on the same host removes
those of writers that are gone (`t2t_lite.atomic.remove_stale`); one of a
writer still running, or of another host, is left alone.
"""

import json
import os
import shutil
from typing import Callable

from t2t_lite import atomic
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.errors import T2TError

TMP_PREFIX = ".tmp-export-"  # not an integer: never a version


def next_version(export_dir: str) -> int:
    """1 + the largest integer-named subdirectory of `export_dir` (1 if none)."""
    versions = [int(name) for name in os.listdir(export_dir)
                if name.isascii() and name.isdigit()
                and os.path.isdir(os.path.join(export_dir, name))]
    return max(versions, default=0) + 1


def prepare_export_dir(export_dir: str) -> None:
    """Creates `export_dir` if missing; refuses an unwritable one in one line."""
    try:
        os.makedirs(export_dir, exist_ok=True)
    except OSError as e:
        raise T2TError(f"Cannot create export directory {export_dir!r}: {e.strerror}.") from None
    if not os.access(export_dir, os.W_OK | os.X_OK):
        raise T2TError(f"Export directory {export_dir!r} is not writable.")


def write_version(export_dir: str, write: Callable[[str], None]) -> str:
    """Calls `write(tmp_dir)` to fill a new version, then renames it to the next number.

    The temporary directories of killed exports are removed first.

    Args:
      export_dir: the base directory of versions (created if missing).
      write: fills the (existing, empty) directory it is given.

    Returns:
      The path of the new version, e.g. `export_dir/3`.

    Raises:
      T2TError: the base cannot be created or written.
    """
    prepare_export_dir(export_dir)
    atomic.remove_stale(export_dir, TMP_PREFIX)
    tmp = atomic.make_temp_dir(export_dir, TMP_PREFIX)
    try:
        write(tmp)
        while True:
            path = os.path.join(export_dir, str(next_version(export_dir)))
            try:
                os.rename(tmp, path)  # atomic; fails if another export took the number
                return path
            except OSError:
                if not os.path.exists(path):
                    raise
    except OSError as e:
        raise T2TError(f"Cannot write the export to {export_dir!r}: {e.strerror or e}.") from None
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def write_provenance(model_dir: model_dir_lib.ModelDir, path: str, info: dict,
                     subdir: str = "assets.extra") -> None:
    """Writes `model_dir`'s hparams.json and problem.json (the bytes it read), the
    record of where an imported model came from (t2t_import.json, marian_import.json)
    if it has one, and `info` as export.json, into `path/subdir` (TF Serving's place
    for files it ignores)."""
    extra = os.path.join(path, subdir)
    os.makedirs(extra, exist_ok=True)
    for name in (model_dir_lib.HPARAMS_FILE, model_dir_lib.PROBLEM_FILE,
                 model_dir_lib.IMPORT_FILE, model_dir_lib.MARIAN_FILE):
        if model_dir.raw(name) is not None:
            with open(os.path.join(extra, name), "wb") as f:
                f.write(model_dir.raw(name))
    with open(os.path.join(extra, "export.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
