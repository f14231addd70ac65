"""What every command-line program shares: quiet TensorFlow, one-line errors, exit codes."""

import argparse
import os
import sys
from typing import Callable, List

from t2t_lite.errors import T2TError

__all__ = ["ArgumentParser", "T2TError", "main", "require"]


class ArgumentParser(argparse.ArgumentParser):
    """argparse with tensor2tensor's `--flag=value` style; unknown flags are errors."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(**kwargs)


def require(parser: argparse.ArgumentParser, args: argparse.Namespace, names: List[str]) -> None:
    """Exits with a usage error naming the missing flags."""
    missing = [f"--{n}" for n in names if getattr(args, n) in (None, "")]
    if missing:
        parser.error(f"missing required flag(s): {', '.join(missing)}")


def quiet_tensorflow() -> None:
    """Silences TensorFlow's C++ and Python log lines so users see the program's own output.

    Must run before tensorflow is imported.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("ABSL_MIN_LOG_LEVEL", "3")


def main(prog: str, run: Callable[[], int]) -> int:
    """Runs `run()`; a `T2TError` becomes one line `prog: error: ...` and exit code 1."""
    quiet_tensorflow()
    try:
        return run()
    except T2TError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `t2t-decoder ... | head`
        return 0
