"""Where the repository and ../shared/data are, for tests in any folder under tests/."""

import importlib.util
import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# tensor2tensor 1.15.7's own model and outputs (see its README), for the importer's tests.
T2T_REFERENCE = REPO_ROOT.parent / "shared" / "t2t-reference"


def bench_module(name: str):
    """bench/<name>.py imported by path (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
