"""The Transformer's options for imported Marian models: attention biases, FFN
activations, unscaled embeddings, Marian's sinusoids, a logits bias, id 0 embedded
as its own row, a source table of its own size. Defaults keep the paper's model
(tests/model/test_model.py's parameter count); each option is checked here against
its formula, and the decoding paths (cache, folded beams) against the full pass."""

import math

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

from test_model import SOURCE, TARGET, incremental_logits

MARIAN_OPTIONS = dict(attention_bias=True, ffn_activation="gelu", scale_embedding=False,
                      timing_signal="marian", logits_bias=True, embed_padding=True)


def marian_like(vocab_size=40, **overrides):
    """A tiny model with every Marian option, every weight (biases too) random."""
    hp = registry.hparams("transformer_tiny").replace(**{**MARIAN_OPTIONS, **overrides})
    model = t2t_lite.build_model(hp, vocab_size)
    rng = np.random.default_rng(0)
    for weight in model.weights:
        weight.assign(rng.normal(0.0, 0.3, size=weight.shape).astype(np.float32))
    return model


def test_defaults_are_the_papers_model():
    hp = HParams()
    assert (hp.attention_bias, hp.ffn_activation, hp.scale_embedding, hp.timing_signal,
            hp.logits_bias, hp.embed_padding, hp.source_vocab_size) == (
                False, "relu", True, "paper", False, False, 0)


def test_marian_options_add_exactly_the_biases():
    hp = registry.hparams("transformer_tiny")  # d 128, 2 + 2 layers
    plain = t2t_lite.build_model(hp, 40).count_params()
    biased = t2t_lite.build_model(hp.replace(attention_bias=True, logits_bias=True),
                                  40).count_params()
    # q, k, v, out biases of 2 encoder self-, 2 decoder self- and 2 cross-attentions; 40 logits
    assert biased - plain == 6 * 4 * 128 + 40


@pytest.mark.parametrize("overrides", [{}, {"attention_key_channels": 64}])
def test_cached_incremental_decoding_equals_full_forward_pass(overrides):
    model = marian_like(**overrides)
    full = model({"inputs": SOURCE, "targets": TARGET}, training=False).numpy()
    for growing in (False, True):
        step_by_step = incremental_logits(model, SOURCE, TARGET, growing)
        np.testing.assert_allclose(step_by_step.numpy(), full, atol=1e-5)


def test_beams_folded_into_one_copy_of_the_memory_equal_the_full_pass():
    model, beam = marian_like(), 2
    sources, targets = tf.repeat(SOURCE, beam, axis=0), tf.repeat(TARGET, beam, axis=0)
    full = model({"inputs": sources, "targets": targets}).numpy()
    folded = incremental_logits(model, SOURCE, targets, growing=True, beam=beam)
    np.testing.assert_allclose(folded.numpy(), full, atol=1e-5)


def test_padding_embedded_as_a_row_changes_no_real_position():
    """With embed_padding, id 0 is a real row: source padding is still masked as keys,
    and target positions after the end do not feed earlier ones."""
    model = marian_like()
    assert np.abs(model.target_embedding(tf.constant([[0]])).numpy()).max() > 0.1
    a = model({"inputs": SOURCE, "targets": TARGET}).numpy()
    b = model({"inputs": tf.pad(SOURCE, [[0, 0], [0, 3]]),
               "targets": tf.pad(TARGET, [[0, 0], [0, 2]])}).numpy()
    np.testing.assert_allclose(a, b[:, :TARGET.shape[1]], atol=1e-5)
    # the second sentence's own positions (source 3 ids, target 3 ids) whatever pads it
    c = model({"inputs": SOURCE[1:2, :3], "targets": TARGET[1:2, :3]}).numpy()
    np.testing.assert_allclose(c[0], a[1, :3], atol=1e-5)


def test_embedding_scale_and_padding_row():
    from t2t_lite.model.layers import Embedding
    ids = tf.constant([[0, 3]])
    for scale, embed_padding in [(True, False), (False, True), (True, True)]:
        layer = Embedding(5, 4, scale=scale, embed_padding=embed_padding)
        layer.build(None)
        table = np.arange(20, dtype=np.float32).reshape(5, 4)
        layer.weights_matrix.assign(table)
        expected = table[[0, 3]] * (2.0 if scale else 1.0)  # sqrt(4)
        if not embed_padding:
            expected[0] = 0.0
        np.testing.assert_array_equal(layer(ids).numpy()[0], expected)


@pytest.mark.parametrize("activation, formula", [
    ("relu", lambda x: max(x, 0.0)),
    ("swish", lambda x: x / (1.0 + math.exp(-x))),
    ("gelu", lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))))])
def test_ffn_activations_follow_torchs_formulas(activation, formula):
    from t2t_lite.model.layers import ACTIVATIONS
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.5], np.float32)
    np.testing.assert_allclose(ACTIVATIONS[activation](tf.constant(x)).numpy(),
                               [formula(float(v)) for v in x], rtol=1e-6, atol=1e-7)


def test_marian_sinusoids_are_transformers_table_bit_for_bit():
    """MarianSinusoidalPositionalEmbedding.create_weight, written out: sin of the even
    channels' angles in the first half, cos of the odd ones' in the second."""
    from t2t_lite.model.layers import marian_sinusoids
    for depth in (8, 7):
        angles = np.array([[pos / np.power(10000, 2 * (j // 2) / depth) for j in range(depth)]
                           for pos in range(60)])
        half = (depth + 1) // 2
        expected = np.concatenate([np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])],
                                  axis=1).astype(np.float32)
        assert expected.shape[1] == depth and half == np.sin(angles[:, 0::2]).shape[1]
        np.testing.assert_array_equal(marian_sinusoids(np.arange(60), depth).numpy(), expected)
    assert marian_sinusoids(np.array([3]), 4).numpy()[0].tolist() == pytest.approx(
        [math.sin(3), math.sin(3 / 100), math.cos(3), math.cos(3 / 100)], abs=1e-7)


def test_logits_bias_is_added_to_the_logits():
    model = marian_like()
    bias = model.logits_bias.bias.numpy()
    with_bias = model({"inputs": SOURCE, "targets": TARGET}).numpy()
    model.logits_bias.bias.assign(np.zeros_like(bias))
    without = model({"inputs": SOURCE, "targets": TARGET}).numpy()
    np.testing.assert_allclose(with_bias - without, np.broadcast_to(bias, with_bias.shape),
                               atol=1e-5)


def test_a_source_table_of_its_own_size():
    hp = registry.hparams("transformer_tiny").replace(shared_embedding=False,
                                                      source_vocab_size=61)
    model = t2t_lite.build_model(hp, 51)
    assert model.source_embedding.weights_matrix.shape == (61, 128)
    assert model.target_embedding.weights_matrix.shape == (51, 128)
    logits = model({"inputs": tf.constant([[60, 59, 1]]), "targets": tf.constant([[50, 1]])})
    assert logits.shape == (1, 2, 51)


@pytest.mark.parametrize("overrides, message", [
    ({"ffn_activation": "gelu_new"}, "hparam 'ffn_activation' must be one of relu, swish, gelu"),
    ({"timing_signal": "sinusoid"}, "paper, tensor2tensor, marian, got 'sinusoid'"),
    ({"source_vocab_size": 61}, "'source_vocab_size' (61) needs shared_embedding=false"),
    ({"source_vocab_size": -1, "shared_embedding": False}, "'source_vocab_size' must be >= 0")])
def test_bad_option_values_are_refused(overrides, message):
    with pytest.raises(T2TError) as error:
        HParams().replace(**overrides)
    assert message in str(error.value)


def test_mixed_bfloat16_builds_with_every_option():
    import keras
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = marian_like()
        logits = model({"inputs": SOURCE, "targets": TARGET}, training=True)
        step_logits = incremental_logits(model, SOURCE, TARGET, growing=True)
    finally:
        keras.config.set_dtype_policy("float32")
    assert logits.dtype == step_logits.dtype == tf.float32
    assert all(v.dtype == "float32" for v in model.weights)
    assert model.decoder_layers[0].cross_attention.compute_dtype == "bfloat16"


def test_programs_that_would_drop_an_option_refuse_it():
    """Fine-tuning may not change an option (the weights would mean something else),
    and the CTranslate2 export, which does not write them, refuses a model using them."""
    from t2t_lite.export.ctranslate2_spec import check_convertible
    from t2t_lite.train.warm_start import ARCHITECTURE
    checked = {attribute for _, attribute in ARCHITECTURE}
    assert checked >= {"source_vocab_size", "attention_bias", "ffn_activation",
                       "scale_embedding", "logits_bias", "embed_padding", "timing_signal"}
    check_convertible(HParams(timing_signal="marian"))  # written out as a table: fine
    with pytest.raises(T2TError, match=r"does not write this model's attention_bias=True, "
                                       r"ffn_activation=gelu, scale_embedding=False, "
                                       r"logits_bias=True, embed_padding=True \(an imported"):
        check_convertible(HParams(**MARIAN_OPTIONS))
