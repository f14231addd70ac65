"""Multi30k's published data preparation (`t2t_lite.data.lc_norm_tok`) against its files.

The expected values come from the public Multi30k repository (multi30k/dataset,
data/task1/tok/, commit 7bee46bc of 2018-01-17), not from this code: the lines
quoted below are copied from its `*.lc.norm.tok.*` files, and the hashes are
the git blob ids its tree lists for them (`git ls-tree HEAD data/task1/tok/`),
so equal hashes mean byte-identical files. The token count 12,103 is also the
reference length Wu et al. 2021's tokenized BLEU reports for test_2016_flickr.
"""

import hashlib

import pytest

from t2t_lite.data import lc_norm_tok
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.textio import read_lines

# Git blob ids of multi30k/dataset's data/task1/tok/{stem}.lc.norm.tok.{lang}.
MULTI30K_TOK_BLOBS = {
    ("test_2016_flickr", "de"): "d21afb3363f4d61e9fc5ef3044c903b44935d241",
    ("test_2016_flickr", "en"): "3cfeb6d491272cda612d6c22ff4ca428ba2bdd40",
    ("val", "de"): "c6857bc2d0677816724f2b1824716561680a04b2",
    ("val", "en"): "92e57fca89d138f53e63344e060b1537447ee0c2",
}

# (raw line, the line of Multi30k's tok file): lowercase, `&quot;` and `&apos;`
# escaped, hyphens kept inside words, German quotes.
QUOTED = [
    # test_2016_flickr.de, lines 2, 230 and 457
    ("Ein Boston Terrier läuft über saftig-grünes Gras vor einem weißen Zaun.",
     "ein boston terrier läuft über saftig-grünes gras vor einem weißen zaun .", "de"),
    ('Ein Jugendlicher in einem schwarzen T-Shirt mit dem Aufdruck "Asian Pacific 2007" sitzt '
     'und spielt eine Trommel.',
     "ein jugendlicher in einem schwarzen t-shirt mit dem aufdruck &quot; asian pacific 2007 "
     "&quot; sitzt und spielt eine trommel .", "de"),
    ('Eine Frau hält einen großen Scheck für "Kids\' Food Basket".',
     "eine frau hält einen großen scheck für &quot; kids &apos; food basket &quot; .", "de"),
    # test_2016_flickr.en, line 30
    ("One man holds another man's head down and prepares to punch him in the face.",
     "one man holds another man &apos;s head down and prepares to punch him in the face .",
     "en"),
    # val.de, line 656: normalize-punctuation.perl moves a period before a closing quote
    # at the end of a line too (it sees the newline)
    ("Ein Mann in einem blauen Hemd hält ein Schild, auf dem steht: „Come on now ... what's "
     "gayer than tea.“",
     "ein mann in einem blauen hemd hält ein schild , auf dem steht : &quot; come on now ... "
     "what &apos; s gayer than tea &quot; .", "de"),
    # train.de, line 7090 (with its trailing space): ’ not between letters becomes "
    ("Ein Mann mit gelber Krawatte und Hemd macht das „Hook ’em Horns“-Zeichen. ",
     "ein mann mit gelber krawatte und hemd macht das &quot; hook &quot; em horns &quot; "
     "-zeichen .", "de"),
]


def git_blob_id(text: str) -> str:
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("raw, tok, lang", QUOTED, ids=[
    "test.de:2", "test.de:230", "test.de:457", "test.en:30", "val.de:656", "train.de:7090"])
def test_a_line_is_prepared_as_multi30k_tok_files_hold_it(raw, tok, lang):
    assert lc_norm_tok.lc_norm_tok(raw, lang) == tok


@pytest.mark.parametrize("stem, lang", sorted(MULTI30K_TOK_BLOBS))
def test_the_prepared_file_is_multi30ks_tok_file_byte_for_byte(shared_data, stem, lang):
    raw = read_lines(shared_data / "multi30k" / f"{stem}.{lang}", strip="newline")
    prepared = "".join(lc_norm_tok.lc_norm_tok(line, lang) + "\n" for line in raw)
    assert git_blob_id(prepared) == MULTI30K_TOK_BLOBS[stem, lang]


def test_prepared_test_2016_flickr_de_has_their_reference_length(shared_data, tmp_path):
    target = tmp_path / "test_2016_flickr.de"
    counts = lc_norm_tok.prepare_file(str(shared_data / "multi30k" / "test_2016_flickr.de"),
                                      str(target), "de")
    assert counts == (1000, 12103)
    lines = target.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 1001 and lines[-1] == ""
    assert sum(len(line.split(" ")) for line in lines[:-1]) == 12103  # one space between
    assert [lines[1], lines[229], lines[456]] == [tok for _, tok, _ in QUOTED[:3]]


def test_the_sacremoses_class_is_left_as_it_was():
    """The quote rule is changed on the preparation's own normalizer only."""
    from sacremoses import MosesPunctNormalizer
    assert lc_norm_tok.lc_norm_tok("a ’b", "en") == "a &quot; b"
    assert MosesPunctNormalizer(lang="en").normalize("a ’b") == "a 'b"


def test_joint_bpe_learns_the_merges_asked_over_both_files(tmp_path):
    """One vocabulary for both sides: the merges asked for, plus the characters of both
    files (with SentencePiece's ▁) and the 259 reserved ids."""
    paths = bpe_corpus(tmp_path)
    vocab = SubwordVocab(lc_norm_tok.learn_joint_bpe(paths, merges=5, log=lambda _: None))
    # a c d e g h i l n o p r s t u w y z . & ; - and ▁: 23
    assert vocab.vocab_size == 5 + 23 + 259


def test_joint_bpe_marks_word_ends_and_round_trips(tmp_path):
    """SentencePiece BPE set up as subword-nmt segments: with more merges than the
    text supports, every training word is one piece; a word's last piece carries the
    boundary (subword-nmt's `</w>`), except the line's last word; decoding gives the
    line back."""
    vocab = SubwordVocab(lc_norm_tok.learn_joint_bpe(bpe_corpus(tmp_path), merges=500,
                                                     log=lambda _: None))
    assert vocab.vocab_size < 500 + 23 + 259
    line = "der lowest hund &apos;s -zeichen ."
    ids = vocab.encode_texts([line])[0]
    assert vocab.pieces(ids[:-1]) == ["der▁", "lowest▁", "hund▁", "&apos;s▁", "-zeichen▁", "."]
    assert vocab.decode_ids([ids]) == [line]


def bpe_corpus(tmp_path):
    (tmp_path / "a.en").write_text("a low dog .\nthe lowest dog &apos;s toy .\n" * 20)
    (tmp_path / "a.de").write_text("ein hund .\nder hund &apos;s -zeichen .\n" * 20)
    return [str(tmp_path / "a.en"), str(tmp_path / "a.de")]
