"""Reading UTF-8 text files line by line, with one set of error messages.

Every line-oriented text file the project reads goes through here: raw
parallel text (datagen), files to decode or score, BLEU's translations and
references, EVALB's tree files.

  - Lines are separated by "\\n" only: not by a lone "\\r", nor by Unicode
    separators such as U+2028 (which `str.splitlines` would split on). A final
    "\\n" does not start another line; an empty file has no lines.
  - A UTF-8 byte-order mark (the bytes EF BB BF, U+FEFF, which Excel and
    Notepad write) at the very start of a file is removed, and the caller's
    `note` (if given) receives one line saying so (`bom_note`); a U+FEFF
    anywhere else is text. With "\\r\\n" line ends removed too, a file saved
    on Windows reads as the same lines as its Unix copy.
  - What is removed from each line is the caller's explicit choice, `strip`:
      "newline": only the line end, "\\n" and one "\\r" before it ("\\r\\n"
        files; also a "\\r" ending an unterminated last line). Everything else,
        trailing spaces and TABs included, is kept as written.
      "trailing_whitespace": all trailing whitespace (`str.rstrip()`), as
        sacreBLEU's command line reads translations and references.
  - Mistakes are `T2TError`s in one format:
      "Cannot read {path}: the file does not exist." (or the system's reason,
        e.g. "Is a directory.");
      "{path}, line {n}: not valid UTF-8 (byte 0x.. at file offset {k}:
        {reason}); convert the file (e.g. iconv -c -f utf-8 -t utf-8) and re-run."
    Nothing is replaced or skipped silently.

A file whose name ends in ".gz" is read through gzip (corpora usually come
compressed); a damaged one is "Cannot read {path}: not a valid gzip file (...)."

Pure Python (no TensorFlow), so light modules such as the EVALB reader can
import it.
"""

import gzip
import os
import zlib
from typing import BinaryIO, Callable, Iterator, List, Optional, Union

from t2t_lite.errors import T2TError

PathLike = Union[str, "os.PathLike[str]"]
STRIP_MODES = ("newline", "trailing_whitespace")
BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8
Note = Optional[Callable[[str], None]]


def bom_note(name: PathLike) -> str:
    """The line a reader's `note` receives when `name` started with a byte-order mark."""
    return f"{name}: removed the UTF-8 byte-order mark (U+FEFF) at its start."


# Reading a damaged gzip stream raises these (a bad header, a truncated or
# corrupt body); each becomes one T2TError naming the file.
_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


def _open(path: PathLike) -> BinaryIO:
    """Opens `path` for reading bytes; a name ending in ".gz" is decompressed."""
    try:
        if os.fspath(path).endswith(".gz"):
            return gzip.open(path, "rb")
        return open(path, "rb")
    except FileNotFoundError:
        raise T2TError(f"Cannot read {path}: the file does not exist.") from None
    except OSError as e:
        raise T2TError(f"Cannot read {path}: {e.strerror}.") from None


def _gzip_error(path: PathLike, error: BaseException) -> T2TError:
    return T2TError(f"Cannot read {path}: not a valid gzip file ({error or type(error).__name__}).")


def _lines(path: PathLike, strip: str, note: Note) -> Iterator[str]:
    with _open(path) as f:
        try:
            yield from _stream_lines(f, path, strip, note)
        except _GZIP_ERRORS as e:
            raise _gzip_error(path, e) from None
        except IsADirectoryError:
            raise T2TError(f"Cannot read {path}: Is a directory.") from None


def _stream_lines(f: BinaryIO, name: PathLike, strip: str, note: Note) -> Iterator[str]:
    offset = 0  # of the current line's first byte in the file
    for number, raw in enumerate(f, start=1):
        size = len(raw)
        if number == 1 and raw.startswith(BOM):
            raw, offset = raw[len(BOM):], len(BOM)
            size -= len(BOM)
            if note is not None:
                note(bom_note(name))
        raw = raw[:-1] if raw.endswith(b"\n") else raw
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise T2TError(
                f"{name}, line {number}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at "
                f"file offset {offset + e.start}: {e.reason}); convert the file "
                "(e.g. iconv -c -f utf-8 -t utf-8) and re-run.") from None
        yield line.rstrip() if strip == "trailing_whitespace" else line
        offset += size


def iter_lines(path: PathLike, *, strip: str, note: Note = None) -> Iterator[str]:
    """Yields the lines of a UTF-8 text file one at a time (the file is not read whole).

    Args:
      path: the file.
      strip: "newline" (remove only the line end, "\\n" or "\\r\\n") or
        "trailing_whitespace" (remove all trailing whitespace, as sacreBLEU's
        command line does); see the module docstring.
      note: called with `bom_note(path)` when a byte-order mark was removed.

    Raises:
      ValueError: an unknown `strip` (at once).
      T2TError: while iterating: the file does not exist or cannot be read, or
        a line is not valid UTF-8 (naming the file, line number and byte).
    """
    _check_strip(strip)
    return _lines(path, strip, note)


def _check_strip(strip: str) -> None:
    if strip not in STRIP_MODES:
        raise ValueError(f"Unknown strip {strip!r}; expected one of {', '.join(STRIP_MODES)}.")


def read_lines(path: PathLike, *, strip: str, note: Note = None) -> List[str]:
    """All lines of a UTF-8 text file as a list; as `iter_lines` (errors raised here)."""
    return list(iter_lines(path, strip=strip, note=note))


def read_stream_lines(stream: BinaryIO, name: str, *, strip: str, note: Note = None) -> List[str]:
    """All lines of an open binary stream (e.g. `sys.stdin.buffer`), by the same
    rules as `read_lines`; errors and the note name the stream as `name` (e.g.
    "standard input")."""
    _check_strip(strip)
    return list(_stream_lines(stream, name, strip, note))


def count_lines(path: PathLike) -> int:
    """The number of lines `iter_lines` yields for `path`, counted without decoding.

    Raises:
      T2TError: the file does not exist or cannot be read.
    """
    count, last = 0, b"\n"
    with _open(path) as f:
        try:
            for block in iter(lambda: f.read(1 << 20), b""):
                count += block.count(b"\n")
                last = block[-1:]
        except _GZIP_ERRORS as e:
            raise _gzip_error(path, e) from None
        except IsADirectoryError:
            raise T2TError(f"Cannot read {path}: Is a directory.") from None
    return count + (last != b"\n")  # a last line without "\n" still counts
