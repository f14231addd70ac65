"""Where the repository and ../shared/data are, for tests in any folder under tests/."""

import importlib
import importlib.util
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# tensor2tensor 1.15.7's own model and outputs (see its README), for the importer's tests.
T2T_REFERENCE = REPO_ROOT.parent / "shared" / "t2t-reference"


def _bench_on_sys_path() -> None:
    """bench/ on sys.path, as when a bench script runs (its parts' packages, e.g.
    bench/load/ for bench/http_load.py, import)."""
    bench = str(REPO_ROOT / "bench")
    if bench not in sys.path:
        sys.path.append(bench)


def bench_part(name: str):
    """A module of a bench script's parts, e.g. "load.client" (bench/load/client.py)."""
    _bench_on_sys_path()
    return importlib.import_module(name)


def bench_module(name: str):
    """bench/<name>.py imported by path (bench/ is not a package)."""
    _bench_on_sys_path()
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
