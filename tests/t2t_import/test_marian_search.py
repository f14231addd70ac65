"""A Marian model loaded into t2t-lite decodes as transformers' `MarianMTModel.generate`
does with OPUS-MT's generation settings.

The expected outputs are transformers 5.23's own (tests/t2t_import/marian/*/expected/,
see that folder's README): greedy ids, and for beam search with and without
`renormalize_logits` the best ids, `sequences_scores` and the n-best lists. Every line
of `input.ids` is decoded from its ids (renumbered as the import does, no vocabulary
needed) as one batch, with the decode hparams that are transformers' settings:
stop_rule=transformers, length_penalty=fairseq with alpha 1.0, forbid_pad (its
bad_words_ids [[pad]]), forced_eos, renormalize, max_output_length 511 (its max_length
512 counts the start token). separate_relu's beam search runs with renormalize only
(the two settings give these models the same ids and scores within 1e-5: see the
README; tests/decode/test_transformers_search.py tells them apart).
"""

import pathlib

import numpy as np
import pytest

from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.marian.loader import load_model

MARIAN = pathlib.Path(__file__).parent / "marian"
BEAMS = {"shared_swish": 4, "multilingual_gelu": 6, "separate_relu": 4}
TRANSFORMERS = dict(stop_rule="transformers", length_penalty="fairseq", alpha=1.0,
                    forbid_pad=True, forced_eos=True, max_output_length=511,
                    max_input_length=-1)


@pytest.fixture(scope="module")
def marian():
    """name -> (LoadedMarian, t2t-lite inputs int32 [lines, longest]), each model loaded once."""
    models = {}

    def get(name):
        if name not in models:
            loaded = load_model(str(MARIAN / name))
            lines = [[int(t) for t in line.split()] for line in read(name, "input.ids")]
            inputs = np.zeros([len(lines), max(map(len, lines))], np.int32)  # PAD_ID = 0
            for i, line in enumerate(lines):
                inputs[i, :len(line)] = loaded.source_ids[line]
            models[name] = loaded, inputs
        return models[name]

    return get


def read(name: str, file: str):
    return (MARIAN / name / "expected" / file).read_text().splitlines()


def decode(loaded, inputs, **params):
    """Marian target ids of each line's hypotheses ([lines][beam] lists, up to and
    including </s>) and their scores float32 [lines, beam]."""
    ids, scores = Search(loaded.model, SearchParams(**{**TRANSFORMERS, **params})).run(inputs)
    to_marian = np.argsort(loaded.target_ids)  # t2t-lite id -> Marian id
    hypotheses = [[to_marian[row[:list(row).index(1) + 1]].tolist() for row in line]
                  for line in ids.numpy()]  # every hypothesis ends with </s> (forced)
    return hypotheses, scores.numpy()


@pytest.mark.parametrize("name", sorted(BEAMS))
def test_greedy_equals_transformers(marian, name):
    loaded, inputs = marian(name)
    hypotheses, _ = decode(loaded, inputs, beam_size=1)
    expected = [[int(t) for t in line.split()] for line in read(name, "greedy.ids")]
    assert [line[0] for line in hypotheses] == expected


@pytest.mark.parametrize("name,renormalize", [
    ("multilingual_gelu", True), ("multilingual_gelu", False), ("separate_relu", True),
    ("shared_swish", True), ("shared_swish", False)])
def test_beam_search_equals_transformers_nbest_and_scores(marian, name, renormalize):
    loaded, inputs = marian(name)
    beam = BEAMS[name]
    prefix = f"beam{beam}" if renormalize else f"beam{beam}.no_renormalize"
    hypotheses, scores = decode(loaded, inputs, beam_size=beam, renormalize=renormalize)
    best = [[int(t) for t in line.split()] for line in read(name, f"{prefix}.ids")]
    assert [line[0] for line in hypotheses] == best
    np.testing.assert_allclose(scores[:, 0], [float(s) for s in read(name, f"{prefix}.scores")],
                               rtol=0, atol=1e-5)
    for i, line in enumerate(read(name, f"{prefix}.nbest")):
        entries = [entry.split("|") for entry in line.split("\t")]
        assert hypotheses[i] == [[int(t) for t in ids.split()] for ids, _ in entries], i
        np.testing.assert_allclose(scores[i], [float(score) for _, score in entries],
                                   rtol=0, atol=1e-5, err_msg=f"line {i}")


def test_max_output_length_cuts_every_output_with_the_forced_eos(marian):
    # Greedy picks each token regardless of the limit, so transformers' greedy output
    # under max_length 4 is its recorded one cut to 2 tokens and the forced </s>.
    loaded, inputs = marian("shared_swish")
    hypotheses, _ = decode(loaded, inputs, beam_size=1, max_output_length=3, extra_length=0)
    eos = int(np.argsort(loaded.target_ids)[1])  # Marian's </s>
    greedy = [[int(t) for t in line.split()] for line in read("shared_swish", "greedy.ids")]
    assert sum(len(g) > 3 for g in greedy) == 46  # lines the limit cuts
    assert [line[0] for line in hypotheses] == [g if len(g) <= 3 else g[:2] + [eos]
                                                for g in greedy]
