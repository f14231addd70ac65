"""Inputs longer than `max_length` reach an imported model whole, as in t2t-decoder.

t2t's `max_length` (256 for model a) only filtered training examples: t2t-decoder
(`decode_hparams.max_input_size=-1`) and its --score_file, like the reference recipe
(`../shared/t2t-reference/tools/t2t_reference.py`: `encode(line.strip()) + [EOS]`),
feed every subword of a line to the model. The expected values below are computed
that way: the line's ids, EOS appended, given to the model directly. The decoding
parameters are the imported model's defaults, which t2t-decoder uses.
"""

import pytest
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode.scoring import score_pairs
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError
from t2t_lite.export.exporter import TranslationModule, load_source

from conftest import T2T_MODEL_A


@pytest.fixture(scope="module")
def imported(t2t_imported):
    """(model, vocab, the imported model's default SearchParams) of model a."""
    directory = model_dir_lib.ModelDir.open(t2t_imported)
    model, _ = directory.load_model()
    return model, directory.vocab(), SearchParams.for_problem(directory.problem())


@pytest.fixture(scope="module")
def long_line() -> str:
    """The first 20 reference input lines as one line (299 subwords)."""
    with open(T2T_MODEL_A / "expected" / "input.en", encoding="utf-8") as f:
        return " ".join(f.read().split("\n")[:20])


def full_ids(vocab, line: str) -> tf.Tensor:
    """int32 [1, S]: every subword of `line` and EOS (t2t's recipe)."""
    return vocab.encode_inputs(tf.constant([line])).to_tensor()


# Greedy with short outputs keeps it cheap; the input limit is the imported model's default.
DECODE = "beam_size=1,extra_length=3"


@pytest.fixture(scope="module")
def greedy(imported, long_line):
    """(the search, t2t's translation of the whole long line: its ids given to the model)."""
    model, vocab, params = imported
    ids = full_ids(vocab, long_line)
    assert ids.shape[1] == 299 > model.hparams.max_length == 256
    search = Search(model, params.parse(DECODE))
    expected = vocab.decode(search.run(ids)[0][:, 0]).numpy()[0].decode("utf-8")
    # The line cut to its first 255 subwords and EOS translates otherwise.
    cut = tf.concat([ids[:, :255], [[1]]], axis=1)
    assert vocab.decode(search.run(cut)[0][:, 0]).numpy()[0].decode("utf-8") != expected
    return search, expected


def test_a_long_input_is_decoded_whole(imported, long_line, greedy):
    search, expected = greedy
    assert Translator(search, imported[1]).translate([long_line]) == [expected]


def test_the_saved_model_takes_a_long_input_whole(t2t_imported, long_line, greedy):
    """t2t-exporter's graph (called here without saving it), as t2t's exporter."""
    source = load_source(model_dir_lib.ModelDir.open(t2t_imported), DECODE)
    module = TranslationModule(Search(source.model, source.params), source.vocab)
    served = module.signatures()["serving_default"](inputs=tf.constant([long_line]))
    assert served["outputs"].numpy()[0].decode("utf-8") == greedy[1]


def test_max_input_length_still_truncates(imported, long_line):
    """What the import's note says: --decode_hparams=max_input_length=N keeps the first
    N - 1 subwords and EOS; below -1 (no limit) it is a one-line error."""
    model, vocab, params = imported
    translator = Translator(Search(model, params.parse("max_input_length=256")), vocab)
    ids = translator.encode([long_line])
    assert ids.shape == (1, 256)
    assert ids[0].numpy().tolist() == full_ids(vocab, long_line)[0, :255].numpy().tolist() + [1]
    with pytest.raises(T2TError) as raised:
        params.parse("max_input_length=-2")
    assert str(raised.value) == ("max_input_length must be >= 1, 0 (the model's max_length) "
                                 "or -1 (no limit), got -2.")


def test_a_long_source_is_scored_whole(imported, long_line):
    """t2t-decoder --score_file's score_pairs: log P(target | all of the source), the
    sum of the model's log-probabilities of the target's subwords and EOS."""
    model, vocab, params = imported
    target = "Ein Hund rennt."
    targets = full_ids(vocab, target)
    logits = model({"inputs": full_ids(vocab, long_line), "targets": targets})
    expected = float(tf.reduce_sum(tf.gather(tf.nn.log_softmax(logits[0]), targets[0],
                                             batch_dims=1)))
    [score] = score_pairs([model], vocab, [long_line], [target], params.max_input_length)
    assert abs(score - expected) < 1e-5, (score, expected)
