"""Beam search and greedy decoding under Hugging Face transformers' rules
(stop_rule="transformers" and `LogitsProcessors`) against transformers' own outputs.

data/transformers_search.npz holds a table of next-token logits indexed by (example,
step, last token) and what transformers 5.23's `generate` returned over it (made by
make_transformers_search_reference.py, in the side venv: see its docstring): the
searches here read the same table and must return the same hypotheses, best first,
with transformers' `sequences_scores` within 1e-5.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
from t2t_lite.decode.logits_processors import LogitsProcessors
from t2t_lite.decode.search import SearchParams
from t2t_lite.errors import T2TError

REFERENCE = np.load(Path(__file__).parent / "data" / "transformers_search.npz")
SETTINGS = json.loads(str(REFERENCE["settings"]))
TABLE = tf.constant(REFERENCE["table"])  # [examples, steps, vocab (last token), vocab]
EXAMPLES, _, VOCAB, _ = REFERENCE["table"].shape


def table_logits(ids, step, cache):
    """Logits [rows, V] = table[example of the row, step, ids]; the example index is a
    per-row constant of the cache."""
    example = cache["static"]["example"]  # [rows]
    index = tf.stack([example, tf.fill(tf.shape(ids), step), ids], axis=1)  # [rows, 3]
    return tf.gather_nd(TABLE, index), cache


def search(beams, penalty, renormalize, max_length, forced, stop_rule="transformers",
           compact=False, run=lambda f: f()):
    """t2t-lite's search over the whole table as one batch, with transformers'
    settings; ids [examples, beams, max_length - 1] with -1 after the end, scores."""
    processors = LogitsProcessors(forbid_pad=True, forced_eos=forced, renormalize=renormalize)

    def go():
        cache = {"static": {"example": tf.range(EXAMPLES)}}
        return beam_search(table_logits, tf.zeros([EXAMPLES], tf.int32), beams,
                           max_length - 1, VOCAB, penalty, eos_id=1, cache=cache,
                           length_penalty="fairseq", stop_rule=stop_rule, compact=compact,
                           processors=processors)

    ids, scores = run(go)
    ids = np.where(ids.numpy() == 0, -1, ids.numpy())  # PAD is never generated here
    return ids, scores.numpy()


BEAM_CASES = [pytest.param(c, *config, id="beam{}_lp{}_{}_max{}_{}".format(
    config[0], config[1], "renorm" if config[2] else "raw", config[3],
    "forced" if config[4] else "free")) for c, config in enumerate(SETTINGS["configs"])]


@pytest.mark.parametrize("c,beams,penalty,renormalize,max_length,forced", BEAM_CASES)
def test_beam_search_returns_what_transformers_returns(c, beams, penalty, renormalize,
                                                       max_length, forced):
    ids, scores = search(beams, penalty, renormalize, max_length, forced,
                         compact=bool(c % 2))
    np.testing.assert_array_equal(ids, REFERENCE[f"beam{c}_ids"])
    np.testing.assert_allclose(scores, REFERENCE[f"beam{c}_scores"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["function", "xla"])
def test_the_rule_compiles_to_the_same_outputs(mode):
    c = 8  # beam 6, forced EOS, renormalized
    run = lambda f: tf.function(f, jit_compile=mode == "xla", autograph=False)()  # noqa: E731
    ids, scores = search(*SETTINGS["configs"][c], run=run)
    np.testing.assert_array_equal(ids, REFERENCE[f"beam{c}_ids"])
    np.testing.assert_allclose(scores, REFERENCE[f"beam{c}_scores"], rtol=0, atol=1e-5)


def differing_examples(c, **changes):
    beams, penalty, renormalize, max_length, forced = SETTINGS["configs"][c]
    settings = {**dict(beams=beams, penalty=penalty, renormalize=renormalize,
                       max_length=max_length, forced=forced), **changes}
    ids, scores = search(**settings)
    same_ids = (ids == REFERENCE[f"beam{c}_ids"]).all(axis=(1, 2))
    same_scores = (np.abs(scores - REFERENCE[f"beam{c}_scores"]) <= 1e-5).all(axis=1)
    return int(np.sum(~(same_ids & same_scores)))


def test_the_reference_tells_the_rules_and_processors_apart():
    # tensor2tensor's rule (EOS among all 2 * beam candidates finishes, cut-off
    # hypotheses stay alive, another stopping test) returns other n-best lists.
    assert sum(differing_examples(c, stop_rule="t2t") for c in (0, 4, 6, 9)) > 0
    # renormalize_logits moves the scores; the forced EOS the hypotheses.
    assert differing_examples(0, renormalize=False) > 0
    assert differing_examples(4, forced=False) > 0


@pytest.mark.parametrize("g", range(len(SETTINGS["greedy"])))
def test_greedy_decoding_returns_what_transformers_returns(g):
    max_length, forced = SETTINGS["greedy"][g]
    ids, _ = search(1, 0.0, True, max_length, forced)
    np.testing.assert_array_equal(ids[:, 0], REFERENCE[f"greedy{g}_ids"])


def test_decode_hparams_name_transformers_rules_and_they_default_off():
    assert SearchParams().processors == LogitsProcessors()
    assert not SearchParams().processors
    params = SearchParams().parse("stop_rule=transformers,forbid_pad=true,forced_eos=true,"
                                  "renormalize=true,max_output_length=511")
    assert (params.stop_rule, params.max_output_length) == ("transformers", 511)
    assert params.processors == LogitsProcessors(forbid_pad=True, forced_eos=True,
                                                 renormalize=True, pad_id=0, eos_id=1)
    with pytest.raises(T2TError, match="max_output_length must be >= 0"):
        SearchParams(max_output_length=-1)
    with pytest.raises(T2TError, match="Did you mean 'transformers'"):
        SearchParams(stop_rule="transformer")
