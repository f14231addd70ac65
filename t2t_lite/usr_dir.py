"""--usr_dir: a user's own problems and hparams sets, from a directory outside the package.

As tensor2tensor's `--t2t_usr_dir` and fairseq's `--user-dir`: the directory
is imported as a Python package (its parent goes on `sys.path`, its
`__init__.py` imports the modules that call `@register_problem` /
`@register_hparams`), once per process. An entry whose name a built-in
already has replaces the built-in, said in one line (`t2t_lite.registry`).

A model directory trained with one records it (`usr_dir.json`: path, a
SHA-256 of its Python files, the names it registered) but never imports code
by itself: programs that read the model take `--usr_dir` again, at any path (a
copy, a symlink, another machine). A model whose problem came from a user
directory is refused in one line when the directory given does not register
that problem (`check_model`); one at another path or with other Python files
than the training run's is said in one line. Exported models need no user
directory.
"""

import dataclasses
import hashlib
import importlib
import json
import os
import sys
from typing import Dict, Optional

from t2t_lite import atomic, registry
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import hook, locate

USR_DIR_FILE = "usr_dir.json"


@dataclasses.dataclass(frozen=True)
class UsrDir:
    """An imported user directory."""

    path: str      # absolute
    sha256: str    # of its Python files (`python_files_sha256`)


_imported: Optional[UsrDir] = None  # the one imported in this process, if any


def imported() -> Optional[UsrDir]:
    """The user directory this process imported, or None."""
    return _imported


def python_files_sha256(path: str) -> str:
    """SHA-256 over the relative names and bytes of every `*.py` file under `path`."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".py")):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode("utf-8") + b"\0")
            with open(full, "rb") as f:
                digest.update(f.read() + b"\0")
    return digest.hexdigest()


def import_usr_dir(path: Optional[str]) -> Optional[UsrDir]:
    """Imports the user directory `path` (None or "": nothing) and returns it.

    A second, different user directory in one process (programs run in-process,
    e.g. by tests) is imported too; its entries replace the first one's.

    Raises:
      T2TError: not a directory, no `__init__.py`, or an import that fails
        (naming the file, line and the error's last line).
    """
    global _imported
    if not path:
        return None
    path = os.path.abspath(os.path.expanduser(path))
    if _imported is not None and _imported.path == path:
        return _imported
    if not os.path.isdir(path):
        raise T2TError(f"--usr_dir={path}: not a directory.")
    if not os.path.isfile(os.path.join(path, "__init__.py")):
        raise T2TError(f"--usr_dir={path} has no __init__.py: it is imported as a Python "
                       "package, whose __init__.py imports the modules that register problems "
                       "and hparams sets.")
    parent, package = os.path.split(path)
    if not package.isidentifier():
        raise T2TError(f"--usr_dir={path}: {package!r} is not a Python package name (letters, "
                       "digits and _, not starting with a digit).")
    _forget_other_module(package, path)
    registry.discover_all()  # built-ins first: a user's entry of the same name replaces them
    usr_dir = UsrDir(path, python_files_sha256(path))
    hook.install(path)  # `import tensor2tensor...` answered from now on
    sys.path.insert(0, parent)
    try:
        with registry.user_code(path):
            importlib.import_module(package)
    except T2TError:
        raise
    except Exception as e:  # the user's code: any error, told in one line
        raise T2TError(f"--usr_dir={path} failed to import: {locate.in_directory(e, path)}") from None
    finally:
        sys.path.remove(parent)
    _imported = usr_dir
    return usr_dir


def _forget_other_module(package: str, path: str) -> None:
    """Drops an already imported module of the same name from elsewhere (e.g. a
    tests' earlier user directory), so that `path` is imported, not it."""
    module = sys.modules.get(package)
    if module is not None and os.path.dirname(getattr(module, "__file__", "") or "") != path:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]


def record(model_dir: str, problem_name: str, hparams_set: Optional[str]) -> None:
    """Writes `usr_dir.json` into a new model directory when this process imported
    a user directory: its path, hash and which of the run's names it provided."""
    if _imported is None:
        return
    provided = {"problem": registry.problem_origin(problem_name) == _imported.path,
                "hparams_set": bool(hparams_set) and hparams_set in registry.list_hparams()
                and registry.hparams_origin(hparams_set) == _imported.path}
    text = json.dumps({"path": _imported.path, "sha256": _imported.sha256,
                       "problem": problem_name if provided["problem"] else None,
                       "hparams_set": hparams_set if provided["hparams_set"] else None},
                      indent=2)
    atomic.write_text(os.path.join(model_dir, USR_DIR_FILE), text + "\n")


def check_record(value, path: str) -> Dict:
    """`value`, a parsed usr_dir.json (`record`), if it is one; T2TError naming `path`."""
    if not isinstance(value, dict) or not {"path", "sha256", "problem"} <= set(value):
        raise T2TError(f"Corrupt {path}: missing keys")
    return value


def check_model(model_dir: str, recorded: Optional[Dict], note=registry.note) -> None:
    """Refuses the model in `model_dir`, whose usr_dir.json holds `recorded` (None:
    none), when its problem came from a user directory and the one given (at any
    path: a copy, a symlink, another machine) does not register that problem;
    says in one line when the given directory's path or Python files differ from
    the training run's.

    Raises:
      T2TError: the model's problem is a user directory's, and this process imported
        none, or one that does not register it.
    """
    if recorded is None:
        return
    problem = recorded["problem"]
    if problem and (_imported is None or problem not in registry.list_problems()
                    or registry.problem_origin(problem) != _imported.path):
        given = (f" (--usr_dir={_imported.path} does not register it)" if _imported else "")
        raise T2TError(f"{model_dir} was trained on problem {problem!r} of "
                       f"--usr_dir={recorded['path']}: pass --usr_dir with a directory that "
                       f"registers it{given}.")
    if _imported is None:
        return
    moved = os.path.realpath(_imported.path) != os.path.realpath(recorded["path"])
    changed = _imported.sha256 != recorded["sha256"]
    given = f"--usr_dir={_imported.path}"
    if moved:
        files = ("other Python files (SHA-256): its problems and hparams sets may have changed"
                 if changed else "the same Python files (SHA-256)")
        note(f"{given}: {model_dir} was trained with --usr_dir={recorded['path']}; this one "
             f"has {files}.")
    elif changed:
        note(f"{given}: its Python files differ from the ones {model_dir} was trained with; "
             "its problems and hparams sets may have changed.")
