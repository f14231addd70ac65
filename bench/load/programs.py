"""How the HTTP load benchmark runs t2t-lite's programs, and how it fails."""

import sys
from typing import List


class BenchError(Exception):
    """The benchmark cannot run (bad flags, a program failed); told in one line."""


def program(name: str) -> List[str]:
    """The command that runs a t2t-lite program with this interpreter."""
    return [sys.executable, "-m", f"t2t_lite.bin.{name}"]
