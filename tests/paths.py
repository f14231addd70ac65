"""Where the repository and ../shared/data are, for tests in any folder under tests/."""

import importlib
import importlib.util
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# tensor2tensor 1.15.7's own model and outputs (see its README), for the importer's tests.
T2T_REFERENCE = REPO_ROOT.parent / "shared" / "t2t-reference"


def _on_sys_path(folder: str) -> None:
    """`folder` (bench/ or recipes/) on sys.path, as when one of its scripts runs (the
    script's parts' packages import: bench/load/ for bench/http_load.py,
    recipes/multi30k/ for recipes/multi30k_ende.py)."""
    path = str(REPO_ROOT / folder)
    if path not in sys.path:
        sys.path.append(path)


def _script_module(folder: str, name: str):
    """<folder>/<name>.py imported by path (bench/ and recipes/ are not packages)."""
    _on_sys_path(folder)
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_part(name: str):
    """A module of a bench script's parts, e.g. "load.client" (bench/load/client.py)."""
    _on_sys_path("bench")
    return importlib.import_module(name)


def bench_module(name: str):
    """bench/<name>.py imported by path."""
    return _script_module("bench", name)


def recipe_part(name: str):
    """A module of a recipe's parts, e.g. "multi30k.commands" (recipes/multi30k/commands.py)."""
    _on_sys_path("recipes")
    return importlib.import_module(name)


def recipe_module(name: str):
    """recipes/<name>.py imported by path."""
    return _script_module("recipes", name)
