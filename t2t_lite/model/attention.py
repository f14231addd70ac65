"""Multi-head scaled dot-product attention (section 3.2) with a decoding cache.

Written by hand rather than taken from `keras.layers.MultiHeadAttention` or
keras-hub because the paper's model needs what those lack together:
projections without biases (the paper's W^Q, W^K, W^V, W^O; tensor2tensor
has none either; Hugging Face's Marian has them: `use_bias`), d_k different from d_v (Table 3 B), one fused matmul for
the query/key/value projections (the largest speed lever on CPUs), a
separate attention-weight dropout, and a preallocated key/value cache whose
update is a plain TensorFlow op that serves eager, `tf.function`, XLA and the
TF1 SavedModel loader alike.

Shapes: B batch, T query length, S key length, L cache length, H heads,
K = key_channels / H, V = value_channels / H, D hidden size.
"""

import math

import keras
import tensorflow as tf

from t2t_lite.data.layout import PAD_ID
from t2t_lite.model.layers import SlicedGlorot, cast_weight, glorot, matmul_2d
from t2t_lite.tensors import NEG_INF, add_at_position


def padding_bias(ids: tf.Tensor) -> tf.Tensor:
    """Attention bias hiding padding (PAD_ID, 0) keys: [B, S] -> [B, 1, 1, S] float32."""
    return tf.cast(tf.equal(ids, PAD_ID), tf.float32)[:, None, None, :] * NEG_INF


def causal_bias(length) -> tf.Tensor:
    """Bias hiding future positions: [1, 1, T, T], 0 on and below the diagonal."""
    lower = tf.linalg.band_part(tf.ones([length, length], tf.float32), -1, 0)
    return (1.0 - lower)[None, None] * NEG_INF


class MultiHeadAttention(keras.layers.Layer):
    """Self- or cross-attention with fused, bias-free projections.

    Args:
      hidden_size: D, the size of inputs and outputs.
      num_heads: H.
      key_channels: H * d_k.
      value_channels: H * d_v.
      dropout: dropout rate on the attention weights.
      self_attention: True: one fused Q/K/V projection of the query input.
        False: Q from the query input, fused K/V from the memory.
      use_bias: a bias on each projection, fused as the kernels are
        (`qkv_bias` [2K*H + V*H], or `q_bias` [K*H] and `kv_bias` [K*H + V*H];
        `output_bias` [D]).
    """

    def __init__(self, hidden_size: int, num_heads: int, key_channels: int,
                 value_channels: int, dropout: float = 0.0, self_attention: bool = True,
                 initializer_gain: float = 1.0, use_bias: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.key_channels = key_channels
        self.value_channels = value_channels
        self.dropout = dropout
        self.self_attention = self_attention
        self.initializer_gain = initializer_gain
        self.use_bias = use_bias
        self._dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape=None):
        gain = self.initializer_gain
        init = glorot(gain)
        d, kc, vc = self.hidden_size, self.key_channels, self.value_channels
        # Each fused projection starts as tensor2tensor's separate q, k, v kernels.
        if self.self_attention:
            self.qkv_kernel = self.add_weight(name="qkv_kernel", shape=(d, 2 * kc + vc),
                                              initializer=SlicedGlorot(gain, [kc, kc, vc]))
        else:
            self.q_kernel = self.add_weight(name="q_kernel", shape=(d, kc), initializer=init)
            self.kv_kernel = self.add_weight(name="kv_kernel", shape=(d, kc + vc),
                                             initializer=SlicedGlorot(gain, [kc, vc]))
        self.output_kernel = self.add_weight(name="output_kernel", shape=(vc, d),
                                             initializer=init)
        if self.use_bias:
            names = ({"qkv_bias": 2 * kc + vc} if self.self_attention else
                     {"q_bias": kc, "kv_bias": kc + vc})
            for name, width in {**names, "output_bias": d}.items():
                setattr(self, name, self.add_weight(name=name, shape=(width,),
                                                    initializer="zeros"))
        super().build(input_shape)

    # -- Projections --------------------------------------------------------

    def _project(self, x, kernel, bias_name):
        """[B, T, D] (or [R, D]) x [D, C] -> [B, T, C] ([R, C]) as one 2-D matmul
        (oneDNN's fast path), plus the bias `bias_name` with `use_bias`."""
        y = matmul_2d(x, kernel, self.compute_dtype)
        if self.use_bias:
            y = y + cast_weight(getattr(self, bias_name), self.compute_dtype)
        return y

    def _split_heads(self, x, channels):
        """[B, T, channels] -> [B, H, T, channels / H]."""
        shape = tf.shape(x)
        x = tf.reshape(x, [shape[0], shape[1], self.num_heads, channels // self.num_heads])
        return tf.transpose(x, [0, 2, 1, 3])

    def _split_qkv(self, x):
        kc, vc = self.key_channels, self.value_channels
        qkv = self._project(x, self.qkv_kernel, "qkv_bias")  # [B, T, 2K*H + V*H]
        q, k, v = tf.split(qkv, [kc, kc, vc], axis=-1)
        return self._split_heads(q, kc), self._split_heads(k, kc), self._split_heads(v, vc)

    def memory_kv(self, memory):
        """Cross-attention keys and values of `memory` [B, S, D] -> 2 x [B, H, S, K|V]."""
        kc, vc = self.key_channels, self.value_channels
        k, v = tf.split(self._project(memory, self.kv_kernel, "kv_bias"), [kc, vc], axis=-1)
        return self._split_heads(k, kc), self._split_heads(v, vc)

    # -- Attention ------------------------------------------------------------

    def _context(self, q, k, v, bias, training=False):
        """q [B, H, T, K], k [B, H, S, K], v [B, H, S, V], bias broadcast to [B, H, T, S]
        -> (context [B, H, T, V], attention weights float32 [B, H, T, S])."""
        q = q * tf.cast(1.0 / math.sqrt(self.key_channels // self.num_heads), q.dtype)
        logits = tf.matmul(q, k, transpose_b=True)  # [B, H, T, S]
        # Softmax in float32 whatever the compute dtype (mixed precision).
        logits = tf.cast(logits, tf.float32)
        if bias is not None:
            logits += tf.cast(bias, tf.float32)  # Keras may have autocast it
        probabilities = tf.nn.softmax(logits)  # [B, H, T, S] float32
        weights = self._dropout(tf.cast(probabilities, self.compute_dtype), training=training)
        return tf.matmul(weights, v), probabilities

    def _attend(self, q, k, v, bias, training, return_weights=False):
        """q [B, H, T, K], k [B, H, S, K], v [B, H, S, V], bias broadcast to [B, H, T, S].

        Returns [B, T, D]; with `return_weights` also the attention weights
        float32 [B, H, T, S] (the softmax, before dropout).
        """
        context, probabilities = self._context(q, k, v, bias, training)  # [B, H, T, V]
        shape = tf.shape(context)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]),
                             [shape[0], shape[2], self.value_channels])  # [B, T, H*V]
        output = self._project(context, self.output_kernel, "output_bias")  # [B, T, D]
        return (output, probabilities) if return_weights else output

    def call(self, query, memory=None, bias=None, training=False, return_weights=False):
        """Full-sequence attention.

        Args:
          query: [B, T, D].
          memory: [B, S, D] for cross-attention; None for self-attention.
          bias: additive mask broadcastable to [B, H, T, S].
          return_weights: also return the attention weights.
        Returns:
          [B, T, D]; with `return_weights`, ([B, T, D], weights float32 [B, H, T, S]).
        """
        if self.self_attention:
            q, k, v = self._split_qkv(query)
        else:
            q = self._split_heads(self._project(query, self.q_kernel, "q_bias"), self.key_channels)
            k, v = self.memory_kv(memory)
        return self._attend(q, k, v, bias, training, return_weights)

    # -- One decoding step --------------------------------------------------
    # Rows R of one position each, kept 2-D ([R, D]): a step is a few hundred
    # small ops, each a kernel launch on the CPU, so the reshapes and
    # transposes a [R, 1, D] layout needs are left out where T = 1 makes
    # them plain reshapes with static sizes.

    def _row_heads(self, x, channels):
        """[R, channels] -> [R, H, 1, channels / H]."""
        return tf.reshape(x, [-1, self.num_heads, 1, channels // self.num_heads])

    def step(self, query, cache, index=None, bias=None, append=False):
        """Self-attention for one new decoder position, using and updating `cache`.

        Args:
          query: [R, D], the new position's input.
          cache: {"k": [R, H, L, K], "v": [R, H, L, V]}, keys and values of
            positions < index (zeros beyond, unless `append`).
          index: int32 scalar, the new position.
          bias: additive mask broadcastable to [R, H, 1, L].
          append: a growing cache: concatenate the new position's keys and
            values instead of writing them at `index`.
        Returns:
          ([R, D], the updated cache).
        """
        kc, vc = self.key_channels, self.value_channels
        qkv = self._project(query, self.qkv_kernel, "qkv_bias")  # [R, 2K*H + V*H]
        q, k, v = tf.split(qkv, [kc, kc, vc], axis=-1)
        q, k, v = self._row_heads(q, kc), self._row_heads(k, kc), self._row_heads(v, vc)
        if append:
            cache = {"k": tf.concat([cache["k"], k], axis=2),
                     "v": tf.concat([cache["v"], v], axis=2)}
        else:
            cache = {"k": add_at_position(cache["k"], index, k),
                     "v": add_at_position(cache["v"], index, v)}
        context, _ = self._context(q, cache["k"], cache["v"], bias)  # [R, H, 1, V]
        context = tf.reshape(context, [-1, vc])  # T = 1: no transpose needed
        return self._project(context, self.output_kernel, "output_bias"), cache

    def step_folded(self, query, memory_kv, bias=None):
        """Cross-attention for one new position of R = B * beam rows over the
        memory of B sentences, each read once: the beam becomes the query axis.

        Args:
          query: [R, D]; rows b * beam ... b * beam + beam - 1 are sentence b's.
          memory_kv: {"k": [B, H, S, K], "v": [B, H, S, V]} from `memory_kv`.
          bias: additive mask broadcastable to [B, H, 1, S].
        Returns:
          [R, D].
        """
        kc, vc, heads = self.key_channels, self.value_channels, self.num_heads
        sentences = tf.shape(memory_kv["k"])[0]
        q = self._project(query, self.q_kernel, "q_bias")  # [R, H*K]
        q = tf.reshape(q, [sentences, -1, heads, kc // heads])  # [B, beam, H, K]
        q = tf.transpose(q, [0, 2, 1, 3])  # [B, H, beam, K]
        context, _ = self._context(q, memory_kv["k"], memory_kv["v"], bias)  # [B, H, beam, V]
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, vc])  # [R, H*V]
        return self._project(context, self.output_kernel, "output_bias")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      key_channels=self.key_channels, value_channels=self.value_channels,
                      dropout=self.dropout, self_attention=self.self_attention,
                      initializer_gain=self.initializer_gain, use_bias=self.use_bias)
        return config
