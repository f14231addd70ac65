"""Constrained decoding of linearized trees, on hand-made vocabularies and logits."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
from t2t_lite.decode import search_common
from t2t_lite.parsing import tree_constraint as tc
from t2t_lite.errors import T2TError

#          0        1       2       3       4      5      6       7
PIECES = ["<pad>", "</s>", "▁(S", "▁)", "▁NN", "▁,", "▁the", "▁(NP"]
WHOLE = [2, 3, 4, 5, 7]


def test_token_kinds_from_whole_pieces():
    kinds = tc.token_kinds(PIECES, WHOLE)
    assert kinds.tolist() == [tc.OTHER, tc.EOS, tc.OPEN, tc.CLOSE, tc.SLOT, tc.PUNCT_SLOT,
                              tc.OTHER, tc.OPEN]


def test_a_vocabulary_without_tree_tokens_is_a_one_line_error():
    with pytest.raises(T2TError, match="re-run t2t-datagen"):
        tc.token_kinds(PIECES, [])


def test_word_classes_padded_with_either():
    classes = tc.word_classes(tf.constant(["Hello , world .", "' x2 -- % ``", ""]))
    assert classes.numpy().tolist() == [
        [tc.WORD, tc.PUNCTUATION, tc.WORD, tc.PUNCTUATION, tc.EITHER, tc.EITHER],
        [tc.EITHER, tc.WORD, tc.PUNCTUATION, tc.WORD, tc.PUNCTUATION, tc.EITHER],
        [tc.EITHER] * 6]


def _fixed_preferences(order):
    """A logits callback preferring the same ids every step: `order` best first."""
    logits = np.zeros([len(PIECES)], np.float32)
    for rank, token in enumerate(order):
        logits[token] = 10.0 - rank

    def step_fn(ids, step, cache):
        return tf.tile(tf.constant(logits)[tf.newaxis], [tf.shape(ids)[0], 1]), cache

    return step_fn


def _search(step_fn, texts, beam_size, max_length=20, constrained=True):
    cache = {}
    if constrained:
        constraint = tc.TreeConstraint(tc.token_kinds(PIECES, WHOLE))
        step_fn = search_common.constrained(step_fn, constraint)
        cache = {search_common.CONSTRAINT_KEY: tc.initial_state(tf.constant(texts))}
    ids, _ = beam_search(step_fn, tf.zeros([len(texts)], tf.int32), beam_size,
                         max_length, len(PIECES), 0.0, eos_id=1, cache=cache)
    return [[t for t in row if t != 0] for row in ids[:, 0].numpy().tolist()]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_the_only_well_formed_tree_replaces_an_immediate_eos(beam_size):
    # Best first: EOS, a source piece, ")", ",", NN, "(S". Unconstrained, the
    # search stops at once; constrained, the words "dog ," need one root, a
    # word slot (not ","), then a punctuation slot, then ")" and EOS.
    step_fn = _fixed_preferences([1, 6, 3, 5, 4, 2])
    assert _search(step_fn, ["dog ,"], beam_size, constrained=False) == [[1]]
    assert _search(step_fn, ["dog ,"], beam_size) == [[2, 4, 5, 3, 1]]


def test_opening_brackets_stop_after_a_run_of_max_open_run():
    step_fn = _fixed_preferences([7, 4, 3, 1])  # "(NP" above all
    run = tc.MAX_OPEN_RUN
    assert _search(step_fn, ["dog"], 1) == [[7] * run + [4] + [3] * run + [1]]


def test_rows_are_constrained_by_their_own_words():
    step_fn = _fixed_preferences([1, 3, 4, 5, 2])
    assert _search(step_fn, ["a b", ". ,", ""], 2) == [
        [2, 4, 4, 3, 1],
        [2, 5, 5, 3, 1],
        [1]]
