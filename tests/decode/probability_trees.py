"""Hand-made probability trees as a search's next-token callback, for the search tests.

Vocabulary: 0 PAD (start symbol), 1 EOS, 2 a, 3 b, 4 c. A tree maps a prefix of
output tokens to its next-token distribution; prefixes not listed end with
EOS for sure. The callback finds the prefix from a code kept in the cache (not
from `ids`), so a wrong cache reordering gives wrong probabilities.
"""

import math

import numpy as np
import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
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
