"""T2TSubwordVocab: tensor2tensor 1.15.7's SubwordTextEncoder, exactly, in eager mode,
in tf.function and in a SavedModel; hand-worked cases of t2t's rules; one-line errors.

The reference ids and round trips are t2t's own outputs in ../shared/t2t-reference
(its README tells how they were made); tensor2tensor itself is never imported.
"""

import pytest
import tensorflow as tf

from t2t_lite.data.t2t_subwords import T2TSubwordVocab, is_t2t_subwords_file
from t2t_lite.errors import T2TError
from paths import REPO_ROOT, T2T_REFERENCE

MODEL_A = T2T_REFERENCE / "model_a"
VOCAB = MODEL_A / "data_dir" / "vocab.translate_ende_multi30k.8192.subwords"
EXPECTED = MODEL_A / "expected"
NO_REFERENCE = (f"tensor2tensor reference outputs not found at {T2T_REFERENCE} "
                "(../shared/t2t-reference)")
needs_reference = pytest.mark.skipif(not T2T_REFERENCE.is_dir(), reason=NO_REFERENCE)

BATCH = 1000
EOS = 1

# A hand-made vocabulary: each case below was worked out by hand from t2t's rules.
HAND_SUBTOKENS = (["<pad>_", "<EOS>_", "a", "b", "_", " ", "\\", "u", ";"] + list("0123456789")
                  + ["ab_", " _", "\\u", "b_", "!", "a_", "aa"])
HAND = {s: i for i, s in enumerate(HAND_SUBTOKENS)}
DIGIT = {d: HAND[d] for d in "0123456789"}


def _ids(*subtokens):
    return [HAND[s] for s in subtokens]


def _digits(number: str):
    return [DIGIT[d] for d in number]


def _lines(path):
    """The lines of a text file split at "\\n" only (a "\\r" or other odd character stays)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", path
    return lines[:-1]


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.fixture(scope="module")
def reference():
    """(vocab, input lines, t2t's ids without EOS, t2t's decode(encode(line)))."""
    if not T2T_REFERENCE.is_dir():
        pytest.skip(NO_REFERENCE)
    lines = _lines(EXPECTED / "subwords_input.txt")
    ids = [[int(i) for i in row.split()] for row in _lines(EXPECTED / "t2t.subwords.ids")]
    round_trip = _lines(EXPECTED / "t2t.subwords.roundtrip")
    assert len(lines) == len(ids) == len(round_trip) == 8013
    assert lines.count("") == 1
    return T2TSubwordVocab.from_file(str(VOCAB)), lines, ids, round_trip


@pytest.fixture(scope="module")
def hand_vocab(tmp_path_factory):
    data = "".join(f"'{s}'\n" for s in HAND_SUBTOKENS).encode("utf-8")
    return T2TSubwordVocab.from_file(_write(tmp_path_factory.mktemp("hand") / "hand.subwords",
                                            data))


def _check_all_lines(encode, round_trip_fn, reference):
    """Every reference line: ids == t2t's + EOS and decode(encode(line)) == t2t's."""
    _, lines, want_ids, want_back = reference
    id_mismatches, back_mismatches = [], []
    for i in range(0, len(lines), BATCH):
        batch = tf.constant(lines[i:i + BATCH])
        got_ids = encode(batch).to_list()
        got_back = [s.decode("utf-8") for s in round_trip_fn(batch).numpy()]
        id_mismatches += [i + j for j, got in enumerate(got_ids) if got != want_ids[i + j] + [EOS]]
        back_mismatches += [i + j for j, got in enumerate(got_back) if got != want_back[i + j]]
    assert (id_mismatches, back_mismatches) == ([], [])


@needs_reference
def test_reference_all_lines_eager(reference):
    vocab = reference[0]
    _check_all_lines(vocab.encode, lambda s: vocab.decode(vocab.encode(s)), reference)


@needs_reference
def test_reference_all_lines_in_tf_function(reference):
    vocab = reference[0]
    spec = [tf.TensorSpec([None], tf.string)]
    encode = tf.function(vocab.encode, input_signature=spec)
    round_trip = tf.function(lambda s: vocab.decode(vocab.encode(s).to_tensor()),
                             input_signature=spec)
    _check_all_lines(encode, round_trip, reference)


@needs_reference
def test_reference_attributes(reference):
    vocab = reference[0]
    assert (vocab.pad_id, vocab.eos_id, vocab.unk_id) == (0, 1, None)
    assert vocab.vocab_size == 8079 and vocab.max_subtoken_length == 22
    assert vocab.whole_token_ids == []
    assert vocab.pieces([0, 1, 2]) == ["<pad>_", "<EOS>_", "._"] and len(vocab.pieces()) == 8079
    assert vocab.model_proto == VOCAB.read_bytes()
    # The longest subtokens are found whole: t2t's length cap counts characters (22 here,
    # 23 bytes in UTF-8), not bytes.
    assert vocab.pieces([6116, 7231]) == ["Geländemotorradfahrer_", "Fußgängerüberweg_"]
    assert vocab.encode_texts(["Geländemotorradfahrer", "Fußgängerüberweg"]) == \
        [[6116, EOS], [7231, EOS]]
    ids = vocab.encode(tf.constant(["A man.", ""]))
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32 and ids.ragged_rank == 1


@needs_reference
def test_saved_model_round_trip(reference, tmp_path):
    vocab, lines, want_ids, want_back = reference
    hand_made = _lines(EXPECTED / "input.en")[-12:]
    assert lines[-13:-1] == hand_made and lines[-1] == ""
    spec = [tf.TensorSpec([None], tf.string)]
    module = tf.Module()
    module.vocab = vocab
    module.encode = tf.function(lambda s: {"ids": vocab.encode(s).to_tensor()},
                                input_signature=spec)
    module.round_trip = tf.function(lambda s: {"text": vocab.decode(vocab.encode(s).to_tensor())},
                                    input_signature=spec)
    module.starts = tf.function(lambda s: {"starts": vocab.encode_with_offsets(s)[1].to_tensor(-1)},
                                input_signature=spec)
    tf.saved_model.save(module, str(tmp_path / "m"), signatures={
        "encode": module.encode, "round_trip": module.round_trip})
    del module
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    texts = tf.constant(hand_made + [""])
    want = want_ids[-13:]
    for encode in (loaded.encode, loaded.signatures["encode"]):
        got = encode(texts)["ids"].numpy().tolist()
        assert [[i for i in row if i != 0] for row in got] == [row + [EOS] for row in want]
    for round_trip in (loaded.round_trip, loaded.signatures["round_trip"]):
        got = [s.decode("utf-8") for s in round_trip(texts)["text"].numpy()]
        assert got == want_back[-13:]
    eager_starts = vocab.tokenize_with_offsets(hand_made + [""])[1]
    got_starts = loaded.starts(texts)["starts"].numpy().tolist()
    assert [row[:len(e)] for row, e in zip(got_starts, eager_starts)] == eager_starts


@needs_reference
def test_reference_offsets_of_escaped_characters(reference):
    vocab = reference[0]
    text = "under_score and back\\slash and &amp; entity"
    ids, starts, ends = vocab.tokenize_with_offsets([text])
    spans = [(piece, text.encode()[s:e].decode())
             for piece, s, e in zip(vocab.pieces(ids[0]), starts[0], ends[0])]
    assert spans == [
        ("under_", "under"), ("\\", "_"), ("u_", "_"), ("scor", "scor"), ("e_", "e"),
        ("and_", "and"), ("back_", "back"), ("\\", "\\"), ("\\", "\\"), ("_", ""),
        ("sla", "sla"), ("sh_", "sh"), ("and_", "and"), (" &", " &"), ("_", ""),
        ("amp_", "amp"), ("; _", "; "), ("ent", "ent"), ("it", "it"), ("y_", "y"),
        ("<EOS>_", "")]


# --- Hand-worked cases (vocabulary HAND_SUBTOKENS) ---

ENCODE_CASES = {
    "": [],
    "ab": _ids("ab_"),
    "aab": _ids("aa", "b_"),                        # greedy longest first, not shortest overall
    "a b": _ids("a_", "b_"),                        # an interior single space is dropped
    "a  b": _ids("a_", " ", " _", "b_"),            # two spaces are a token
    " a": _ids(" _", "a_"),                         # a first single space stays
    "a ": _ids("a_", " _"),                         # so does a last one
    "a b ": _ids("a_", "b_", " _"),
    " ": _ids(" _"),
    "  ": _ids(" ", " _"),
    "a  ": _ids("a_", " ", " _"),
    "a ! b": _ids("a_", " ", "!", " _", "b_"),      # " ! " is one non-alphanumeric token
    "ab!": _ids("ab_", "!", "_"),
    "a_b": _ids("a_", "\\u", "_", "b_"),             # "_" -> "\u"
    "a\\b": _ids("a_", "\\", "\\", "_", "b_"),       # "\" -> "\\"
    "a\U0001F600": _ids("a_", "\\") + _digits("128512") + _ids(";", "_"),  # not in the alphabet
    "a b c": _ids("a_", "b_", "\\") + _digits("99") + _ids(";", "_"),     # "c" neither
    "a\nb": _ids("a_", "\\") + _digits("10") + _ids(";", "_", "b_"),       # "\n" always escaped
}

DECODE_CASES = [
    (_ids("a", "!", "_", "b_"), "a! b"),            # t2t looks at each token's FIRST character
    (_ids("\\") + _digits("99") + _ids(";", "_", "a", "b_"), "c ab"),
    (_ids("\\") + _digits("0097") + _ids(";", "_"), "a"),
    (_ids("\\") + _digits("9999999") + _ids(";", "_"), "\u3013"),   # beyond U+10FFFF
    (_ids("\\") + _digits("9" * 30) + _ids(";", "_"), "\u3013"),
    (_ids("\\") + _digits("55296") + _ids(";", "_"), "\ufffd"),     # a surrogate: our choice
    (_ids("\\", "a", "_"), "\\a"),                   # not an escape: kept as it is
    (_ids("\\", "\\") + _digits("65") + _ids(";", "_"), "\\65;"),   # left to right
    (_ids("\\u"), "_"),                              # a last token without its "_"
    ([HAND["a_"], 999, HAND["b_"]], "a b"),          # unknown ids decode to nothing
]


def test_hand_encode(hand_vocab):
    texts = list(ENCODE_CASES)
    assert hand_vocab.encode_texts(texts) == [ENCODE_CASES[t] + [EOS] for t in texts]
    assert hand_vocab.decode_ids(hand_vocab.encode_texts(texts)) == texts


def test_hand_decode(hand_vocab):
    ids, want = zip(*DECODE_CASES)
    assert hand_vocab.decode_ids(ids) == list(want)


def test_decode_stops_at_eos_and_drops_pad(hand_vocab):
    a, b = HAND["a_"], HAND["b_"]
    ids = tf.constant([[a, 0, b, EOS, a], [0, 0, 0, 0, 0]])
    assert hand_vocab.decode(ids).numpy().tolist() == [b"a b", b""]
    assert hand_vocab.decode(tf.ragged.constant([[a, b], []], tf.int64)).numpy().tolist() == \
        [b"a b", b""]


def test_invalid_utf8_input_bytes_are_dropped(hand_vocab):
    ids, starts, ends = hand_vocab.encode_with_offsets(tf.constant([b"a\xffb"]))
    assert ids.to_list() == [[HAND["ab_"], EOS]]
    assert (starts.to_list(), ends.to_list()) == ([[0, 3]], [[3, 3]])


def test_hand_offsets(hand_vocab):
    ids, starts, ends = hand_vocab.tokenize_with_offsets(["a\U0001F600", "a b ", ""])
    assert ids[0] == ENCODE_CASES["a\U0001F600"] + [EOS]
    # "a" is bytes 0-1; all of "\128512;" is the emoji's 4 bytes; "_" and EOS are empty.
    assert (starts[0], ends[0]) == ([0] + [1] * 8 + [5, 5], [1] + [5] * 8 + [5, 5])
    assert (starts[1], ends[1]) == ([0, 2, 3, 4], [1, 3, 4, 4])
    assert (ids[2], starts[2], ends[2]) == ([EOS], [0], [0])


# --- Loading ---

def test_loading_follows_t2t(tmp_path):
    data = ("'<pad>_'\r\n'<EOS>_'\r\n'a_'\n'a'\n'_'\n''\n\"b_\"\n'a_'  \n'x\ry_'\n").encode()
    vocab = T2TSubwordVocab.from_file(_write(tmp_path / "v.subwords", data))
    # "\r" is dropped everywhere (TensorFlow's GFile, which t2t reads with, does so);
    # double quotes work too; an empty subtoken keeps its id.
    assert vocab.pieces() == ["<pad>_", "<EOS>_", "a_", "a", "_", "", "b_", "a_", "xy_"]
    assert vocab.encode_texts(["a b"]) == [[7, 6, EOS]]  # of two equal subtokens the later wins
    assert vocab.decode_ids([[5, 2]]) == ["a"]


def test_cannot_split_is_an_error(tmp_path):
    # "x" is in the alphabet (from "xy_") but no subtoken of its own: t2t fails too.
    vocab = T2TSubwordVocab.from_file(_write(tmp_path / "v.subwords",
                                             b"'<pad>_'\n'<EOS>_'\n'xy_'\n'y'\n"))
    assert vocab.encode_texts(["xy"]) == [[2, EOS]]
    with pytest.raises(T2TError, match="cannot split this text") as error:
        vocab.encode_texts(["x"])
    assert "\n" not in str(error.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot split"):
        tf.function(vocab.encode)(tf.constant(["y", "x"]))


@pytest.mark.parametrize("data, message", [
    (b"'<pad>_'\n'<EOS>_'\nabc\n", r"bad\.subwords, line 3: 'abc' is not a quoted subtoken"),
    (b"'<pad>_'\n'<EOS>_'\n'a_'\n'\xff_'\n", r"bad\.subwords, line 4: not UTF-8"),
    (b"'<pad>_'\n'the_'\n", r"bad\.subwords: the first two subtokens are \['<pad>_', 'the_'\]"),
    (b"'<pad>_'\n", r"bad\.subwords: the first two subtokens are \['<pad>_'\]"),
    (b"", r"bad\.subwords is empty"),
    (b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00", r"bad\.subwords, line 1: "),  # a SentencePiece model
])
def test_bad_files(tmp_path, data, message):
    with pytest.raises(T2TError, match=message) as error:
        T2TSubwordVocab.from_file(_write(tmp_path / "bad.subwords", data))
    assert "\n" not in str(error.value)


def test_missing_file(tmp_path):
    with pytest.raises(T2TError, match=r"No t2t subwords vocabulary at .*none\.subwords"):
        T2TSubwordVocab.from_file(str(tmp_path / "none.subwords"))


def test_is_t2t_subwords_file(tmp_path):
    assert is_t2t_subwords_file(str(tmp_path / "vocab.problem.8192.subwords"))  # by name
    assert is_t2t_subwords_file(_write(tmp_path / "vocab.txt", b"'<pad>_'\r\n'<EOS>_'\r\n'a'\n"))
    assert not is_t2t_subwords_file(_write(tmp_path / "sp.model", b"\n\x0b\n\x05<pad>\x15"))
    assert not is_t2t_subwords_file(_write(tmp_path / "words.txt", b"'a'\n'b'\n"))
    assert not is_t2t_subwords_file(str(tmp_path / "missing.model"))


def test_model_b_vocabulary_all_lines():
    """The 513-subword vocabulary of tests/t2t_import/data/model_b (another t2t-datagen
    run, 88-character alphabet) on its 125 lines, 5 of them hand-made to need escapes
    (characters outside the alphabet, `_`, `\\`, spaces at both ends, an empty line)."""
    model_b = REPO_ROOT / "tests" / "t2t_import" / "data" / "model_b"
    vocab = T2TSubwordVocab.from_file(
        str(model_b / "data_dir" / "vocab.translate_ende_multi30k_tiny.512.subwords"))
    lines = _lines(model_b / "expected" / "subwords_input.txt")
    ids = [[int(i) for i in row.split()]
           for row in _lines(model_b / "expected" / "t2t.subwords.ids")]
    round_trip = _lines(model_b / "expected" / "t2t.subwords.roundtrip")
    assert len(lines) == len(ids) == len(round_trip) == 125 and vocab.vocab_size == 513
    _check_all_lines(vocab.encode, lambda s: vocab.decode(vocab.encode(s)),
                     (vocab, lines, ids, round_trip))
