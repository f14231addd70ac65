"""Under bfloat16 the search casts each weight once, before its loop.

A layer casts its float32 weights to the compute dtype where it uses them; in
the search's loop that was once per step (for a 32,000-word vocabulary, the
embedding matrix twice a step), which made bfloat16 decoding slower than
float32. These tests read the traced loop (`search_graph.loop_body_nodes`) and
compare the search's outputs with those of the per-step casts.
"""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.decode import search as search_lib
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.search_graph import loop_body_nodes, reads_argument
from t2t_lite.model.layers import cast_weight, weights_cast_once

VOCAB = 40


@pytest.fixture(scope="module")
def bfloat16_model():
    keras.utils.set_random_seed(3)
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = t2t_lite.build_model(registry.hparams("transformer_tiny"), VOCAB)
    finally:
        keras.config.set_dtype_policy("float32")
    assert model.compute_dtype == "bfloat16"
    return model


def casts_of_loop_inputs(search, dtype):
    """Names of the loop body's Cast nodes to `dtype` whose input comes from outside
    the body's own function (loop variables and tensors captured from before the loop)."""
    return [node.name for function, node in loop_body_nodes(search)
            if node.op == "Cast" and node.attr["DstT"].type == dtype.as_datatype_enum
            and reads_argument(function, node)]


@pytest.mark.parametrize("beam_size", [1, 4])
def test_no_weight_is_cast_inside_the_bfloat16_loop(bfloat16_model, beam_size, monkeypatch):
    search = Search(bfloat16_model, SearchParams(beam_size=beam_size))
    assert casts_of_loop_inputs(search, tf.bfloat16) == []
    # The check sees the casts when the layers make them inside the loop
    # (what the search did before): one per weight a step uses, at least.
    monkeypatch.setattr(search_lib, "weights_cast_once", lambda casts: contextlib.nullcontext())
    per_step = casts_of_loop_inputs(Search(bfloat16_model, SearchParams(beam_size=beam_size)),
                                    tf.bfloat16)
    decoder_weights = sum(len(layer.weights) for layer in bfloat16_model.decoder_layers)
    assert len(per_step) >= decoder_weights // 2


@pytest.mark.parametrize("params", [SearchParams(beam_size=4, alpha=0.6),
                                    SearchParams(beam_size=1, min_length=3)])
def test_bfloat16_outputs_equal_those_of_per_step_casts(bfloat16_model, params, monkeypatch):
    inputs = tf.constant([[5, 9, 12, 7, 1], [3, 30, 1, 0, 0], [21, 1, 0, 0, 0]], tf.int32)
    ids, scores = Search(bfloat16_model, params).run(inputs)
    monkeypatch.setattr(search_lib, "weights_cast_once", lambda casts: contextlib.nullcontext())
    reference_ids, reference_scores = Search(bfloat16_model, params).run(inputs)
    np.testing.assert_array_equal(ids.numpy(), reference_ids.numpy())
    np.testing.assert_array_equal(scores.numpy(), reference_scores.numpy())


def test_float32_search_casts_nothing():
    keras.utils.set_random_seed(3)
    model = t2t_lite.build_model(registry.hparams("transformer_tiny"), VOCAB)
    seen = []
    real = search_lib.weights_cast_once

    def record(casts):
        seen.append(dict(casts))
        return real(casts)

    search = Search(model, SearchParams(beam_size=2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_lib, "weights_cast_once", record)
        search.run(tf.constant([[4, 1]]))
    assert seen == [{}]


def test_cast_weight_returns_the_copy_given_for_that_weight_and_dtype():
    weight = keras.Variable(np.array([1.5, -2.25], np.float32))
    other = keras.Variable(np.array([3.0], np.float32))
    copy = tf.constant([7.0, 8.0], tf.bfloat16)
    with weights_cast_once({(id(weight), tf.bfloat16): copy}):
        assert cast_weight(weight, "bfloat16") is copy
        # Another dtype or another weight: an ordinary cast.
        np.testing.assert_array_equal(cast_weight(weight, tf.float16).numpy(), [1.5, -2.25])
        np.testing.assert_array_equal(cast_weight(other, tf.bfloat16).numpy(), [3.0])
    np.testing.assert_array_equal(cast_weight(weight, tf.bfloat16).numpy(), [1.5, -2.25])
