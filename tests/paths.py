"""Where the repository and ../shared/data are, for tests in any folder under tests/."""

import pathlib

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
