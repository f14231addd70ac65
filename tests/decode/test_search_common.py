"""The searches' shared helpers (`t2t_lite.decode.search_common`): length penalties and
the chunked top-k."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
from t2t_lite.decode.search_common import length_penalty, top_k_by_chunks
from t2t_lite.errors import T2TError

from probability_trees import TREE_SHORT_LONG, VOCAB, TreeModel


def test_length_penalty_values_and_unknown_name():
    np.testing.assert_allclose(length_penalty(7, 0.6), (12 / 6) ** 0.6, rtol=1e-6)
    np.testing.assert_allclose(length_penalty(7, 0.6, "fairseq"), 7 ** 0.6, rtol=1e-6)
    with pytest.raises(T2TError, match="Did you mean 'gnmt'"):
        beam_search(TreeModel(TREE_SHORT_LONG), tf.zeros([1], tf.int32), 2, 3, VOCAB, 0.6,
                    length_penalty="gmnt")



@pytest.mark.parametrize("vocab,k", [(5000, 8), (4096, 8), (32000, 4), (300, 8)])
def test_top_k_by_chunks_equals_top_k(vocab, k):
    x = tf.constant(np.random.default_rng(vocab).normal(size=[6, vocab]).astype(np.float32))
    expected = tf.math.top_k(x, k=k)
    values, indices = top_k_by_chunks(x, k)
    np.testing.assert_array_equal(values, expected.values)
    np.testing.assert_array_equal(indices, expected.indices)
    compiled = tf.function(top_k_by_chunks, jit_compile=True)(x, k)
    np.testing.assert_array_equal(compiled[1], expected.indices)

