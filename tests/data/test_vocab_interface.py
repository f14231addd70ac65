"""Every vocabulary kind is a `Vocabulary`: the interface datagen, the decoder, scoring and
the attention pictures call, with the defaults a vocabulary of one side gives
(sources encoded as targets, targets a program scores encoded as inputs, no input check,
the source pieces the pieces) and an imported Marian model's own sides.

Hand-worked ids: the byte vocabulary's id of a byte is the byte + 2; the t2t subwords
vocabulary is made here, its ids worked out from t2t's rules (" " a token of its own
at a line's ends, escaped " _"; "ab" escaped "ab_").
"""

import pytest
import tensorflow as tf

from t2t_lite.data.t2t_subwords import T2TSubwordVocab
from t2t_lite.data.t2t_text_encoders import T2TByteVocab, T2TTokenVocab, token_file_bytes
from t2t_lite.data.vocab import SubwordVocab, train_sentencepiece
from t2t_lite.data.vocab_base import Vocabulary
from t2t_lite.errors import T2TError
from t2t_lite.marian.vocab_file import write_vocab
from t2t_lite.marian.vocabulary import MarianVocab
from marian_models import LANGUAGE_REFUSAL, MARIAN

EOS = 1
SUBTOKENS = ["<pad>_", "<EOS>_", "a", "b", "_", "\\", "u", ";"] + list("0123456789") + [
    "ab_", " _"]
AB, SPACE = 18, 19  # ids of "ab_" and " _"
UNTAGGED = ["no language token here", "", ">>xx<< an unknown one"]


@pytest.fixture(scope="module")
def one_sided():
    """{kind: a vocabulary with one side} of each kind but Marian's."""
    t2t_file = "".join(f"'{s}'\n" for s in SUBTOKENS).encode("utf-8")
    return {"sentencepiece": SubwordVocab(train_sentencepiece(
                ["the cat sat on the mat", "a dog ran", " ab b a "] * 30, 300,
                hard_limit=False)),
            "t2t_subwords": T2TSubwordVocab(t2t_file),
            "t2t_bytes": T2TByteVocab(),
            "t2t_tokens": T2TTokenVocab(token_file_bytes(b"<pad>\n<EOS>\nab\nb\n<UNK>\n",
                                                         "<UNK>"))}


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """{model: its MarianVocab} of the committed models with two sides and with languages."""
    return {name: MarianVocab.from_file(write_vocab(str(MARIAN / name),
                                                    str(tmp_path_factory.mktemp(name))))
            for name in ("separate_relu", "multilingual_gelu")}


def _ids(encode, texts):
    return encode(tf.constant(texts)).to_list()


def test_every_kind_is_a_vocabulary(one_sided, marian):
    kinds = {**one_sided, **marian}
    assert {name: isinstance(vocab, Vocabulary) for name, vocab in kinds.items()} == \
        dict.fromkeys(kinds, True)
    assert {name: (vocab.pad_id, vocab.eos_id, vocab.unk_id)
            for name, vocab in kinds.items()} == {
        "sentencepiece": (0, 1, 2), "t2t_subwords": (0, 1, None), "t2t_bytes": (0, 1, None),
        "t2t_tokens": (0, 1, 4), "separate_relu": (0, 1, 2), "multilingual_gelu": (0, 1, 2)}


def test_sources_are_encoded_as_targets_and_scored_targets_as_inputs(one_sided):
    # t2t's vocabularies strip a line the decoder reads (encode_inputs), not training data
    assert _ids(one_sided["t2t_bytes"].encode_sources, [" ab "]) == [[34, 99, 100, 34, EOS]]
    assert _ids(one_sided["t2t_bytes"].encode_targets, [" ab "]) == [[99, 100, EOS]]
    assert _ids(one_sided["t2t_subwords"].encode_sources, [" ab "]) == [[SPACE, AB, SPACE, EOS]]
    assert _ids(one_sided["t2t_subwords"].encode_targets, [" ab "]) == [[AB, EOS]]
    assert _ids(one_sided["t2t_tokens"].encode_sources, [" ab zz "]) == [[2, 4, EOS]]
    assert _ids(one_sided["t2t_tokens"].encode_targets, [" ab zz "]) == [[2, 4, EOS]]
    sentencepiece = one_sided["sentencepiece"]
    lines = ["the cat sat", " a dog ", "b  a"]
    assert _ids(sentencepiece.encode_sources, lines) == _ids(sentencepiece.encode, lines)
    assert _ids(sentencepiece.encode_targets, lines) == _ids(sentencepiece.encode, lines)


def test_one_sided_vocabularies_check_no_input_and_have_one_table(one_sided):
    for name, vocab in one_sided.items():
        assert vocab.language_tokens == (), name
        assert vocab.check_inputs(UNTAGGED, first_line=3, unit="pair") is None, name
        assert vocab.source_pieces() == vocab.pieces(), name
    assert one_sided["t2t_bytes"].source_pieces([0, 1, 99, 34]) == ["<pad>", "<EOS>", "a",
                                                                    "\\x20"]
    assert one_sided["t2t_subwords"].source_pieces([AB, SPACE]) == ["ab_", " _"]
    assert one_sided["t2t_tokens"].decode_ids([[2, 3, EOS, 2]]) == ["ab b"]


def test_marian_sources_and_targets_use_their_own_sides(marian):
    relu = marian["separate_relu"]
    line = ["cinq a"]
    assert _ids(relu.encode_sources, line) == _ids(relu.encode_inputs, line)
    assert _ids(relu.encode_targets, line) == _ids(relu.encode, line)
    assert _ids(relu.encode_sources, line) != _ids(relu.encode_targets, line)
    assert relu.source_pieces()[:5] == ["<pad>", "</s>", "<unk>", "-", "a"]
    assert relu.pieces()[:5] == ["<pad>", "</s>", "<unk>", "-", "cinq"]
    assert relu.language_tokens == []
    assert relu.check_inputs(UNTAGGED) is None  # one target language: nothing to check


def test_a_multilingual_marian_vocabulary_checks_its_inputs(marian):
    gelu = marian["multilingual_gelu"]
    assert gelu.language_tokens == [">>deu<<", ">>fra<<", ">>spa<<"]
    assert gelu.check_inputs([">>fra<< two", ""]) is None
    with pytest.raises(T2TError) as error:
        gelu.check_inputs(UNTAGGED, first_line=3, unit="pair")
    assert str(error.value) == f"{LANGUAGE_REFUSAL} Refused pair 3: 'no language token here'."


def test_what_a_saved_model_holds_of_each_kind(one_sided, marian):
    """The tracked attributes a `tf.Module` holding the vocabulary carries into a SavedModel
    (tables, tokenizer models, piece lists): each kind's own, none from `Vocabulary`."""
    kinds = {**one_sided, **marian}
    assert {name: sorted(tf.train.TrackableView(vocab).children(vocab))
            for name, vocab in kinds.items()} == {
        "sentencepiece": ["_pieces", "_tokenizer", "whole_token_ids"],
        "t2t_subwords": ["_pieces", "_table", "_wordpiece", "whole_token_ids"],
        "t2t_bytes": ["whole_token_ids"],
        "t2t_tokens": ["_pieces", "_table", "whole_token_ids"],
        "separate_relu": ["_pieces", "_source", "_source_pieces", "_target", "language_tokens",
                          "whole_token_ids"],
        "multilingual_gelu": ["_languages", "_pieces", "_source", "_source_pieces", "_target",
                              "language_tokens", "whole_token_ids"]}
