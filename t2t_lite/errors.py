"""The one exception type for mistakes a user can make and fix."""

import difflib
from typing import Iterable


class T2TError(Exception):
    """A user-facing error: bad names, malformed overrides, missing or corrupt files.

    Command-line programs print its message on one line and exit non-zero,
    without a traceback. Library code raises it whenever the fix is in the
    user's hands (a flag, a file, a name), never for internal bugs.
    """


def did_you_mean(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """Returns ' Did you mean 'a' or 'b'?' for the close matches, or ''."""
    matches = difflib.get_close_matches(name, sorted(candidates), n=n, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
