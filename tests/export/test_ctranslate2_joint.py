"""CT2Translator's extra_length caps: one `translate_batch` call under the largest cap
stands for one call per cap only where CTranslate2's stop rule makes it exact.

A random model whose embeddings are scaled up (confident, long paths) and whose EOS
row more so (some hypotheses end at once) stops its searches at all lengths; each
batch is SOURCES, 23 number sentences (caps of 19-30 tokens at extra_length=10),
and LONG, a batch-mate whose cap (55) is 25 tokens larger. On these 23, the joint call
as first written (accepted wherever the returned hypotheses ended 2 tokens below
the source's cap) gave another result than the source's own cap in 9 sources
(length_penalty=0, beam 4, 4 hypotheses: what t2t-server asks), 6 (beam 2, 2
hypotheses), 15 (beam 4, one hypothesis: the client's default) and 2 (length
penalty 1.0 or 0.6, beam 4, one hypothesis), e.g. a best of 6 tokens (-4.489)
where the source's own cap of 19 gives 19 tokens (-3.368).
"""

import pytest

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="the ctranslate2 extra is not installed (pip install -e '.[ctranslate2]')")

from t2t_lite.data.layout import EOS_ID  # noqa: E402
from t2t_lite.export import ctranslate2_export  # noqa: E402
from t2t_lite.export.ctranslate2_client import CT2Translator, joint_hypotheses  # noqa: E402
from t2t_lite.model_dir import ModelDir  # noqa: E402
from t2t_lite.serve.ctranslate2_engine import CT2Engine  # noqa: E402

from model_dirs import make_model_dir, number_sentences  # noqa: E402

EXTRA = 10  # extra_length: from 10 on, the client tries the joint call first
SOURCES = [
    "one thousand, nine hundred and sixty-one", "two thousand, three hundred and sixty-eight",
    "three thousand, four hundred and four", "four thousand, six hundred and sixty-two",
    "four thousand, eight hundred and ten", "four thousand, eight hundred and forty-seven",
    "five thousand, one hundred and six", "six thousand, one hundred and five",
    "six thousand, one hundred and seventy-nine", "six thousand, four hundred and thirty-eight",
    "six thousand, six hundred and twenty-three", "seven thousand, four hundred and thirty-seven",
    "seven thousand, nine hundred and eighteen", "eight thousand, two hundred and eighty-eight",
    "eight thousand, three hundred and twenty-five", "nine thousand, seven hundred and sixty-eight",
    "ten thousand, six hundred and fifty-six", "eleven thousand, one hundred and seventy-four",
    "twelve thousand, two hundred and ten", "fourteen thousand and twenty-three",
    "fourteen thousand, one hundred and thirty-four", "fourteen thousand, two hundred and eight",
    "fourteen thousand, four hundred and thirty"]
LONG = " ".join([max(number_sentences(), key=len)] * 2)


def confident_with_early_ends(model, vocab_file):
    """(Tied) embeddings x 5, EOS's x 15: peaked distributions, so long hypotheses
    keep high scores while some beams end at once."""
    table = model.target_embedding.weights_matrix
    value = table.numpy() * 5
    value[EOS_ID] *= 3
    table.assign(value)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return make_model_dir(str(tmp_path_factory.mktemp("joint") / "model"), steps=(0,),
                          adjust=confident_with_early_ends)


@pytest.fixture(scope="module")
def ct2_path(model_dir, tmp_path_factory) -> str:
    return ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir),
                                                 str(tmp_path_factory.mktemp("joint_ct2")))


class RecordingTranslator:
    """A CTranslate2 translator that records each `translate_batch` call's
    (sources, max_decoding_length, num_hypotheses)."""

    def __init__(self, translator):
        self.translator, self.calls = translator, []

    def translate_batch(self, sources, **options):
        self.calls.append((len(sources), options["max_decoding_length"],
                           options.get("num_hypotheses", 1)))
        return self.translator.translate_batch(sources, **options)


def caps_of(pieces):
    """Each source's cap: its pieces, EOS and EXTRA (far below max_length 256)."""
    return [len(p) + 1 + EXTRA for p in pieces]


def own_cap_results(client, pieces, **options):
    """The reference: each source translated in one call per cap, with the sources
    of its own cap."""
    caps = caps_of(pieces)
    results = {}
    for cap in sorted(set(caps)):
        rows = [i for i, c in enumerate(caps) if c == cap]
        out = client.translator.translate_batch(
            [pieces[i] for i in rows], max_batch_size=64,
            **dict(client.options, max_decoding_length=cap, **options))
        results.update(zip(rows, out))
    return [results[i] for i in range(len(pieces))]


def assert_same_results(got, expected):
    assert [r.hypotheses for r in got] == [r.hypotheses for r in expected]
    assert [x for r in got for x in r.scores] == pytest.approx(
        [x for r in expected for x in r.scores], abs=1e-4)


@pytest.mark.parametrize("beam_size, num_hypotheses", [(4, 4), (2, 2), (4, None)],
                         ids=["beam 4, 4 hypotheses", "beam 2, 2 hypotheses",
                              "beam 4, the default"])
def test_without_a_length_penalty_each_cap_is_translated_on_its_own(ct2_path, beam_size,
                                                                   num_hypotheses):
    """length_penalty=0: CTranslate2 stops a source once its top beam has finished
    (and num_hypotheses are collected), maybe past the source's cap with every
    returned hypothesis short of it, so no joint call: one call per cap, each
    source the result of its own cap's call."""
    client = CT2Translator(ct2_path, compute_type="float32", beam_size=beam_size,
                           length_penalty=0.0)
    pieces = client.tokenize(SOURCES + [LONG])
    options = {"return_scores": True}
    if num_hypotheses:
        options["num_hypotheses"] = num_hypotheses
    expected = own_cap_results(client, pieces, **options)
    recording = client.translator = RecordingTranslator(client.translator)
    assert_same_results(client.translate_results(pieces, 32, EXTRA, **options), expected)
    caps = caps_of(pieces)
    assert max(caps) - max(caps[:-1]) == 25  # LONG's cap is far beyond the others'
    assert sorted(cap for _, cap, _ in recording.calls) == sorted(set(caps))
    assert {n for _, _, n in recording.calls} == {num_hypotheses or 1}


@pytest.mark.parametrize("length_penalty", [1.0, 0.6])
def test_the_client_default_asks_the_joint_call_for_beam_size_hypotheses(ct2_path,
                                                                        length_penalty):
    """A length penalty, beam 4, `translate_pieces` (one hypothesis): the joint call asks
    for 4 hypotheses, the number at which CTranslate2 stops a search, so the longest
    of them ends where the search stopped; sources that ended well below their caps
    keep its result, cut to the best one, which is that of their own cap's call."""
    client = CT2Translator(ct2_path, compute_type="float32", beam_size=4,
                           length_penalty=length_penalty)
    pieces = client.tokenize(SOURCES + [LONG])
    expected = own_cap_results(client, pieces, return_scores=True)
    recording = client.translator = RecordingTranslator(client.translator)
    got = client.translate_results(pieces, 32, EXTRA, return_scores=True)
    assert_same_results(got, expected)
    assert {len(r.hypotheses) for r in got} == {1}
    assert recording.calls[0] == (len(pieces), max(caps_of(pieces)), 4)  # the joint call
    redone = sum(n for n, _, _ in recording.calls[1:])
    assert 0 < redone < len(SOURCES)  # some sources kept the joint call's result
    recording.calls.clear()
    assert client.translate_pieces(pieces, 32, EXTRA) == [r.hypotheses[0] for r in expected]
    assert recording.calls[0][2] == 4


def test_a_servers_answer_does_not_depend_on_its_batch_mates(model_dir):
    """t2t-server's CTranslate2 engine at alpha=0 (beam 4, every beam and score
    written): each sentence translated alone and in one batch with the others and
    LONG gets the same beams."""
    engine = CT2Engine.load(ModelDir.open(model_dir),
                            f"beam_size=4,alpha=0,extra_length={EXTRA},"
                            "return_beams=true,write_beam_scores=true")
    alone = [engine.translate([source])[0] for source in SOURCES]
    together = engine.translate(SOURCES + [LONG])[:-1]
    assert [t.hypotheses for t in together] == [t.hypotheses for t in alone]
    assert [x for t in together for x in t.scores] == pytest.approx(
        [x for t in alone for x in t.scores], abs=1e-4)


def test_the_joint_call_only_where_ctranslate2s_stop_rule_makes_it_exact():
    """`joint_hypotheses`: the num_hypotheses the joint call asks for, None for one call
    per cap (CTranslate2's decoding.cc: beam search without early exit stops at
    round(beam_size x patience) finished hypotheses)."""
    beam = {"beam_size": 4, "length_penalty": 0.6}
    assert joint_hypotheses(beam) == 4
    assert joint_hypotheses(dict(beam, num_hypotheses=2)) == 4
    assert joint_hypotheses(dict(beam, num_hypotheses=4)) == 4
    assert joint_hypotheses(dict(beam, patience=1.5)) == 6
    assert joint_hypotheses(dict(beam, beam_size=3, patience=1.5)) == 5  # 4.5: half up
    assert joint_hypotheses(dict(beam, length_penalty=0.0)) is None       # early exit
    assert joint_hypotheses(dict(beam, coverage_penalty=0.2)) is None     # early exit too
    assert joint_hypotheses(dict(beam, sampling_topk=10)) is None
    assert joint_hypotheses(dict(beam, sampling_topk=10, sampling_temperature=0)) == 4
    # Greedy search stops where its one hypothesis ends, with or without a penalty.
    assert joint_hypotheses({"beam_size": 1, "length_penalty": 0.0}) == 1
    assert joint_hypotheses({"beam_size": 1, "length_penalty": 0.0, "sampling_topk": 0}) is None
