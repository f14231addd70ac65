"""The Transformer of "Attention Is All You Need" (section 3) as a Keras 3 model.

    model = Transformer(hparams, vocab_size)
    logits = model({"inputs": src, "targets": tgt}, training=True)  # [B, T, V]

For decoding, the encoder runs once (`encode`), `init_cache` computes the
cross-attention keys and values once and preallocates the self-attention
cache, and `decode_step` produces the next-token logits for one position:

    memory, bias = model.encode(src)
    cache = model.init_cache(memory, bias, max_length)
    logits, cache = model.decode_step(ids, index, cache)  # [B, V]

Cache layout (what beam search tiles and reorders): a dict with
  "layer_i": {"k": [R, H, L, K], "v": [R, H, L, V]}  self-attention, grows per step
  "per_example": {"bias": [B, 1, 1, S], "layer_i": {"k": [B, H, S, K], "v": [B, H, S, V]}}
             per-sentence constants (encoder padding bias, cross-attention keys/values),
             one copy per sentence whatever the beam: `decode_step` gets R = B * beam
             rows (beam the inner index) and folds the beam into the query axis of
             cross-attention, as CTranslate2 does, instead of reading B * beam copies.
"""

from typing import Optional

import keras
import tensorflow as tf

from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.model.attention import MultiHeadAttention, causal_bias, padding_bias
from t2t_lite.model.layers import (Embedding, FeedForward, LayerNorm, LogitsBias,
                                   PositionalEncoding, Residual, TargetSpaceEmbedding)
from t2t_lite.tensors import NEG_INF


def _attention(hp: HParams, self_attention: bool, name: str) -> MultiHeadAttention:
    return MultiHeadAttention(hp.hidden_size, hp.num_heads, hp.key_channels, hp.value_channels,
                              dropout=hp.attention_dropout, self_attention=self_attention,
                              initializer_gain=hp.initializer_gain,
                              use_bias=hp.attention_bias, name=name)


def _residual(hp: HParams, name: str) -> Residual:
    return Residual(hp.norm_placement, hp.layer_prepostprocess_dropout, hp.layer_norm_epsilon,
                    name=name)


def _feed_forward(hp: HParams) -> FeedForward:
    return FeedForward(hp.hidden_size, hp.filter_size, hp.relu_dropout, hp.initializer_gain,
                       activation=hp.ffn_activation, name="feed_forward")


def _build_sublayers(layer: keras.layers.Layer, input_shape) -> None:
    """Creates the weights of every sub-layer of an encoder or decoder layer."""
    for sublayer in layer._layers:
        sublayer.build(input_shape)


class EncoderLayer(keras.layers.Layer):
    """Self-attention then feed-forward, each wrapped in `Residual`."""

    def __init__(self, hp: HParams, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = _attention(hp, True, "self_attention")
        self.self_attention_residual = _residual(hp, "self_attention_residual")
        self.feed_forward = _feed_forward(hp)
        self.feed_forward_residual = _residual(hp, "feed_forward_residual")

    def build(self, input_shape):
        _build_sublayers(self, input_shape)

    def call(self, x, bias, training=False, return_attention=False):
        """x [B, S, D], bias [B, 1, 1, S] -> [B, S, D]; with `return_attention`
        also {"encoder": self-attention weights [B, H, S, S]}."""
        r = self.self_attention_residual
        y, weights = self.self_attention(r.before(x), bias=bias, training=training,
                                         return_weights=True)
        x = r.after(x, y, training)
        r = self.feed_forward_residual
        x = r.after(x, self.feed_forward(r.before(x), training=training), training)
        return (x, {"encoder": weights}) if return_attention else x


class DecoderLayer(keras.layers.Layer):
    """Masked self-attention, encoder-decoder attention, feed-forward."""

    def __init__(self, hp: HParams, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = _attention(hp, True, "self_attention")
        self.self_attention_residual = _residual(hp, "self_attention_residual")
        self.cross_attention = _attention(hp, False, "cross_attention")
        self.cross_attention_residual = _residual(hp, "cross_attention_residual")
        self.feed_forward = _feed_forward(hp)
        self.feed_forward_residual = _residual(hp, "feed_forward_residual")

    def build(self, input_shape):
        _build_sublayers(self, input_shape)

    def call(self, x, memory, self_bias, memory_bias, training=False, return_attention=False):
        """x [B, T, D], memory [B, S, D] -> [B, T, D]; with `return_attention` also
        {"decoder": self-attention weights [B, H, T, T], "cross": [B, H, T, S]}."""
        r = self.self_attention_residual
        y, self_weights = self.self_attention(r.before(x), bias=self_bias, training=training,
                                              return_weights=True)
        x = r.after(x, y, training)
        r = self.cross_attention_residual
        y, cross_weights = self.cross_attention(r.before(x), memory, bias=memory_bias,
                                                training=training, return_weights=True)
        x = r.after(x, y, training)
        r = self.feed_forward_residual
        x = r.after(x, self.feed_forward(r.before(x), training=training), training)
        if return_attention:
            return x, {"decoder": self_weights, "cross": cross_weights}
        return x

    def step(self, x, self_cache, cross_kv, self_bias, memory_bias, index, growing=False):
        """One position: x [R, D] -> ([R, D], updated self_cache); R rows, a
        multiple of the sentences B of `cross_kv` [B, H, S, K|V] and `memory_bias`."""
        r = self.self_attention_residual
        y, self_cache = self.self_attention.step(r.before(x), self_cache, index, self_bias,
                                                 append=growing)
        x = r.after(x, y)
        r = self.cross_attention_residual
        y = self.cross_attention.step_folded(r.before(x), cross_kv, bias=memory_bias)
        x = r.after(x, y)
        r = self.feed_forward_residual
        return r.after(x, self.feed_forward(r.before(x))), self_cache


class Transformer(keras.Model):
    """Encoder-decoder Transformer over a shared source/target vocabulary.

    Args:
      hparams: `HParams` (hidden_size, filter_size, num_heads, layers, dropouts, ...).
      vocab_size: size of the (shared) vocabulary; id 0 is padding. A separate
        source table (`shared_embedding=False`) has `hparams.source_vocab_size`
        rows when that is set (an imported Marian model's source vocabulary).
    """

    def __init__(self, hparams: HParams, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        if vocab_size < 3:
            raise T2TError(f"vocab_size must be at least 3 (PAD, EOS, UNK), got {vocab_size}.")
        hp = self.hparams = hparams
        self.vocab_size = vocab_size
        self.source_vocab_size = hp.source_vocab_size or vocab_size
        if self.source_vocab_size < 3:
            raise T2TError("source_vocab_size must be at least 3 (PAD, EOS, UNK), got "
                           f"{self.source_vocab_size}.")
        embedding = dict(scale=hp.scale_embedding, embed_padding=hp.embed_padding)
        self.target_embedding = Embedding(vocab_size, hp.hidden_size, name="target_embedding",
                                          **embedding)
        self.source_embedding = (self.target_embedding if hp.shared_embedding else
                                 Embedding(self.source_vocab_size, hp.hidden_size,
                                           name="source_embedding", **embedding))
        self.softmax = (None if hp.shared_embedding_and_softmax_weights else
                        Embedding(vocab_size, hp.hidden_size, name="softmax"))
        # Marian's final_logits_bias; t2t's and the paper's softmax have no bias.
        self.logits_bias = (LogitsBias(vocab_size, name="final_logits_bias")
                            if hp.logits_bias else None)
        self.positions = PositionalEncoding(hp.pos, hp.hidden_size, hp.max_length,
                                            hp.timing_signal, name="positions")
        # tensor2tensor adds one row of its target-space embedding to every encoder
        # input (imported models); t2t-lite's own models have none.
        self.target_space = (TargetSpaceEmbedding(hp.hidden_size, hp.target_space_id,
                                                  name="target_space_embedding")
                             if hp.use_target_space_embedding else None)
        self.embedding_dropout = keras.layers.Dropout(hp.layer_prepostprocess_dropout)
        # Layers are attributes, not list items: tf.train.Checkpoint does not
        # follow Keras 3's tracked lists, so listed layers would be left out of
        # checkpoints written with tf.train.Checkpoint(model=model).
        for i in range(hp.encoder_layers):
            setattr(self, f"encoder_{i}", EncoderLayer(hp, name=f"encoder_{i}"))
        for i in range(hp.decoder_layers):
            setattr(self, f"decoder_{i}", DecoderLayer(hp, name=f"decoder_{i}"))
        if hp.norm_placement == "pre":  # pre-norm stacks end with a layer norm
            eps = hp.layer_norm_epsilon
            self.encoder_norm = LayerNorm(epsilon=eps, name="encoder_norm")
            self.decoder_norm = LayerNorm(epsilon=eps, name="decoder_norm")
        else:
            self.encoder_norm = self.decoder_norm = None

    def build(self, input_shape=None):
        """Creates every weight by running `call` once, eagerly, on a dummy batch:
        each sub-layer builds itself on its first call. `input_shape` is ignored
        (no weight depends on it). Keras's default build would instead trace the
        whole `call` symbolically first, to find unbuilt state: ~0.6 s per model."""
        del input_shape
        dummy = tf.ones([1, 2], tf.int32)
        self.call({"inputs": dummy, "targets": dummy}, training=False)

    @property
    def encoder_layers(self):
        return [getattr(self, f"encoder_{i}") for i in range(self.hparams.encoder_layers)]

    @property
    def decoder_layers(self):
        return [getattr(self, f"decoder_{i}") for i in range(self.hparams.decoder_layers)]

    # -- Full sequences (training, scoring) ---------------------------------

    def encode(self, inputs, training=False, attention: Optional[dict] = None):
        """inputs int [B, S] -> (memory [B, S, D], memory_bias float32 [B, 1, 1, S]).

        `attention`: a dict to which the layers' self-attention weights are
        appended under "encoder" (a list, one [B, H, S, S] per layer).
        """
        bias = padding_bias(inputs)
        x = self.source_embedding(inputs)
        if self.target_space is not None:
            x = self.target_space(x)
        x = self.positions(x)
        x = self.embedding_dropout(x, training=training)
        for layer in self.encoder_layers:
            if attention is None:
                x = layer(x, bias, training=training)
            else:
                x, weights = layer(x, bias, training=training, return_attention=True)
                _collect(attention, weights)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, bias

    def decode(self, targets, memory, memory_bias, training=False,
               attention: Optional[dict] = None):
        """Teacher-forced decoder: targets int [B, T] -> logits float32 [B, T, V].

        The decoder input is the targets shifted right by one with id 0 (the
        start symbol) in front, so position t predicts targets[:, t].
        `attention`: as in `encode`, under "decoder" and "cross".
        """
        shifted = tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]
        x = self.positions(self.target_embedding(shifted))
        x = self.embedding_dropout(x, training=training)
        self_bias = causal_bias(tf.shape(targets)[1])
        for layer in self.decoder_layers:
            if attention is None:
                x = layer(x, memory, self_bias, memory_bias, training=training)
            else:
                x, weights = layer(x, memory, self_bias, memory_bias, training=training,
                                   return_attention=True)
                _collect(attention, weights)
        return self._logits(x)

    def attention_weights(self, inputs, targets) -> dict:
        """The attention weights of a teacher-forced pass (no dropout).

        Returns:
          {"encoder": [B, L, H, S, S], "decoder": [B, L, H, T, T],
           "cross": [B, L, H, T, S]} float32, one entry of L per layer: each row
          sums to 1 over the keys a query may see; masked keys (padding, future
          positions) get 0.
        """
        attention = {}
        memory, memory_bias = self.encode(inputs, attention=attention)
        self.decode(targets, memory, memory_bias, attention=attention)
        return {kind: tf.stack(weights, axis=1) for kind, weights in attention.items()}

    def call(self, features, training=False):
        """features {"inputs": int [B, S], "targets": int [B, T]} -> float32 [B, T, V]."""
        memory, memory_bias = self.encode(features["inputs"], training=training)
        return self.decode(features["targets"], memory, memory_bias, training=training)

    def _logits(self, x):
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        projection = self.softmax if self.softmax is not None else self.target_embedding
        logits = projection.logits(x)
        return self.logits_bias(logits) if self.logits_bias is not None else logits

    # -- Incremental decoding -------------------------------------------------

    def init_cache(self, memory, memory_bias, max_length=None):
        """The decoding cache: preallocated for outputs of up to `max_length` tokens
        (static shapes, as XLA needs), or with `max_length=None` empty and grown by
        one position per step (`decode_step(..., growing=True)`): each step then
        attends to and reorders only the positions decoded so far.
        """
        hp = self.hparams
        if max_length is None:
            max_length = 0
        batch = tf.shape(memory)[0]
        heads = hp.num_heads
        cache = {"per_example": {"bias": memory_bias}}
        for i, layer in enumerate(self.decoder_layers):
            k, v = layer.cross_attention.memory_kv(memory)
            cache["per_example"][f"layer_{i}"] = {"k": k, "v": v}
            cache[f"layer_{i}"] = {
                "k": tf.zeros([batch, heads, max_length, hp.key_channels // heads], k.dtype),
                "v": tf.zeros([batch, heads, max_length, hp.value_channels // heads], v.dtype),
            }
        return cache

    def decode_step(self, ids, index, cache, growing=False):
        """Next-token logits for position `index`.

        Args:
          ids: int [R], the decoder input at `index` (0 = start at index 0); R is
            a multiple of the sentences B in cache["per_example"] (R = B * beam,
            the beam the inner index: rows b * beam ... b * beam + beam - 1 are
            sentence b's).
          index: int32 scalar.
          cache: from `init_cache`, holding positions < index (its per-row
            tensors tiled to R rows).
          growing: the cache was made with `max_length=None` (appended to).
        Returns:
          (logits float32 [R, V], updated cache).
        """
        index = tf.convert_to_tensor(index, tf.int32)
        x = self.target_embedding(ids)  # [R, D]
        x = x + self.positions.encodings(index[None])  # + [1, D]
        static = cache["per_example"]
        if growing:  # the cache holds exactly the positions <= index after the append
            self_bias = None
        else:
            length = tf.shape(cache["layer_0"]["k"])[2]
            self_bias = tf.where(tf.range(length) <= index, 0.0, NEG_INF)[None, None, None, :]
        new_cache = {"per_example": static}
        for i, layer in enumerate(self.decoder_layers):
            x, new_cache[f"layer_{i}"] = layer.step(
                x, cache[f"layer_{i}"], static[f"layer_{i}"], self_bias, static["bias"], index,
                growing)
        return self._logits(x), new_cache


def _collect(attention: dict, weights: dict) -> None:
    """Appends each kind's weights of one layer to `attention[kind]`."""
    for kind, value in weights.items():
        attention.setdefault(kind, []).append(value)


def build(hparams: HParams, vocab_size: int) -> Transformer:
    """Instantiates `Transformer(hparams, vocab_size)` and creates its weights."""
    model = Transformer(hparams, vocab_size)
    model.build(None)
    return model
