"""The one line reader: what each `strip` keeps, line counting, error messages."""

import pytest

from t2t_lite import textio
from t2t_lite.errors import T2TError

TRICKY = "one  \n\tA &amp; B\u00a0\r\nc\u2028d\ne\rf\n\nlast\r".encode("utf-8")


def test_newline_keeps_everything_but_the_line_end(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(TRICKY)
    assert textio.read_lines(path, strip="newline") == [
        "one  ", "\tA &amp; B\u00a0", "c\u2028d", "e\rf", "", "last"]
    assert list(textio.iter_lines(str(path), strip="newline")) == textio.read_lines(
        path, strip="newline")


def test_trailing_whitespace_strips_as_sacrebleu_does(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(TRICKY)
    assert textio.read_lines(path, strip="trailing_whitespace") == [
        "one", "\tA &amp; B", "c\u2028d", "e\rf", "", "last"]


@pytest.mark.parametrize("data, lines", [
    (b"", 0), (b"\n", 1), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\n\n", 2), (TRICKY, 6)])
def test_count_lines_matches_the_reader(tmp_path, data, lines):
    path = tmp_path / "x.txt"
    path.write_bytes(data)
    assert textio.count_lines(path) == lines == len(textio.read_lines(path, strip="newline"))


def test_non_utf8_names_file_line_byte_and_offset(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("ein Haus\nzwei H\u00e4user\n".encode("latin-1"))
    with pytest.raises(T2TError) as e:
        textio.read_lines(path, strip="newline")
    assert str(e.value) == (
        f"{path}, line 2: not valid UTF-8 (byte 0xe4 at file offset 15: invalid continuation "
        "byte); convert the file (e.g. iconv -c -f utf-8 -t utf-8) and re-run.")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(T2TError) as e:
        textio.count_lines(tmp_path / "missing.txt")
    assert str(e.value) == f"Cannot read {tmp_path / 'missing.txt'}: the file does not exist."
    with pytest.raises(T2TError, match="Cannot read .*: Is a directory"):
        textio.read_lines(tmp_path, strip="newline")


def test_unknown_strip_fails_at_once(tmp_path):
    with pytest.raises(ValueError, match="Unknown strip 'all'"):
        textio.iter_lines(tmp_path / "never_opened.txt", strip="all")


def test_a_stream_reads_like_a_file_and_errors_name_it():
    import io
    assert textio.read_stream_lines(io.BytesIO(TRICKY), "standard input", strip="newline") == [
        "one  ", "\tA &amp; B\u00a0", "c\u2028d", "e\rf", "", "last"]
    with pytest.raises(T2TError) as e:
        textio.read_stream_lines(io.BytesIO(b"ok\n\xff\n"), "standard input", strip="newline")
    assert str(e.value).startswith("standard input, line 2: not valid UTF-8 (byte 0xff at file "
                                   "offset 3")
