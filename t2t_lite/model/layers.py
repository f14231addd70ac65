"""The Transformer's building blocks besides attention (section 3).

Shared scaled embeddings with the tied softmax (3.4), positional encodings
(3.5), the position-wise feed-forward network (3.3) and the residual +
layer-norm wrapper around every sub-layer (3.1, 5.4), post-norm as in the
paper or pre-norm as in tensor2tensor's later default.
"""

import contextlib
import math
import threading

import keras
import tensorflow as tf

from t2t_lite.data.layout import PAD_ID

# Weights already cast to a compute dtype, by (id(variable), dtype): set by
# `weights_cast_once` for the thread that traces a search.
_CAST_ONCE = threading.local()


@contextlib.contextmanager
def weights_cast_once(casts):
    """Within the block, `cast_weight(w, dtype)` returns `casts[(id(w), dtype)]`.

    For the decoding search under bfloat16: a layer casts its float32 weights
    to the compute dtype where it uses them, which inside the search's loop is
    once per step (a 32,000-word embedding matrix twice: lookup and logits).
    The search casts each weight once, before the loop, and hands the copies
    here. Keras's own state mapping (`keras.StatelessScope`) cannot carry them:
    it converts each value back to its variable's dtype.

    Args:
      casts: {(id(variable), tf.DType): tensor of that dtype}.
    """
    previous = getattr(_CAST_ONCE, "casts", None)
    _CAST_ONCE.casts = casts
    try:
        yield
    finally:
        _CAST_ONCE.casts = previous


def cast_weight(weight, dtype):
    """`weight` (a Keras variable) as a tensor of `dtype`: the copy `weights_cast_once`
    made, if any, else a cast."""
    casts = getattr(_CAST_ONCE, "casts", None)
    if casts:
        found = casts.get((id(weight), tf.as_dtype(dtype)))
        if found is not None:
            return found
    return tf.cast(weight, dtype)


def glorot(gain: float):
    """tensor2tensor's "uniform_unit_scaling" initializer: U(-l, l) with
    l = sqrt(3 * gain / fan_avg), fan_avg = (fan_in + fan_out) / 2."""
    return keras.initializers.VarianceScaling(gain, "fan_avg", "uniform")


@keras.saving.register_keras_serializable(package="t2t_lite")
class SlicedGlorot(keras.initializers.Initializer):
    """`glorot(gain)` for each column slice of a fused kernel, with the slice's own fan.

    A fused [D, 2K + V] Q/K/V kernel initialised as one matrix would get
    fan_avg = (D + 2K + V) / 2, so each projection would start smaller than
    tensor2tensor's separate [D, K] kernels (by 1/sqrt(2) at K = V = D). Here
    slice i of width w_i is drawn as a [D, w_i] kernel would be.
    """

    def __init__(self, gain: float, widths):
        self.gain = gain
        self.widths = [int(w) for w in widths]

    def __call__(self, shape, dtype=None):
        if len(shape) != 2 or sum(self.widths) != shape[1]:
            raise ValueError(f"Slices {self.widths} do not add up to the columns of {shape}.")
        parts = [glorot(self.gain)((shape[0], width), dtype) for width in self.widths]
        return keras.ops.concatenate(parts, axis=1)

    def get_config(self):
        return {"gain": self.gain, "widths": self.widths}


def matmul_2d(x, kernel, dtype):
    """[..., C_in] x [C_in, C_out] -> [..., C_out] as a single 2-D matmul."""
    kernel = cast_weight(kernel, dtype)
    if x.shape.rank == 2:  # decoding steps: no reshapes (each op costs a launch)
        return tf.matmul(x, kernel)
    shape = tf.shape(x)
    y = tf.matmul(tf.reshape(x, [-1, kernel.shape[0]]), kernel)
    return tf.reshape(y, tf.concat([shape[:-1], [kernel.shape[1]]], 0))


def vocab_logits(x, matrix, dtype):
    """Pre-softmax projection: x [..., D] times matrix^T ([V, D]) -> float32 [..., V].

    The matmul runs in the compute dtype; logits are returned in float32 so
    that the softmax and the loss are computed in full precision.
    """
    matrix = cast_weight(matrix, dtype)
    if x.shape.rank == 2:  # decoding steps
        return tf.cast(tf.matmul(x, matrix, transpose_b=True), tf.float32)
    shape = tf.shape(x)
    y = tf.matmul(tf.reshape(x, [-1, matrix.shape[1]]), matrix, transpose_b=True)
    return tf.cast(tf.reshape(y, tf.concat([shape[:-1], [matrix.shape[0]]], 0)), tf.float32)


def sinusoids(positions, depth: int) -> tf.Tensor:
    """The paper's encodings: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...).

    Args:
      positions: int [T].
      depth: d_model (even).
    Returns:
      float32 [T, depth], sines and cosines interleaved as in the paper.
    """
    half = depth // 2
    rates = tf.exp(tf.range(half, dtype=tf.float32) * (-2.0 * math.log(10000.0) / depth))
    angles = tf.cast(positions, tf.float32)[:, None] * rates[None, :]  # [T, d/2]
    return tf.reshape(tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1), [-1, depth])


def t2t_sinusoids(positions, depth: int) -> tf.Tensor:
    """tensor2tensor's `get_timing_signal_1d` (its defaults: timescales 1 to 10^4).

    Unlike the paper's layout (`sinusoids`), t2t puts every sine first and every
    cosine after them, and spaces its d/2 rates geometrically from 1 to 10^-4:
    rate_i = exp(-i * log(10^4) / max(d/2 - 1, 1)). Models imported from t2t were
    trained with it.

    Args:
      positions: int [T].
      depth: d_model (an odd depth gets a zero last channel, as in t2t).
    Returns:
      float32 [T, depth]: [sin(p * rate_0..), cos(p * rate_0..)].
    """
    half = depth // 2
    increment = math.log(10000.0) / max(half - 1, 1)
    rates = tf.exp(tf.range(half, dtype=tf.float32) * -increment)
    angles = tf.cast(positions, tf.float32)[:, None] * rates[None, :]  # [T, d/2]
    signal = tf.concat([tf.sin(angles), tf.cos(angles)], axis=1)
    return tf.pad(signal, [[0, 0], [0, depth % 2]])


def marian_sinusoids(positions, depth: int) -> tf.Tensor:
    """Hugging Face Marian's encodings (`MarianSinusoidalPositionalEmbedding`).

    Channel j of position p has the angle p / 10000^(2 (j // 2) / d); the sines of
    the even j fill the first half, the cosines of the odd j the second (not
    interleaved as in the paper, and with the paper's rates, not t2t's).
    transformers computes the table in float64 with NumPy and casts it to float32;
    so does this, to agree with it to float32 rounding.

    Args:
      positions: int [T], from 0.
      depth: d_model (odd: one more sine than cosines, as in transformers).
    Returns:
      float32 [T, depth]: [sin(p / 10000^(2i/d)) for i < ceil(d/2), cos(...) for i < d // 2].
    """
    exponents = tf.cast(tf.range(depth) // 2 * 2, tf.float64) / depth  # [d]
    angles = tf.cast(positions, tf.float64)[:, None] / tf.pow(
        tf.constant(10000.0, tf.float64), exponents)[None, :]  # [T, d]
    signal = tf.concat([tf.sin(angles[:, 0::2]), tf.cos(angles[:, 1::2])], axis=1)
    return tf.cast(signal, tf.float32)


TIMING_SIGNALS = {"paper": sinusoids, "tensor2tensor": t2t_sinusoids, "marian": marian_sinusoids}


class Embedding(keras.layers.Layer):
    """Token embedding scaled by sqrt(d_model), and the pre-softmax projection (`logits`).

    With untied softmax weights the model holds a second instance used only
    through `logits`.

    Padding (id 0) embeds to zeros. The decoder's start symbol is also id 0
    (targets shifted right, as in tensor2tensor), so the first decoder input
    is the positional encoding alone.

    With `embed_padding` id 0 embeds to its own row like any id: Marian's
    decoder starts from its `<pad>` row (renumbered to 0), trained through the
    tied softmax. Padding positions then carry that row too, which changes no
    real position: padded source keys are masked (`padding_bias`), and target
    positions after EOS come later than every real one, which the causal mask
    hides from them; their own outputs are not scored (the loss weights them 0).

    `scale`: multiply by sqrt(d_model) (the paper; Marian's `scale_embedding`).
    """

    def __init__(self, vocab_size: int, hidden_size: int, scale: bool = True,
                 embed_padding: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.scale = scale
        self.embed_padding = embed_padding

    def build(self, input_shape=None):
        self.weights_matrix = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=self.hidden_size ** -0.5))
        super().build(input_shape)

    def call(self, ids):
        """ids int [B, T] -> [B, T, D] in the compute dtype."""
        x = tf.gather(cast_weight(self.weights_matrix, self.compute_dtype), ids)
        if self.scale:
            x = x * tf.cast(self.hidden_size ** 0.5, self.compute_dtype)
        if self.embed_padding:
            return x
        return x * tf.cast(tf.not_equal(ids, PAD_ID), self.compute_dtype)[..., None]

    def logits(self, x):
        """Pre-softmax projection with the embedding matrix: [..., D] -> float32 [..., V]."""
        if not self.built:  # an untied softmax is used only through this method
            self.build(None)
        return vocab_logits(x, self.weights_matrix, self.compute_dtype)


class PositionalEncoding(keras.layers.Layer):
    """Adds sinusoids ("timing", laid out as the paper or as tensor2tensor does:
    `timing_signal`) or learned position embeddings ("emb", Table 3 E).

    Learned embeddings exist for positions < `max_length`; later positions
    reuse the last one (the decoder caps output lengths at `max_length` for
    such models).
    """

    def __init__(self, kind: str, hidden_size: int, max_length: int,
                 timing_signal: str = "paper", **kwargs):
        super().__init__(**kwargs)
        self.kind = kind
        self.timing_signal = TIMING_SIGNALS[timing_signal]
        self.hidden_size = hidden_size
        self.max_length = max_length

    def build(self, input_shape=None):
        if self.kind == "emb":
            self.table = self.add_weight(
                name="position_embeddings", shape=(self.max_length, self.hidden_size),
                initializer=keras.initializers.RandomNormal(stddev=self.hidden_size ** -0.5))
        super().build(input_shape)

    def encodings(self, positions):
        """int [T] -> [T, D] in the compute dtype."""
        if self.kind == "emb":
            positions = tf.minimum(positions, self.max_length - 1)
            return tf.gather(cast_weight(self.table, self.compute_dtype), positions)
        return tf.cast(self.timing_signal(positions, self.hidden_size), self.compute_dtype)

    def call(self, x, start=0):
        """x [B, T, D] (positions start, start+1, ...) -> x + encodings."""
        positions = tf.range(tf.shape(x)[1]) + start
        return x + self.encodings(positions)[None]


class TargetSpaceEmbedding(keras.layers.Layer):
    """tensor2tensor's target-space embedding: x + table[target_space_id] at every position.

    t2t tells its encoder which output space (language, tokenization) is
    wanted through a [32, D] table; a model imported from t2t adds the row
    its problem used (`target_space_id`, 0 for most t2t translate problems).
    """

    def __init__(self, hidden_size: int, target_space_id: int, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.target_space_id = target_space_id

    def build(self, input_shape=None):
        self.table = self.add_weight(
            name="embeddings", shape=(32, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=self.hidden_size ** -0.5))
        super().build(input_shape)

    def call(self, x):
        """x [B, S, D] -> x + table[target_space_id] ([D], the same at every position)."""
        return x + tf.cast(self.table[self.target_space_id], self.compute_dtype)


class LogitsBias(keras.layers.Layer):
    """A trained bias added to the logits: Marian's `final_logits_bias` (its output
    layer's bias), float32 [V], zero at initialization.

    The layer computes in float32 whatever the dtype policy, as the logits are
    (a mixed policy would otherwise cast the float32 logits it is called on to
    bfloat16)."""

    def __init__(self, vocab_size: int, **kwargs):
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        self.vocab_size = vocab_size

    def build(self, input_shape=None):
        self.bias = self.add_weight(name="bias", shape=(self.vocab_size,), initializer="zeros")
        super().build(input_shape)

    def call(self, logits):
        """float32 [..., V] -> float32 [..., V]."""
        return logits + cast_weight(self.bias, tf.float32)


# FFN activations by `HParams.ffn_activation`: torch's ReLU, SiLU ("swish") and exact
# (erf) GELU, as Hugging Face's ACT2FN names them.
ACTIVATIONS = {"relu": tf.nn.relu, "swish": tf.nn.silu,
               "gelu": lambda x: tf.nn.gelu(x, approximate=False)}


class FeedForward(keras.layers.Layer):
    """FFN(x) = act(x W1 + b1) W2 + b2, act ReLU (the paper) or `activation`, with
    optional dropout after the activation."""

    def __init__(self, hidden_size: int, filter_size: int, relu_dropout: float = 0.0,
                 initializer_gain: float = 1.0, activation: str = "relu", **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.filter_size = filter_size
        self.relu_dropout = relu_dropout
        self.initializer_gain = initializer_gain
        self.activation = activation
        self._activation = ACTIVATIONS[activation]
        self._dropout = keras.layers.Dropout(relu_dropout)

    def build(self, input_shape=None):
        init = glorot(self.initializer_gain)
        self.kernel_1 = self.add_weight(name="kernel_1", shape=(self.hidden_size, self.filter_size),
                                        initializer=init)
        self.bias_1 = self.add_weight(name="bias_1", shape=(self.filter_size,), initializer="zeros")
        self.kernel_2 = self.add_weight(name="kernel_2", shape=(self.filter_size, self.hidden_size),
                                        initializer=init)
        self.bias_2 = self.add_weight(name="bias_2", shape=(self.hidden_size,), initializer="zeros")
        super().build(input_shape)

    def call(self, x, training=False):
        """[B, T, D] -> [B, T, D]."""
        dtype = self.compute_dtype
        h = self._activation(matmul_2d(x, self.kernel_1, dtype) + cast_weight(self.bias_1, dtype))
        h = self._dropout(h, training=training)
        return matmul_2d(h, self.kernel_2, dtype) + cast_weight(self.bias_2, dtype)


class LayerNorm(keras.layers.LayerNormalization):
    """Keras's layer normalization over the last axis, with the same arithmetic,
    in fewer ops on the 2-D rows of a decoding step.

    `keras.ops.layer_normalization` reshapes gamma and beta at every call when
    the axis is given as -1, and computes the variance through `tf.nn.moments`
    (a StopGradient) and the shift as -mean * inv + beta (a Neg). On [R, D]
    rows this computes the same values op for op (b - m * i equals
    (-m) * i + b exactly in IEEE arithmetic) without those four ops per norm:
    a decoding step of a small model is bound by its op count, not its FLOPs.
    Training and encoder inputs (rank 3) go through Keras unchanged.
    """

    def call(self, inputs):
        if inputs.shape.rank != 2 or self.rms_scaling or not (self.center and self.scale):
            return super().call(inputs)
        x = tf.cast(inputs, tf.float32) if inputs.dtype != tf.float64 else inputs
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)  # [R, 1]
        variance = tf.reduce_mean(tf.math.squared_difference(x, mean), axis=-1, keepdims=True)
        inv = tf.math.rsqrt(variance + self.epsilon) * tf.cast(self.gamma, x.dtype)  # [R, D]
        outputs = x * inv + (tf.cast(self.beta, x.dtype) - mean * inv)
        return tf.cast(outputs, self.compute_dtype)


class Residual(keras.layers.Layer):
    """Wraps a sub-layer with dropout, the residual connection and layer norm.

    post-norm (the paper): LayerNorm(x + Dropout(Sublayer(x)))
    pre-norm (t2t v2):     x + Dropout(Sublayer(LayerNorm(x)))
    """

    def __init__(self, placement: str, dropout: float, epsilon: float, **kwargs):
        super().__init__(**kwargs)
        self.placement = placement
        self.norm = LayerNorm(epsilon=epsilon, name="layer_norm")
        self._dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape):
        self.norm.build(input_shape)
        super().build(input_shape)

    def before(self, x):
        """The sub-layer's input."""
        return self.norm(x) if self.placement == "pre" else x

    def after(self, x, y, training=False):
        """Combines the block input x and the sub-layer output y."""
        out = x + self._dropout(y, training=training)
        return self.norm(out) if self.placement == "post" else out
