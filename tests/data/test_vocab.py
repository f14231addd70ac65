"""SubwordVocab: exact round trip in-graph (Multi30k's quirks included), ids, SavedModel."""


import pytest
import tensorflow as tf

from t2t_lite.data import vocab as vocab_lib
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError
from t2t_lite.problems.translate_numbers import number_pair
from paths import SHARED_DATA

MULTI30K = SHARED_DATA / "multi30k"
needs_multi30k = pytest.mark.skipif(
    not MULTI30K.is_dir(), reason=f"Multi30k sample not found at {MULTI30K} (../shared/data)")

SMALL_TEXT = ["the cat sat on the mat", "der Hund lief über die Straße", "A  B\tC\u00a0D ",
              "3,000 people & 12 dogs"] * 50 + [
                  f"{pair[0]} = {pair[1]}" for pair in map(number_pair, range(0, 3000, 7))]


def _lines(name: str):
    return (MULTI30K / name).read_bytes().decode("utf-8").split("\n")[:-1]


@pytest.fixture(scope="module")
def small_vocab():
    return SubwordVocab(vocab_lib.train_sentencepiece(SMALL_TEXT, 320))


@pytest.fixture(scope="module")
def multi30k_vocab():
    if not MULTI30K.is_dir():
        pytest.skip(f"Multi30k sample not found at {MULTI30K} (../shared/data)")
    return SubwordVocab(vocab_lib.train_sentencepiece(_lines("train.en") + _lines("train.de"), 8000))


def test_ids_and_size(small_vocab):
    assert (small_vocab.pad_id, small_vocab.eos_id, small_vocab.unk_id) == (0, 1, 2)
    assert small_vocab.vocab_size == 320
    assert small_vocab.pieces([0, 1, 2, 3, 258]) == ["<pad>", "</s>", "<unk>", "<0x00>", "<0xFF>"]
    ids = small_vocab.encode_texts(["the cat", ""])
    assert ids[0][-1] == 1 and 0 not in ids[0] and ids[1] == [1]


def test_decode_stops_at_eos_and_drops_pad(small_vocab):
    cat = small_vocab.encode_texts(["the cat"])[0][:-1]
    mat = small_vocab.encode_texts(["mat"])[0][:-1]
    ids = tf.constant([cat + [1] + mat + [0], [0] * (len(cat) + len(mat) + 2)])  # [2, T]
    assert small_vocab.decode(ids).numpy().tolist() == [b"the cat", b""]
    ids = tf.constant([cat + [0, 0] + mat])  # PAD inside is dropped, no EOS: all kept
    assert small_vocab.decode_ids(ids.numpy().tolist()) == ["the cat mat"]  # "mat" starts with the word marker


def test_whole_words_are_one_piece_at_word_starts():
    vocab = SubwordVocab(vocab_lib.train_sentencepiece(SMALL_TEXT, 320, whole_words=["(NP", "NNP"]))
    # Without the option "(NP" is spelled from bytes / smaller pieces; with it, one piece each.
    assert vocab.pieces(vocab.encode_texts(["(NP NNP )"])[0][:-1])[:2] == ["\u2581(NP", "\u2581NNP"]
    # Inside a word a symbol is not matched; at a word start it is (greedily); text round-trips.
    for text in ["x(NP", "NNPS (NP"]:
        ids = vocab.encode_texts([text])[0]
        assert vocab.decode_ids([ids]) == [text]
    assert "\u2581NNP" in vocab.pieces(vocab.encode_texts(["NNPS"])[0])
    assert "\u2581(NP" not in vocab.pieces(vocab.encode_texts(["x(NP"])[0])


def test_unseen_characters_round_trip_through_bytes(small_vocab):
    text = "✓ 東京 €5 Ünïcödé\t"
    ids = small_vocab.encode_texts([text])[0]
    assert vocab_lib.UNK_ID not in ids
    assert small_vocab.decode_ids([ids]) == [text]


def test_leading_spaces_are_the_one_normalization(small_vocab):
    texts = ["  two leading", " A  B\tC\u00a0D  "]
    assert small_vocab.decode_ids(small_vocab.encode_texts(texts)) == ["two leading", "A  B\tC\u00a0D  "]


def test_in_graph_and_saved_model(small_vocab, tmp_path):
    module = tf.Module()
    module.vocab = small_vocab
    module.round_trip = tf.function(
        lambda s: small_vocab.decode(small_vocab.encode(s).to_tensor()),
        input_signature=[tf.TensorSpec([None], tf.string)])
    texts = tf.constant(["A  B\tC\u00a0D ", "3,000 people & 12 dogs ✓"])
    assert module.round_trip(texts).numpy().tolist() == texts.numpy().tolist()
    tf.saved_model.save(module, str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert loaded.round_trip(texts).numpy().tolist() == texts.numpy().tolist()


def test_load_missing_file(tmp_path):
    with pytest.raises(T2TError, match="run t2t-datagen first"):
        SubwordVocab.from_file(str(tmp_path / "none.model"))


def test_vocab_path_convention():
    assert vocab_lib.vocab_path("/d", "translate_ende_wmt32k") == "/d/translate_ende.sp37000.model"


def test_too_large_vocab_is_a_t2t_error():
    with pytest.raises(T2TError, match="could not learn 5000 pieces from 629 sentences"):
        vocab_lib.train_sentencepiece(SMALL_TEXT, 5000)


@needs_multi30k
def test_multi30k_exact_round_trip_in_graph(multi30k_vocab):
    assert multi30k_vocab.vocab_size == 8000
    round_trip = tf.function(lambda s: multi30k_vocab.decode(multi30k_vocab.encode(s).to_tensor()))
    files = ["train.en", "train.de", "val.en", "val.de", "test_2016_flickr.en",
             "test_2016_flickr.de"]
    lines = [line for name in files for line in _lines(name)]
    assert len(lines) == 2 * (29000 + 1014 + 1000)
    mismatches = []
    for i in range(0, len(lines), 8192):
        batch = lines[i:i + 8192]
        got = [s.decode("utf-8") for s in round_trip(tf.constant(batch)).numpy()]
        mismatches += [(a, b) for a, b in zip(batch, got) if a != b]
    assert mismatches == []


@needs_multi30k
def test_multi30k_quirks(multi30k_vocab):
    en, de = _lines("train.en"), _lines("train.de")
    quirks = {
        "&amp;": [l for l in en if "&amp;" in l],
        "tab": [de[7365]],
        "nbsp": [l for l in de if "\u00a0" in l],
        "trailing": [l for l in de if l != l.rstrip()],
    }
    assert {k: len(v) for k, v in quirks.items()} == {"&amp;": 16, "tab": 1, "nbsp": 44,
                                                     "trailing": 40}
    assert "\t" in de[7365]
    for name, lines in quirks.items():
        ids = multi30k_vocab.encode_texts(lines)
        assert all(row[-1] == 1 and vocab_lib.UNK_ID not in row for row in ids), name
        assert multi30k_vocab.decode_ids(ids) == lines, name
