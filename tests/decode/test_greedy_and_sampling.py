"""Greedy decoding, the minimum length and sampling on hand-made probability trees
(tests/decode/probability_trees.py)."""

import math

import numpy as np
import tensorflow as tf

from t2t_lite.decode.beam_search import _beam_search_loop, beam_search
from t2t_lite.decode.sampling import greedy_search, sample
from t2t_lite.decode.search_common import forbid_eos_before

from probability_trees import (A, B, C, EOS, PAD, TREE_GREEDY_TRAP, TREE_SHORT_LONG, VOCAB,
                               TreeModel, gnmt)


def test_min_length_forbids_eos_and_renormalises():
    # With EOS forbidden at steps 0 and 1 the trap tree's probabilities become
    # () -> a 5/9, b 4/9; (a,) -> a 0.35/0.6, b 0.25/0.6; (b,) -> c 1.
    model = TreeModel(TREE_GREEDY_TRAP)
    step_fn = forbid_eos_before(model, min_length=2, eos_id=EOS)
    start = tf.zeros([1], tf.int32)
    ids, log_probs = greedy_search(step_fn, start, 4, EOS, model.cache([0]))
    np.testing.assert_array_equal(ids, [[A, A, EOS, PAD]])
    np.testing.assert_allclose(log_probs, [math.log(5 / 9 * 0.35 / 0.6 * 0.9)], rtol=1e-6)
    ids, scores = beam_search(step_fn, start, 2, 4, VOCAB, 0.0, EOS, model.cache([0]))
    np.testing.assert_array_equal(ids[0], [[B, C, EOS, PAD], [A, A, EOS, PAD]])
    np.testing.assert_allclose(scores[0], np.log([4 / 9, 5 / 9 * 0.35 / 0.6 * 0.9]), rtol=1e-6)
    assert forbid_eos_before(model, 0) is model


def test_beam_size_one_is_greedy():
    model = TreeModel(TREE_GREEDY_TRAP, TREE_SHORT_LONG)
    cache = model.cache([0, 1])
    start = tf.zeros([2], tf.int32)
    greedy_ids, greedy_log_probs = greedy_search(model, start, 5, EOS, cache)
    np.testing.assert_array_equal(greedy_ids, [[A, EOS, 0, 0, 0], [A, EOS, 0, 0, 0]])
    for alpha in (0.0, 0.6, 2.0):
        ids, scores = beam_search(model, start, 1, 5, VOCAB, alpha, EOS, cache)
        np.testing.assert_array_equal(ids[:, 0], greedy_ids)
        np.testing.assert_allclose(scores[:, 0], greedy_log_probs / gnmt(2, alpha), rtol=1e-6)
    # The general alive/finished loop with one beam agrees when alpha is 0.
    ids, scores = _beam_search_loop(model, start, 1, 5, VOCAB, 0.0, EOS, cache, "gnmt", True,
                                    None)
    np.testing.assert_array_equal(ids[:, 0], greedy_ids)
    np.testing.assert_allclose(scores[:, 0], greedy_log_probs, rtol=1e-6)



def test_sampling_top_k_temperature_and_seed():
    model = TreeModel(TREE_GREEDY_TRAP)
    n = 2000
    start = tf.zeros([n], tf.int32)
    cache = model.cache([0] * n)
    ids, log_probs = sample(model, start, 1, temperature=1.0, seed=(1, 2), eos_id=EOS,
                            cache=cache)
    counts = np.bincount(ids.numpy()[:, 0], minlength=VOCAB) / n
    np.testing.assert_allclose(counts[[A, B, EOS]], [0.5, 0.4, 0.1], atol=0.04)
    root = {A: 0.5, B: 0.4, EOS: 0.1}
    np.testing.assert_allclose(log_probs, [math.log(root[t]) for t in ids.numpy()[:, 0]],
                               rtol=1e-6)
    again, _ = sample(model, start, 1, temperature=1.0, seed=(1, 2), eos_id=EOS, cache=cache)
    np.testing.assert_array_equal(ids, again)
    top2, _ = sample(model, start, 1, temperature=1.0, top_k=2, seed=(3, 4), eos_id=EOS,
                     cache=cache)
    assert set(np.unique(top2.numpy()[:, 0])) == {A, B}
    top1, _ = sample(model, start[:4], 4, top_k=1, seed=(5, 6), eos_id=EOS,
                     cache=model.cache([0] * 4))
    np.testing.assert_array_equal(top1, [[A, EOS, 0, 0]] * 4)
    cold, _ = sample(model, start[:4], 4, temperature=1e-3, seed=(5, 6), eos_id=EOS,
                     cache=model.cache([0] * 4))
    np.testing.assert_array_equal(cold, [[A, EOS, 0, 0]] * 4)
