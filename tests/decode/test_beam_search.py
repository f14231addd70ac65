"""Beam search on hand-made probability trees (tests/decode/probability_trees.py):
search results, length penalties, stopping rules, the cache's reordering, compiled
and eager runs."""

import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
from t2t_lite.decode.sampling import greedy_search
from t2t_lite.errors import T2TError

from probability_trees import (A, B, C, EOS, HISTORY, PAD, TREE_GREEDY_TRAP, TREE_SHORT_LONG,
                               TREE_SURE_EOS, VOCAB, TreeModel, gnmt, run_beam)


def test_beam_beats_greedy_on_the_trap_tree():
    model = TreeModel(TREE_GREEDY_TRAP)
    ids, scores = run_beam(model, [0])
    np.testing.assert_array_equal(ids, [[[B, EOS, PAD, PAD], [A, EOS, PAD, PAD]]])
    np.testing.assert_allclose(scores, [[math.log(0.4 * 0.9), math.log(0.5 * 0.4)]], rtol=1e-6)

    greedy_ids, greedy_log_probs = greedy_search(model, tf.zeros([1], tf.int32), 4, EOS,
                                                 model.cache([0]))
    np.testing.assert_array_equal(greedy_ids, [[A, EOS, PAD, PAD]])
    np.testing.assert_allclose(greedy_log_probs, [math.log(0.2)], rtol=1e-6)


@pytest.mark.parametrize("alpha,penalty,winner,runner_up", [
    (0.0, "gnmt", [A, EOS, PAD], [B, C, EOS]),
    (1.0, "gnmt", [A, EOS, PAD], [B, C, EOS]),   # (8/7)^1 = 1.14 < 1.165: not enough
    (2.0, "gnmt", [B, C, EOS], [A, EOS, PAD]),   # (8/7)^2 = 1.31 > ln(.304) / ln(.36)
    (0.3, "fairseq", [A, EOS, PAD], [B, C, EOS]),  # (3/2)^0.3 = 1.13
    (0.6, "fairseq", [B, C, EOS], [A, EOS, PAD]),  # (3/2)^0.6 = 1.28
])
def test_alpha_picks_short_or_long_as_the_tree_says(alpha, penalty, winner, runner_up):
    def score(log_p, length):
        divisor = gnmt(length, alpha) if penalty == "gnmt" else length ** alpha
        return log_p / divisor

    expected = {(A, EOS, PAD): score(math.log(0.36), 2), (B, C, EOS): score(math.log(0.304), 3)}
    model = TreeModel(TREE_SHORT_LONG)
    ids, scores = run_beam(model, [0], max_len=5, alpha=alpha, length_penalty=penalty)
    np.testing.assert_array_equal(ids[0, :, :3], [winner, runner_up])
    assert not ids[0, :, 3:].any()
    np.testing.assert_allclose(scores[0], [expected[tuple(winner)], expected[tuple(runner_up)]],
                               rtol=1e-6)


@pytest.mark.parametrize("compact", [False, True])
def test_first_step_runs_on_one_row_per_example_before_the_beam_expands(compact):
    # Every beam of an example would extend the same empty hypothesis from the
    # same cache at step 0: one row per example computes it. Later steps run
    # every beam (all examples: without stop_early none stops before max_len).
    model = TreeModel(TREE_SHORT_LONG, TREE_GREEDY_TRAP)
    rows_seen = []

    def counting(ids, step, cache):
        rows_seen.append(int(tf.shape(ids)[0]))
        return model(ids, step, cache)

    ids, scores, row_steps = beam_search(
        counting, tf.zeros([2], tf.int32), 3, 4, VOCAB, 0.0, eos_id=EOS,
        cache=model.cache([0, 1]), stop_early=False, compact=compact, return_row_steps=True)
    assert rows_seen == [2, 6, 6, 6]
    assert int(row_steps) == 2 + 3 * 6
    # The same hypotheses as trees' own beam search, example by example.
    for example, tree in enumerate([0, 1]):
        alone_ids, alone_scores = run_beam(TreeModel(TREE_SHORT_LONG, TREE_GREEDY_TRAP), [tree],
                                           beam_size=3, max_len=4, stop_early=False)
        np.testing.assert_array_equal(ids[example], alone_ids[0])
        np.testing.assert_allclose(scores[example], alone_scores[0], rtol=1e-6)


def test_early_stop_saves_calls_and_keeps_the_result():
    eager = TreeModel(TREE_GREEDY_TRAP)
    ids, scores = run_beam(eager, [0], max_len=4, stop_early=True)
    # Step 1 finishes "b EOS" and "a EOS"; the best alive "a a" (0.175) < 0.2: stop.
    assert int(eager.calls.numpy()) == 2
    full = TreeModel(TREE_GREEDY_TRAP)
    ids_full, scores_full = run_beam(full, [0], max_len=4, stop_early=False)
    assert int(full.calls.numpy()) == 4
    np.testing.assert_array_equal(ids, ids_full)
    np.testing.assert_allclose(scores, scores_full)


def test_early_stop_bound_uses_the_best_length_penalty():
    # alpha = 2: after step 2, "b c c" (0.076) at the maximum length 5 could score
    # ln(.076) / gnmt(5, 2) = -0.928 < -0.7506 ("a EOS"), the worst finished: stop after 3 calls.
    model = TreeModel(TREE_SHORT_LONG)
    run_beam(model, [0], max_len=5, alpha=2.0)
    assert int(model.calls.numpy()) == 3
    # With max length 9 the bound ln(.076) / gnmt(9, 2) = -0.473 keeps the search
    # going one more step (then only dead beams are alive).
    longer = TreeModel(TREE_SHORT_LONG)
    ids, _ = run_beam(longer, [0], max_len=9, alpha=2.0)
    assert int(longer.calls.numpy()) == 4
    np.testing.assert_array_equal(ids[0, :, :3], [[B, C, EOS], [A, EOS, PAD]])


def test_early_stop_fills_empty_slots_with_the_alive_beams():
    # Example 0 stops after one step with "EOS" finished and "a" alive (0.1 < 0.9);
    # example 1 runs on for 3 steps (alpha = 0.6: after step 1 "a a" could still
    # reach ln(.175) / gnmt(4) = -1.367 > ln(.2) / gnmt(2) = -1.467), and example
    # 0's alive beam must stay as it was.
    model = TreeModel(TREE_SURE_EOS, TREE_GREEDY_TRAP)
    ids, scores = run_beam(model, [0, 1], max_len=4, alpha=0.6)
    assert int(model.calls.numpy()) == 3
    np.testing.assert_array_equal(ids[0], [[EOS, 0, 0, 0], [A, 0, 0, 0]])
    np.testing.assert_allclose(scores[0], np.log([0.9, 0.1]) / gnmt(1, 0.6), rtol=1e-6)


def test_eos_ends_hypotheses_and_pads_after():
    model = TreeModel(TREE_SHORT_LONG)
    ids, _ = run_beam(model, [0], beam_size=3, max_len=6, stop_early=False)
    for hyp in ids[0]:
        end = list(hyp).index(EOS)
        assert (hyp[:end] != EOS).all() and (hyp[end + 1:] == PAD).all()


def test_n_best_is_sorted_and_complete():
    model = TreeModel(TREE_GREEDY_TRAP)
    ids, scores = run_beam(model, [0], beam_size=3, max_len=4, stop_early=False)
    # Every finished hypothesis of a 3-beam search on this tree, best three.
    np.testing.assert_array_equal(ids[0], [[B, EOS, 0, 0], [A, EOS, 0, 0], [A, A, EOS, 0]])
    np.testing.assert_allclose(scores[0], np.log([0.36, 0.2, 0.1575]), rtol=1e-6)
    assert (np.diff(scores[0]) <= 0).all()


def test_per_example_maximum_lengths():
    model = TreeModel(TREE_SHORT_LONG, TREE_SHORT_LONG)
    ids, scores = run_beam(model, [0, 1], max_len=np.array([2, 5]))
    # Example 0 stops at 2 tokens: "b c" (0.38) is cut off there without EOS, so it
    # loses to the two hypotheses that ended, "a EOS" (0.36) and "b EOS" (0.4 * 0.05).
    np.testing.assert_array_equal(ids[0], [[A, EOS, 0, 0, 0], [B, EOS, 0, 0, 0]])
    np.testing.assert_allclose(scores[0], np.log([0.36, 0.02]), rtol=1e-6)
    np.testing.assert_array_equal(ids[1], [[A, EOS, 0, 0, 0], [B, C, EOS, 0, 0]])
    np.testing.assert_allclose(scores[1], np.log([0.36, 0.304]), rtol=1e-6)


# "a c c ..." never ends within 3 tokens but is far more likely than anything
# that does: "a c c" 0.95 * 0.9 * 0.9 = 0.7695 against "a EOS" 0.095, "b EOS" 0.05.
TREE_LOOP = {
    (): {A: 0.95, B: 0.05},
    (A,): {C: 0.9, EOS: 0.1},
    (B,): {EOS: 1.0},
    (A, C): {C: 0.9, B: 0.1},
}


def test_an_unfinished_hypothesis_never_beats_a_finished_one():
    # By hand (max length 3, beam 2, alpha 0): step 1 finishes "a EOS" and
    # "b EOS"; step 3 reaches the maximum length with "a c c" (ln 0.7695 =
    # -0.262) and "a c b" alive, unfinished. The result is the two finished
    # hypotheses, as in tensor2tensor; under the old rule "a c c" won.
    model = TreeModel(TREE_LOOP)
    for stop_early in (True, False):
        ids, scores = run_beam(model, [0], beam_size=2, max_len=3, stop_early=stop_early)
        np.testing.assert_array_equal(ids[0], [[A, EOS, 0], [B, EOS, 0]])
        np.testing.assert_allclose(scores[0], np.log([0.095, 0.05]), rtol=1e-6)
    # With one finished hypothesis for two slots, the best alive one fills the second.
    ids, scores = run_beam(TreeModel({**TREE_LOOP, (): {A: 1.0}}), [0], beam_size=2, max_len=3)
    np.testing.assert_array_equal(ids[0], [[A, EOS, 0], [A, C, C]])
    np.testing.assert_allclose(scores[0], np.log([0.1, 0.81]), rtol=1e-6)
    # With no finished hypothesis at all, the alive ones are returned, best first.
    ids, scores = run_beam(TreeModel({(): {A: 0.6, C: 0.4}, (A,): {A: 0.7, C: 0.3},
                                      (C,): {A: 1.0}}), [0], beam_size=2, max_len=2)
    np.testing.assert_array_equal(ids[0], [[A, A], [C, A]])
    np.testing.assert_allclose(scores[0], np.log([0.42, 0.4]), rtol=1e-6)


def test_each_example_gets_its_own_cache_rows():
    model = TreeModel(TREE_GREEDY_TRAP, TREE_SHORT_LONG)
    ids, scores = run_beam(model, [0, 1], max_len=4)
    np.testing.assert_array_equal(ids[0], [[B, EOS, 0, 0], [A, EOS, 0, 0]])
    np.testing.assert_array_equal(ids[1], [[A, EOS, 0, 0], [B, C, EOS, 0]])
    np.testing.assert_allclose(scores, np.log([[0.36, 0.2], [0.36, 0.304]]), rtol=1e-6)


def test_cache_history_follows_the_surviving_beams():
    model = TreeModel(TREE_SHORT_LONG, history_rows=2)
    ids, _ = run_beam(model, [0], max_len=3, stop_early=False)
    # At the last step the alive beams are "b c" (0.38) and "a c" (0.24); the
    # cache history each row saw must be exactly that prefix.
    np.testing.assert_array_equal(model.last_history.numpy()[:, :2], [[B, C], [A, C]])
    np.testing.assert_array_equal(ids[0, 1], [B, C, EOS])  # made at that last step
    assert list(ids[0, 1, :2]) in model.last_history.numpy()[:, :2].tolist()


@pytest.mark.parametrize("jit", [False, True])
def test_compiled_search_matches_eager(jit):
    model = TreeModel(TREE_GREEDY_TRAP, TREE_SHORT_LONG)
    expected_ids, expected_scores = run_beam(model, [0, 1], beam_size=3, max_len=5, alpha=0.6)

    @tf.function(jit_compile=jit)
    def decode(max_lengths):  # a tensor: its value is unknown while tracing
        return beam_search(model, tf.zeros([2], tf.int32), 3, max_lengths, VOCAB, 0.6, EOS,
                           model.cache([0, 1]), buffer_length=5)

    ids, scores = decode(tf.constant([5, 5]))
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6)

    @tf.function(jit_compile=jit)
    def decode_greedy():
        return greedy_search(model, tf.zeros([2], tf.int32), 5, EOS, model.cache([0, 1]))

    np.testing.assert_array_equal(decode_greedy()[0], [[A, EOS, 0, 0, 0]] * 2)


def test_dynamic_lengths_in_plain_tf_function():
    # The translator's case: batch size and maximum lengths known only at run time.
    model = TreeModel(TREE_GREEDY_TRAP, TREE_SHORT_LONG)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def decode(max_lengths):
        tree_ids = tf.range(tf.shape(max_lengths)[0])
        cache = {"code": tf.zeros_like(tree_ids), "history": tf.zeros([2, HISTORY], tf.int32),
                 "static": {"tree": tree_ids}}
        return beam_search(model, tf.zeros_like(max_lengths), 2, max_lengths, VOCAB, 0.0, EOS,
                           cache)

    ids, scores = decode(tf.constant([4, 2]))
    # Example 1 stops at 2 tokens, where "b c" (0.38) is unfinished and loses to
    # "a EOS" (0.36) and "b EOS" (0.02), which ended.
    np.testing.assert_array_equal(ids, [[[B, EOS, 0, 0], [A, EOS, 0, 0]],
                                        [[A, EOS, 0, 0], [B, EOS, 0, 0]]])
    np.testing.assert_allclose(scores, np.log([[0.36, 0.2], [0.36, 0.02]]), rtol=1e-6)


# "EOS" ends half the time at once; "a EOS" 0.3; "a b EOS" 0.2.
TREE_EARLY_PAIR = {(): {EOS: 0.5, A: 0.5}, (A,): {EOS: 0.6, B: 0.4}}


def test_beam_full_stops_at_beam_size_finished_where_t2t_searches_on():
    # alpha 2, maximum length 10: after 2 steps the finished are "EOS"
    # (ln .5 / gnmt(1, 2) = -0.693) and "a EOS" (ln .3 / gnmt(2, 2) = -0.885); t2t's
    # bound for the alive "a b", ln .2 / gnmt(10, 2) = -0.258, is better than
    # -0.885, so t2t takes a third step ("a b EOS": ln .2 / gnmt(3, 2) = -0.905, not
    # in the best 2), while beam_full stops at 2 finished. Same result, one call less.
    expected_ids = [[[EOS] + [PAD] * 9, [A, EOS] + [PAD] * 8]]
    expected_scores = [[math.log(0.5) / gnmt(1, 2.0), math.log(0.3) / gnmt(2, 2.0)]]
    for rule, calls in (("t2t", 3), ("beam_full", 2)):
        model = TreeModel(TREE_EARLY_PAIR)
        ids, scores = run_beam(model, [0], beam_size=2, max_len=10, alpha=2.0, stop_rule=rule)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_allclose(scores, expected_scores, rtol=1e-6)
        assert int(model.calls.numpy()) == calls, rule
    with pytest.raises(T2TError, match="Unknown stop_rule 'ctranslate2'"):
        run_beam(TreeModel(TREE_EARLY_PAIR), [0], stop_rule="ctranslate2")
