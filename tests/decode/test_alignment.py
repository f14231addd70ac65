"""Word alignments from the decoder: `--decode_hparams=alignments=true`.

The mapping from pieces to words and the argmax are checked on hand-made
attention weights and pieces, with the expected pairs worked out by hand; the
trained numbers model checks that what the decoder writes is well formed and
that its piece alignments keep the order of the number's parts.
"""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_decoder
from t2t_lite.decode import alignment
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.data.layout import EOS_ID
from t2t_lite.problems.translate_numbers import number_pair, number_splits

from model_dirs import load_model, make_model_dir, whole_words_only


def test_word_spans_are_byte_offsets_of_split_words():
    text = "A  dög\u00a0runs"  # two spaces; NBSP separates words as str.split() does
    assert alignment.word_spans(text) == [(0, 1), (3, 7), (9, 13)]
    assert [text.encode()[s:e].decode() for s, e in alignment.word_spans(text)] == text.split()


def test_pieces_belong_to_the_word_their_bytes_fall_in():
    # "▁A" (0,1)  "▁" (1,2): a space alone  "▁d" (2,4)  "ög" (4,7)  then "€" in three
    # byte pieces, SentencePiece giving the first two empty spans at its start: (8,8)
    # (8,8) (8,11); "x" (11,12).  Words: "A" (0,1), "dög" (3,7), "€x" (8,12).
    starts, ends = [0, 1, 2, 4, 8, 8, 8, 11], [1, 2, 4, 7, 8, 8, 11, 12]
    words = [(0, 1), (3, 7), (8, 12)]
    assert alignment.piece_words(starts, ends, words) == [0, None, 1, 1, 2, 2, 2, 2]


def test_output_pieces_map_to_the_words_of_the_detokenized_text():
    pieces = ["\u2581ein", "hundert", "\u2581", "\u2581dr", "<0xC3>", "<0xBC>", "ck", "\u2581x"]
    # Text " einhundert  drück x": words "einhundert", "drück", "x".
    assert alignment.target_piece_words(pieces) == [0, 0, None, 1, 1, 1, 1, 2]
    # Bytes that are not valid UTF-8 still count as a word, split on ASCII spaces.
    assert alignment.target_piece_words(["\u2581a", "<0xFF>", "\u2581b"]) == [0, 0, 1]


def test_argmax_over_word_pieces_gives_sorted_unique_word_pairs():
    # Source pieces: words [0, 0, None (a space), 1] + EOS and padding columns;
    # output pieces: words [0, 1, 1, None] + EOS row.
    attention = np.array([
        [0.1, 0.6, 0.0, 0.1, 0.2, 0.0],   # -> piece 1 (word 0)
        [0.1, 0.1, 0.5, 0.2, 0.1, 0.0],   # the space piece wins, but is no word: piece 3 (word 1)
        [0.3, 0.0, 0.0, 0.2, 0.5, 0.0],   # EOS column (4) never counts: piece 0 (word 0)
        [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],   # output piece in no word: not aligned
        [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])  # output EOS: not aligned
    pairs = alignment.hard_alignment(attention, [0, 0, None, 1], [0, 1, 1, None])
    assert pairs == [(0, 0), (0, 1), (1, 1)]
    assert alignment.pharaoh(pairs) == "0-0 0-1 1-1"
    assert alignment.hard_alignment(attention, [None, None], [0, 1]) == []


def in_order_share(alignments) -> float:
    """Of pairs of aligned pieces (different source and target pieces), the share
    whose source order is their target order."""
    agree = total = 0
    for line in alignments:
        pairs = [tuple(map(int, p.split("-"))) for p in line.split()]
        for s1, t1 in pairs:
            for s2, t2 in pairs:
                if t1 < t2 and s1 != s2:
                    total += 1
                    agree += s1 < s2
    return agree / total


def test_piece_alignments_of_the_trained_model_keep_the_order_of_the_number(numbers_model):
    """Thousands come before hundreds in English and German alike (only units and tens
    swap, mostly inside one German piece): most aligned pieces keep their order. With
    the argmax taken over the wrong axis or rows and columns mixed up, about half would."""
    model, vocab = load_model(numbers_model.path)
    lines = [number_pair(n)[0] for n in number_splits()["test"][:200]]
    translator = Translator(Search(model, SearchParams(beam_size=4)), vocab)
    inputs = translator.encode(lines)
    _, _, ids = translator.nbest(inputs)
    pieces = alignment.align(model, vocab, inputs, ids[:, 0], lines, unit="piece")
    assert in_order_share(pieces) > 0.75
    for line, row, text in zip(pieces, ids[:, 0], lines):
        pairs = [tuple(map(int, p.split("-"))) for p in line.split()]
        assert {t for _, t in pairs} == set(range(len(alignment.until_eos(row))))
        assert all(0 <= s < len(vocab.encode_texts([text])[0]) - 1 for s, _ in pairs)


def test_decoder_writes_word_alignments_beside_each_translation(numbers_model, tmp_path, capfd):
    source = tmp_path / "in.txt"
    source.write_text("seven thousand, three hundred\n\nforty-two\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    code = t2t_decoder.main([f"--output_dir={numbers_model.path}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}",
                             "--decode_hparams=beam_size=2,alignments=true,write_beam_scores=true"])
    assert code == 0, capfd.readouterr().err
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[1] == "" and lines[3] == ""  # an empty input, and the file's end
    for line, text in ((lines[0], "seven thousand, three hundred"), (lines[2], "forty-two")):
        translation, score, pairs = line.split("\t")
        assert translation and float(score) < 0
        pairs = [tuple(map(int, p.split("-"))) for p in pairs.split()]
        # German number words are one word: every pair ends in output word 0.
        assert pairs and {t for _, t in pairs} == {0}
        assert all(0 <= s < len(text.split()) for s, _ in pairs)


@pytest.mark.parametrize("hparams, message", [
    ("alignments=true,alignment_layer=2", "alignment_layer must be in -2..1"),
    ("alignments=maybe", "alignments"),
])
def test_bad_alignment_options_are_one_line_errors(numbers_model, tmp_path, capfd, hparams,
                                                   message):
    source = tmp_path / "in.txt"
    source.write_text("forty-two\n", encoding="utf-8")
    code = t2t_decoder.main([f"--output_dir={numbers_model.path}", f"--decode_from_file={source}",
                             f"--decode_hparams={hparams}"])
    err = capfd.readouterr().err
    assert code == 1 and message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_decoder_aligns_several_words_of_every_beam_of_a_truncated_source(tmp_path, capfd):
    """End to end: each beam's alignment is that of its own words, over the source
    pieces the model saw (max_input_length=4: three pieces and the EOS)."""
    path = make_model_dir(str(tmp_path / "model"), steps=(0,), adjust=whole_words_only)
    lines = ["seven thousand, three hundred and twelve", "forty-two",
             "nine hundred thousand and one"]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = t2t_decoder.main([f"--output_dir={path}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", "--decode_hparams=beam_size=3,"
                             "return_beams=true,alignments=true,max_input_length=4,extra_length=4"])
    assert code == 0, capfd.readouterr().err
    model, vocab = load_model(path)
    written = out.read_text(encoding="utf-8").splitlines()
    assert len(written) == len(lines)
    for line, columns in zip(lines, written):
        columns = columns.split("\t")
        hypotheses, alignments = columns[0::2], columns[1::2]
        assert len(hypotheses) == 3 and len(set(hypotheses)) > 1
        pieces = vocab.encode_texts([line])[0]
        seen = tf.constant([pieces[:-1][:3] + [EOS_ID]], tf.int32)  # what the model saw
        # The words of the source's first three pieces: the only ones to align to.
        seen_words = len(vocab.decode(seen).numpy()[0].decode("utf-8").split())
        for hypothesis, written_pairs in zip(hypotheses, alignments):
            words = hypothesis.split()
            assert len(words) > 1
            pairs = [tuple(map(int, p.split("-"))) for p in written_pairs.split()]
            assert sorted({t for _, t in pairs}) == list(range(len(words)))
            assert all(0 <= s < seen_words for s, _ in pairs)
            ids = vocab.encode_texts([hypothesis])[0]
            assert alignment.align(model, vocab, seen, [ids], [line]) == [written_pairs]
