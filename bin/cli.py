"""What every command-line program shares: quiet TensorFlow, one-line errors, exit codes."""

import argparse
import contextlib
import faulthandler
import os
import re
import sys
import threading
from typing import Callable, Iterator, List

from t2t_lite.errors import T2TError

__all__ = ["ArgumentParser", "HelpFormatter", "T2TError", "add_engine_flags",
           "check_engine_flags", "main", "require"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help names each flag's default, "(default: 100)", unless its help text already
    says it or there is none to name: None or "" (not given), an on/off switch's off."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing_to_name = (action.default in (None, "", argparse.SUPPRESS)
                           or isinstance(action.default, bool) and action.nargs == 0)
        if nothing_to_name or "default" in text.lower():
            return text
        return super()._get_help_string(action)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with tensor2tensor's `--flag=value` style; unknown flags are errors;
    --help names the defaults (`HelpFormatter`)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)


def require(parser: argparse.ArgumentParser, args: argparse.Namespace, names: List[str]) -> None:
    """Exits with a usage error naming the missing flags."""
    missing = [f"--{n}" for n in names if getattr(args, n) in (None, "")]
    if missing:
        parser.error(f"missing required flag(s): {', '.join(missing)}")


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
    """--engine and --quantization, as t2t-decoder and t2t-server spell them."""
    parser.add_argument("--engine", default="tensorflow", choices=["tensorflow", "ctranslate2"],
                        help="ctranslate2: convert the model once (cached beside it) and "
                             "translate with CTranslate2 (pip install -e '.[ctranslate2]')")
    parser.add_argument("--quantization", default=None,
                        help="--engine=ctranslate2: the converted weights' type (float32, int8, "
                             "...)")


def check_engine_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exits with a usage error for --quantization without --engine=ctranslate2."""
    if args.quantization is not None and args.engine != "ctranslate2":
        parser.error("--quantization applies to --engine=ctranslate2 only")


# TensorFlow 2.21's native start-up and run-time notes (absl "I0000 ..." lines,
# oneDNN, CUDA stubs, CPU features, SentencePiece's normalizer) ignore
# TF_CPP_MIN_LOG_LEVEL for the lines printed before logging is set up.
_NATIVE_NOISE = re.compile(
    rb"^([IWE]\d{4} |WARNING: All log messages before absl|To enable the following instructions"
    rb"|normalizer\.cc|.*cuda_executor|.*cuInit)")


@contextlib.contextmanager
def filtered_native_stderr() -> Iterator[None]:
    """Passes native (C++) stderr through a filter that drops TensorFlow's noise lines.

    File descriptor 2 becomes a pipe read by a thread that forwards, in real
    time, every line that is not known noise; Python's `sys.stderr` writes to
    the real stderr directly, so the program's own messages are never delayed.
    Where `faulthandler` is on (`python -X faulthandler`, PYTHONFAULTHANDLER),
    it writes to the real stderr too: a crash's stack written into the pipe
    would die with the thread that forwards it.
    """
    sys.stderr.flush()
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    python_stderr = sys.stderr
    sys.stderr = os.fdopen(os.dup(real), "w", buffering=1, encoding="utf-8", errors="replace")
    if faulthandler.is_enabled():  # on fd 2, where `python -X faulthandler` puts it
        faulthandler.enable(real)

    def forward():
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if line.strip() and not _NATIVE_NOISE.match(line):
                    os.write(real, line)

    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # closes the pipe's last write end: the thread sees EOF
        thread.join(timeout=5)
        if faulthandler.is_enabled():
            faulthandler.enable(2)  # before `real` is closed
        sys.stderr.close()
        sys.stderr = python_stderr
        os.close(real)


def _import_tensorflow() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import absl.logging
    import tensorflow
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
    absl.logging.set_verbosity(absl.logging.ERROR)
    tensorflow.get_logger().setLevel("ERROR")


def main(prog: str, run: Callable[[], int], tensorflow: bool = True) -> int:
    """Runs `run()`; a `T2TError` becomes one line `prog: error: ...` and exit code 1.

    Args:
      tensorflow: the program needs TensorFlow: import it first, quietly.
    """
    try:
        if not tensorflow:
            return run()
        with filtered_native_stderr():
            _import_tensorflow()
            return run()
    except T2TError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `t2t-decoder ... | head`
        return 0


def note(line: str) -> None:
    """Prints a one-line note for the user to stderr (stdout may be the program's output)."""
    print(line, file=sys.stderr, flush=True)
