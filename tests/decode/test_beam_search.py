"""Beam search, greedy decoding and sampling on hand-made probability trees.

Vocabulary: 0 PAD (start symbol), 1 EOS, 2 a, 3 b, 4 c. A tree maps a prefix of
output tokens to its next-token distribution; prefixes not listed end with
EOS for sure. The callback finds the prefix from a code kept in the cache (not
from `ids`), so a wrong cache reordering gives wrong probabilities.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.beam_search import _beam_search_loop, beam_search
from t2t_lite.decode.sampling import greedy_search, sample
from t2t_lite.decode.search_common import forbid_eos_before, length_penalty, top_k_by_chunks
from t2t_lite.errors import T2TError
from t2t_lite.tensors import write_at_last_axis

PAD, EOS, A, B, C = 0, 1, 2, 3, 4
VOCAB = 5
# Prefix codes are base-6 numbers of (token + 1); trees are at most 2 deep, so
# every prefix of 4 tokens or more shares the last row (sure EOS).
NUM_CODES = (VOCAB + 1) ** 3 + 1
HISTORY = 10  # width of the token history kept in the cache

# Greedy takes "a EOS" (0.5 * 0.4 = 0.2); beam 2 finds "b EOS" (0.4 * 0.9 = 0.36).
TREE_GREEDY_TRAP = {
    (): {A: 0.5, B: 0.4, EOS: 0.1},
    (A,): {EOS: 0.4, A: 0.35, B: 0.25},
    (B,): {EOS: 0.9, C: 0.1},
    (A, A): {EOS: 0.9, C: 0.1},
    (A, B): {EOS: 0.6, C: 0.4},
}
# Short "a EOS" (0.36, length 2) against long "b c EOS" (0.4 * 0.95 * 0.8 = 0.304, length 3).
TREE_SHORT_LONG = {
    (): {A: 0.6, B: 0.4},
    (A,): {EOS: 0.6, C: 0.4},
    (A, C): {EOS: 1.0},
    (B,): {C: 0.95, EOS: 0.05},
    (B, C): {EOS: 0.8, C: 0.2},
}

# Ends at once with 0.9: early stop leaves one finished hypothesis for a beam of 2.
TREE_SURE_EOS = {(): {EOS: 0.9, A: 0.1}}


def prefix_code(prefix):
    code = 0
    for token in prefix:
        code = code * (VOCAB + 1) + token + 1
    return code


def log_prob_table(tree):
    """float32 [codes, vocab] of log probabilities (-inf for impossible tokens)."""
    table = np.full((NUM_CODES, VOCAB), -np.inf, np.float32)
    table[:, EOS] = 0.0
    for prefix, dist in tree.items():
        assert abs(sum(dist.values()) - 1) < 1e-9
        table[prefix_code(prefix)] = -np.inf
        for token, p in dist.items():
            table[prefix_code(prefix), token] = math.log(p)
    return table


class TreeModel:
    """A `symbols_to_logits_fn` over one tree per example, counting its calls."""

    def __init__(self, *trees, history_rows=None):
        self.tables = tf.constant(np.stack([log_prob_table(t) for t in trees]))
        self.calls = tf.Variable(0)
        # Any number of rows: the first step runs on one row per example.
        self.last_history = (tf.Variable(tf.zeros([history_rows, HISTORY], tf.int32),
                                         shape=tf.TensorShape([None, HISTORY]))
                             if history_rows else None)

    def cache(self, tree_ids):
        batch = len(tree_ids)
        return {"code": tf.zeros([batch], tf.int32),
                "history": tf.zeros([batch, HISTORY], tf.int32),
                "static": {"tree": tf.constant(tree_ids, tf.int32)}}

    def __call__(self, ids, step, cache):
        # ids is output token step - 1 (the start symbol at step 0).
        code = tf.where(step > 0, cache["code"] * (VOCAB + 1) + ids + 1, 0)  # [rows]
        code = tf.minimum(code, NUM_CODES - 1)
        history = write_at_last_axis(cache["history"], step - 1, ids)  # [rows, HISTORY]
        logits = tf.gather_nd(self.tables, tf.stack([cache["static"]["tree"], code], axis=1))
        self.calls.assign_add(1)
        if self.last_history is not None:
            self.last_history.assign(history)
        return logits, {"code": code, "history": history, "static": cache["static"]}


def gnmt(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def run_beam(model, tree_ids, beam_size=2, max_len=4, alpha=0.0, **kwargs):
    ids, scores = beam_search(model, tf.zeros([len(tree_ids)], tf.int32), beam_size, max_len,
                              VOCAB, alpha, eos_id=EOS, cache=model.cache(tree_ids), **kwargs)
    return ids.numpy(), scores.numpy()


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


def test_length_penalty_values_and_unknown_name():
    np.testing.assert_allclose(length_penalty(7, 0.6), (12 / 6) ** 0.6, rtol=1e-6)
    np.testing.assert_allclose(length_penalty(7, 0.6, "fairseq"), 7 ** 0.6, rtol=1e-6)
    with pytest.raises(T2TError, match="Did you mean 'gnmt'"):
        beam_search(TreeModel(TREE_SHORT_LONG), tf.zeros([1], tf.int32), 2, 3, VOCAB, 0.6,
                    length_penalty="gmnt")


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


@pytest.mark.parametrize("vocab,k", [(5000, 8), (4096, 8), (32000, 4), (300, 8)])
def test_top_k_by_chunks_equals_top_k(vocab, k):
    x = tf.constant(np.random.default_rng(vocab).normal(size=[6, vocab]).astype(np.float32))
    expected = tf.math.top_k(x, k=k)
    values, indices = top_k_by_chunks(x, k)
    np.testing.assert_array_equal(values, expected.values)
    np.testing.assert_array_equal(indices, expected.indices)
    compiled = tf.function(top_k_by_chunks, jit_compile=True)(x, k)
    np.testing.assert_array_equal(compiled[1], expected.indices)


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
