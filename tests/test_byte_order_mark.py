"""One rule for a UTF-8 byte-order mark and Windows line ends, in every reader.

A file saved by Excel or Notepad starts with U+FEFF (EF BB BF) and ends its
lines with "\\r\\n": it reads as the same lines as its plain Unix copy, and each
file whose mark was removed is said in one line (datagen's log, the decoder's
and t2t-bleu's stderr). A U+FEFF after the start is text.
"""

import argparse
import io

import pytest

from t2t_lite import textio
from t2t_lite.bin import t2t_bleu, t2t_decoder
from t2t_lite.data import files_problem
from t2t_lite.data.files_problem import parse_corpus_spec
from t2t_lite.errors import T2TError

BOM = b"\xef\xbb\xbf"


def note_of(path):
    return f"{path}: removed the UTF-8 byte-order mark (U+FEFF) at its start."


def test_the_mark_is_removed_once_with_a_note_and_a_later_one_is_text(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(BOM + "Haus\r\n\ufeffBaum\r\n".encode("utf-8"))
    notes = []
    assert textio.read_lines(path, strip="newline", note=notes.append) == ["Haus", "\ufeffBaum"]
    assert notes == [note_of(path)]
    assert textio.read_lines(path, strip="trailing_whitespace") == ["Haus", "\ufeffBaum"]
    assert textio.count_lines(path) == 2
    assert textio.read_stream_lines(io.BytesIO(path.read_bytes()), "standard input",
                                    strip="newline", note=notes.append) == ["Haus", "\ufeffBaum"]
    assert notes == [note_of(path), note_of("standard input")]


def test_a_bad_byte_after_the_mark_names_its_real_file_offset(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(BOM + b"ab\xff\n")
    with pytest.raises(T2TError) as e:
        textio.read_lines(path, strip="newline")
    assert str(e.value).startswith(f"{path}, line 1: not valid UTF-8 (byte 0xff at file offset 5:")


def test_datagen_reads_marked_windows_files_as_their_unix_copies(tmp_path):
    """A TSV and the source side of aligned files, each with a mark and CRLF."""
    tsv = tmp_path / "c.tsv"
    tsv.write_bytes(BOM + b"eins\tone\r\nzwei\ttwo\r\n")
    source, target = tmp_path / "d.de", tmp_path / "d.en"
    source.write_bytes(BOM + b"drei\r\nvier\r\n")
    target.write_bytes(b"three\nfour\n")
    logged = []
    corpora = [parse_corpus_spec(str(tsv), "-"), parse_corpus_spec(f"{source},{target}", "-")]
    definition = files_problem.make_definition("translate_xy_bom", "x", "y", corpora,
                                               corpora[1], None, 500, log=logged.append)
    # d.de is train and dev: read twice, said once.
    assert logged == [note_of(tsv), note_of(source),
                      f"Warning: {source} is both a train and a dev file: dev scores will be "
                      "measured on training data."]
    assert [c.pairs for c in definition.train] == [2, 2]
    assert [list(c.pairs()) for c in corpora] == [[("eins", "one"), ("zwei", "two")],
                                                  [("drei", "three"), ("vier", "four")]]


def test_decode_from_file_removes_the_mark_and_says_so(tmp_path, capsys):
    path = tmp_path / "in.de"
    path.write_bytes(BOM + b"ein Haus\r\nzwei\n")
    args = argparse.Namespace(decode_from_file=str(path))
    assert t2t_decoder._read_input(args) == ["ein Haus", "zwei"]
    assert capsys.readouterr().err == note_of(path) + "\n"


def test_t2t_bleu_scores_a_marked_file_as_its_copy_and_says_so(tmp_path, capsys):
    hypothesis, reference = tmp_path / "hyp.de", tmp_path / "ref.de"
    hypothesis.write_bytes(BOM + b"ein Haus ist hier und da\r\n")
    reference.write_bytes(b"ein Haus ist hier und da\n")
    assert t2t_bleu.main([f"--translation={hypothesis}", f"--reference={reference}",
                          "--score_only"]) == 0
    out, err = capsys.readouterr()
    assert out == "100.00\n"  # sacreBLEU's own command line keeps the mark: 75.98
    assert err == note_of(hypothesis) + "\n"
