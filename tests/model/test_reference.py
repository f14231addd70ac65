"""The Keras layers against a NumPy reference written from the paper's equations.

The reference below is written from "Attention Is All You Need" (sections
3.1-3.5) and tensor2tensor's pre-norm variant, not from the code under test;
it is fed the Keras layers' own weights. It fails if sqrt(d_model), 1/sqrt(d_k),
the residual / layer-norm order or a mask changes. Also: the initial scale of
each fused projection, and k micro-batches against one batch.
"""

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.model.attention import causal_bias, padding_bias

VOCAB = 40
POST = "layer_preprocess_sequence=none,layer_postprocess_sequence=dan"
PRE = "layer_preprocess_sequence=n,layer_postprocess_sequence=da"
SMALL = "hidden_size=32,filter_size=48,num_heads=4,attention_key_channels=24"


# -- The reference -------------------------------------------------------------

def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def multi_head(xq, xkv, wq, wk, wv, wo, heads, allowed):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K,
    V W_i^V), Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V; `allowed` [B, T, S]."""
    d_k, d_v = wq.shape[1] // heads, wv.shape[1] // heads
    outs = []
    for i in range(heads):
        q = xq @ wq[:, i * d_k:(i + 1) * d_k]
        k = xkv @ wk[:, i * d_k:(i + 1) * d_k]
        v = xkv @ wv[:, i * d_v:(i + 1) * d_v]
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)  # [B, T, S]
        scores = np.where(allowed, scores, -np.inf)
        outs.append(softmax(scores) @ v)
    return np.concatenate(outs, -1) @ wo


def feed_forward(x, w1, b1, w2, b2):
    """FFN(x) = max(0, x W1 + b1) W2 + b2."""
    return np.maximum(0.0, x @ w1 + b1) @ w2 + b2


def sublayer(x, fn, norm, placement, eps):
    """Post-norm (the paper): LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x))."""
    gamma, beta = norm
    if placement == "post":
        return layer_norm(x + fn(x), gamma, beta, eps)
    return x + fn(layer_norm(x, gamma, beta, eps))


# -- The layers' weights, by name ------------------------------------------------

def _np(v):
    return v.numpy().astype(np.float64)


def attention_weights(attention, kc, vc):
    if attention.self_attention:
        qkv = _np(attention.qkv_kernel)
        return qkv[:, :kc], qkv[:, kc:2 * kc], qkv[:, 2 * kc:], _np(attention.output_kernel)
    kv = _np(attention.kv_kernel)
    return _np(attention.q_kernel), kv[:, :kc], kv[:, kc:], _np(attention.output_kernel)


def norm_weights(residual):
    return _np(residual.norm.gamma), _np(residual.norm.beta)


def ffn_weights(ff):
    return _np(ff.kernel_1), _np(ff.bias_1), _np(ff.kernel_2), _np(ff.bias_2)


def reference_encoder_layer(layer, x, allowed, hp):
    kc, vc, h, eps, where = (hp.key_channels, hp.value_channels, hp.num_heads,
                             hp.layer_norm_epsilon, hp.norm_placement)
    wq, wk, wv, wo = attention_weights(layer.self_attention, kc, vc)
    x = sublayer(x, lambda y: multi_head(y, y, wq, wk, wv, wo, h, allowed),
                 norm_weights(layer.self_attention_residual), where, eps)
    return sublayer(x, lambda y: feed_forward(y, *ffn_weights(layer.feed_forward)),
                    norm_weights(layer.feed_forward_residual), where, eps)


def reference_decoder_layer(layer, x, memory, self_allowed, memory_allowed, hp):
    kc, vc, h, eps, where = (hp.key_channels, hp.value_channels, hp.num_heads,
                             hp.layer_norm_epsilon, hp.norm_placement)
    wq, wk, wv, wo = attention_weights(layer.self_attention, kc, vc)
    x = sublayer(x, lambda y: multi_head(y, y, wq, wk, wv, wo, h, self_allowed),
                 norm_weights(layer.self_attention_residual), where, eps)
    cq, ck, cv, co = attention_weights(layer.cross_attention, kc, vc)
    x = sublayer(x, lambda y: multi_head(y, memory, cq, ck, cv, co, h, memory_allowed),
                 norm_weights(layer.cross_attention_residual), where, eps)
    return sublayer(x, lambda y: feed_forward(y, *ffn_weights(layer.feed_forward)),
                    norm_weights(layer.feed_forward_residual), where, eps)


def paper_positions(length, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pe = np.zeros([length, d])
    for pos in range(length):
        for i in range(d // 2):
            pe[pos, 2 * i] = np.sin(pos / 10000 ** (2 * i / d))
            pe[pos, 2 * i + 1] = np.cos(pos / 10000 ** (2 * i / d))
    return pe


# -- The tests -----------------------------------------------------------------

def _model(overrides):
    hp = registry.hparams("transformer_tiny").parse(SMALL + "," + overrides)
    tf.keras.utils.set_random_seed(3)
    model = t2t_lite.build_model(hp, VOCAB)
    # Non-trivial layer-norm gains and biases, so their order matters.
    rng = np.random.RandomState(0)
    for v in model.weights:
        if "gamma" in v.path or "beta" in v.path:
            v.assign(rng.uniform(0.5, 1.5, v.shape) if "gamma" in v.path
                     else rng.normal(0, 0.1, v.shape))
    return hp, model


IDS = np.array([[5, 9, 12, 7, 1], [8, 3, 1, 0, 0]], np.int32)  # the second row is padded
TARGETS = np.array([[6, 11, 1], [4, 1, 0]], np.int32)


@pytest.mark.parametrize("overrides", [POST, PRE])
def test_encoder_layer_equals_the_reference(overrides):
    hp, model = _model(overrides)
    layer = model.encoder_layers[0]
    x = np.random.RandomState(1).normal(size=(2, 5, hp.hidden_size))
    allowed = np.broadcast_to((IDS != 0)[:, None, :], (2, 5, 5))  # keys that are not padding
    out = layer(tf.constant(x, tf.float32), padding_bias(tf.constant(IDS)), training=False)
    np.testing.assert_allclose(out.numpy(), reference_encoder_layer(layer, x, allowed, hp),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("overrides", [POST, PRE])
def test_decoder_layer_equals_the_reference(overrides):
    hp, model = _model(overrides)
    layer = model.decoder_layers[0]
    rng = np.random.RandomState(2)
    x = rng.normal(size=(2, 3, hp.hidden_size))
    memory = rng.normal(size=(2, 5, hp.hidden_size))
    self_allowed = np.broadcast_to(np.tril(np.ones([3, 3], bool)), (2, 3, 3))  # no future
    memory_allowed = np.broadcast_to((IDS != 0)[:, None, :], (2, 3, 5))
    out = layer(tf.constant(x, tf.float32), tf.constant(memory, tf.float32), causal_bias(3),
                padding_bias(tf.constant(IDS)), training=False)
    expected = reference_decoder_layer(layer, x, memory, self_allowed, memory_allowed, hp)
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("overrides", [POST, PRE])
def test_whole_model_equals_the_reference(overrides):
    """Embeddings times sqrt(d_model) plus the paper's sinusoids, the layers, the
    final norm of pre-norm stacks, and the tied softmax (3.4)."""
    hp, model = _model(overrides + ",num_hidden_layers=2")
    d, eps = hp.hidden_size, hp.layer_norm_epsilon
    emb = _np(model.target_embedding.weights_matrix)

    def embed(ids):
        return emb[ids] * np.sqrt(d) * (ids != 0)[..., None] + paper_positions(ids.shape[1], d)

    x = embed(IDS)
    allowed = np.broadcast_to((IDS != 0)[:, None, :], (2, 5, 5))
    for layer in model.encoder_layers:
        x = reference_encoder_layer(layer, x, allowed, hp)
    if hp.norm_placement == "pre":
        x = layer_norm(x, _np(model.encoder_norm.gamma), _np(model.encoder_norm.beta), eps)
    memory = x
    shifted = np.pad(TARGETS, [[0, 0], [1, 0]])[:, :-1]  # the start symbol is id 0
    y = embed(shifted)
    self_allowed = np.broadcast_to(np.tril(np.ones([3, 3], bool)), (2, 3, 3))
    memory_allowed = np.broadcast_to((IDS != 0)[:, None, :], (2, 3, 5))
    for layer in model.decoder_layers:
        y = reference_decoder_layer(layer, y, memory, self_allowed, memory_allowed, hp)
    if hp.norm_placement == "pre":
        y = layer_norm(y, _np(model.decoder_norm.gamma), _np(model.decoder_norm.beta), eps)
    expected = y @ emb.T
    logits = model({"inputs": tf.constant(IDS), "targets": tf.constant(TARGETS)}, training=False)
    np.testing.assert_allclose(logits.numpy(), expected, atol=1e-4, rtol=1e-4)


def test_each_fused_projection_starts_with_its_own_fan():
    """tensor2tensor's uniform_unit_scaling per kernel: U(-l, l), l = sqrt(3 / fan_avg),
    variance 1 / fan_avg, fan_avg = (fan_in + fan_out) / 2 of each separate projection."""
    hp = registry.hparams("transformer_tiny").parse(
        "hidden_size=256,filter_size=256,num_heads=4,attention_key_channels=128")
    tf.keras.utils.set_random_seed(0)
    model = t2t_lite.build_model(hp, VOCAB)
    d, kc, vc = 256, 128, 256
    layer = model.decoder_layers[0]
    qkv = layer.self_attention.qkv_kernel.numpy()
    kv = layer.cross_attention.kv_kernel.numpy()
    slices = {"self q": (qkv[:, :kc], kc), "self k": (qkv[:, kc:2 * kc], kc),
              "self v": (qkv[:, 2 * kc:], vc), "cross q": (layer.cross_attention.q_kernel.numpy(), kc),
              "cross k": (kv[:, :kc], kc), "cross v": (kv[:, kc:], vc)}
    for name, (w, fan_out) in slices.items():
        fan_avg = (d + fan_out) / 2
        assert abs(w).max() <= np.sqrt(3 / fan_avg), name
        np.testing.assert_allclose(w.var(), 1 / fan_avg, rtol=0.04, err_msg=name)
    # The slices are drawn independently, not copies of one draw.
    assert not np.allclose(qkv[:, :kc], qkv[:, kc:2 * kc])
