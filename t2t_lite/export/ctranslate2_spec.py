"""A t2t-lite Transformer's weights as a CTranslate2 `TransformerSpec`.

CTranslate2 ships converters for OpenNMT, fairseq, Marian and Hugging Face
models, not for t2t-lite (nor tensor2tensor), so the mapping is written here
with `ctranslate2.specs`. What each part of the model becomes:

  t2t-lite (Keras, kernels [in, out])        CTranslate2 (linear weights [out, in])
  self-attention qkv_kernel [D, 3D]          self_attention/linear_0 [3D, D] (Q, K, V)
  self-attention output_kernel [D, D]        self_attention/linear_1
  cross-attention q_kernel, kv_kernel        attention/linear_0 (Q), linear_1 [2D, D] (K, V)
  cross-attention output_kernel              attention/linear_2
  (no attention biases)                      (biases left unset: bias-free)
  feed_forward kernel_1/bias_1, kernel_2/... ffn/linear_0, ffn/linear_1 (with biases)
  *_residual layer norms                     <sub-layer>/layer_norm (post- or pre-norm)
  encoder_norm / decoder_norm (pre-norm)     encoder/layer_norm, decoder/layer_norm
  embeddings x sqrt(D)                       embeddings, scale_embeddings = sqrt(D)
  sinusoids, sin and cos interleaved         position_encodings/encodings (written out)
  (t2t's layout, target-space row: imported) (written out; the row folded into the encoder's)
  tied softmax (embedding matrix)            decoder/projection (no bias)
  (t2t vocabulary: no unknown id)            one more row: the unknown token's (see below)

Two choices keep CTranslate2's output equal to t2t-lite's, not merely close:

  - t2t-lite embeds PAD (id 0, also the decoder's start symbol) as zeros. The
    decoder's (and a shared source's) embedding table is written with row 0
    set to zero, so the start symbol, and a PAD the model might emit, embed
    exactly as in t2t-lite; the projection keeps the real row 0, so PAD's
    logit, and with it every log probability, is unchanged. This costs one
    more [V, D] matrix than a tied model needs; CTranslate2's
    `start_from_zero_embedding` would zero only position 0.
  - Position encodings are written as a table: t2t-lite interleaves sin and
    cos (the paper's PE(p, 2i), PE(p, 2i + 1)), CTranslate2's built-in table
    puts all sines before all cosines. Learned positions ("emb", Table 3 E)
    are copied and their last row repeated, as t2t-lite clamps positions.

CTranslate2 needs an unknown token. A SentencePiece vocabulary has one (id 2);
tensor2tensor's SubwordTextEncoder (imported models) has none, and its id 2 is
an ordinary subtoken. For it the spec gets one extra token and row,
`unk_token`, that no text tokenizes to and the model never outputs (zero
embeddings, logit `UNK_LOGIT`): see `transformer_spec`.

Not representable (refused, `T2TError`): d_k different from d_v (Table 3 B).
Not written yet (refused): an imported Marian model's options (`unwritten_options`).
"""

from typing import List, Optional, Tuple

import numpy as np

from t2t_lite.errors import T2TError
from t2t_lite.model.layers import TIMING_SIGNALS

# Rows of the position table: the longest source (CTranslate2's default
# max_input_length) or output it can handle.
DEFAULT_MAX_POSITIONS = 1024
# The logit of an unknown token added for a vocabulary without one (`transformer_spec`):
# far below any real logit, so exp() of it beside them is exactly 0 in float32 and float16,
# yet finite in float16 (an -inf might turn into NaN in some kernel).
UNK_LOGIT = -1e4


def _weights(variable) -> np.ndarray:
    return np.asarray(variable.numpy(), dtype=np.float32)


def _linear(spec, kernel, bias=None) -> None:
    """A Keras kernel [in, out] (and bias [out]) into a CTranslate2 LinearSpec ([out, in])."""
    spec.weight = np.ascontiguousarray(_weights(kernel).T)
    if bias is not None:
        spec.bias = _weights(bias)


def _layer_norm(spec, norm) -> None:
    spec.gamma = _weights(norm.gamma)
    spec.beta = _weights(norm.beta)


def _feed_forward(spec, layer) -> None:
    ffn = layer.feed_forward
    _linear(spec.linear_0, ffn.kernel_1, ffn.bias_1)
    _linear(spec.linear_1, ffn.kernel_2, ffn.bias_2)
    _layer_norm(spec.layer_norm, layer.feed_forward_residual.norm)


def _self_attention(spec, layer) -> None:
    attention = layer.self_attention
    _linear(spec.linear[0], attention.qkv_kernel)
    _linear(spec.linear[1], attention.output_kernel)
    _layer_norm(spec.layer_norm, layer.self_attention_residual.norm)


def _cross_attention(spec, layer) -> None:
    attention = layer.cross_attention
    _linear(spec.linear[0], attention.q_kernel)
    _linear(spec.linear[1], attention.kv_kernel)
    _linear(spec.linear[2], attention.output_kernel)
    _layer_norm(spec.layer_norm, layer.cross_attention_residual.norm)


def position_table(model, rows: int) -> np.ndarray:
    """float32 [rows, D]: the encoding t2t-lite adds at positions 0 .. rows - 1."""
    hp = model.hparams
    if hp.pos == "emb":
        table = _weights(model.positions.table)  # [max_length, D]
        last = np.repeat(table[-1:], max(0, rows - len(table)), axis=0)
        return np.concatenate([table, last])[:rows]
    timing = TIMING_SIGNALS[hp.timing_signal]
    return timing(np.arange(rows), hp.hidden_size).numpy().astype(np.float32)


def encoder_position_table(model, rows: int) -> np.ndarray:
    """`position_table`, plus the target-space row an imported t2t model adds to every
    encoder position (CTranslate2 has no such input; folded into its position table)."""
    table = position_table(model, rows)
    if model.target_space is not None:
        table = table + _weights(model.target_space.table)[model.hparams.target_space_id]
    return table


def _embedding_without_pad(matrix: np.ndarray) -> np.ndarray:
    """The embedding table with PAD's row (id 0) zeroed, as t2t-lite embeds it."""
    table = matrix.copy()
    table[0] = 0.0
    return table


def _with_unk_row(matrix: np.ndarray) -> np.ndarray:
    """`matrix` [V, D] with a row of zeros appended: the unknown token's (see
    `transformer_spec`)."""
    return np.concatenate([matrix, np.zeros([1, matrix.shape[1]], matrix.dtype)])


# Options of imported Marian models this mapping does not write (yet): (name, the value
# it writes, what another value means, in words).
_UNWRITTEN_OPTIONS = (
    ("attention_bias", False, lambda hp: "its attention biases"),
    ("ffn_activation", "relu", lambda hp: f"its {hp.ffn_activation} activation"),
    ("scale_embedding", True, lambda hp: "its unscaled embeddings"),
    ("logits_bias", False, lambda hp: "its output bias"),
    ("embed_padding", False,
     lambda hp: "its trained start row (<pad>'s embedding, where CTranslate2 starts from zeros)"),
    ("source_vocab_size", 0,
     lambda hp: f"its separate source vocabulary ({hp.source_vocab_size} ids)"),
)


def unwritten_options(hp) -> List[Tuple[str, str]]:
    """("name=value", what it means in words) of each option of `hp` this mapping does
    not write (an imported Marian model's), in a fixed order."""
    return [(f"{name}={getattr(hp, name)}", words(hp))
            for name, written, words in _UNWRITTEN_OPTIONS if getattr(hp, name) != written]


def check_convertible(hp) -> None:
    """Raises `T2TError` (one line) for a model CTranslate2 cannot represent.
    (Channels divisible by num_heads: `HParams` already guarantees it.)"""
    if hp.key_channels != hp.value_channels:
        raise T2TError(f"CTranslate2 needs d_k = d_v; this model has attention_key_channels="
                       f"{hp.key_channels} and attention_value_channels={hp.value_channels}.")
    # refused, not converted into a model that would translate differently
    unwritten = [setting for setting, _ in unwritten_options(hp)]
    if unwritten:
        raise T2TError(f"The CTranslate2 export does not write this model's "
                       f"{', '.join(unwritten)} (an imported Marian model's options).")


def transformer_spec(model, pieces: List[str], max_positions: int = DEFAULT_MAX_POSITIONS,
                     unk_token: Optional[str] = None):
    """The CTranslate2 spec of `model` (a built t2t-lite `Transformer`).

    Args:
      model: the Keras model, weights loaded.
      pieces: CTranslate2's token for each of the model's ids, in id order (PAD,
        EOS first; a SentencePiece vocabulary's UNK third), all different.
      max_positions: rows of the position table: the longest source (after
        CTranslate2's `max_input_length` truncation, EOS included) and the
        longest output (`max_decoding_length`) it can translate.
      unk_token: None: `pieces[2]` is the unknown token (SentencePiece's UNK).
        Else a string not among `pieces`, for a vocabulary without an unknown id
        (tensor2tensor's): registered as one extra last token with a row of its
        own: zero embeddings, a zero projection row and a bias of `UNK_LOGIT`
        (0 for every other row), so it is never chosen and every other
        token's log probability is unchanged (its exp underflows to exactly 0
        beside them). Ids 0 .. V - 1 stay the model's.

    Returns:
      A validated `ctranslate2.specs.TransformerSpec` (not yet optimized or saved).
    """
    from ctranslate2 import specs  # an optional extra: imported only when converting

    hp = model.hparams
    check_convertible(hp)
    if len(pieces) != model.vocab_size:
        raise T2TError(f"The vocabulary has {len(pieces)} pieces, the model {model.vocab_size}.")
    if len(set(pieces)) != len(pieces):
        raise T2TError("The vocabulary's CTranslate2 tokens are not all different: CTranslate2 "
                       "would map a repeated one to its first id.")
    if unk_token is not None and unk_token in pieces:
        raise T2TError(f"The unknown token {unk_token!r} is one of the vocabulary's tokens.")
    pre_norm = hp.norm_placement == "pre"
    head_dim = hp.key_channels // hp.num_heads
    head_dim = None if head_dim * hp.num_heads == hp.hidden_size else head_dim
    encoder = specs.TransformerEncoderSpec(hp.encoder_layers, hp.num_heads, pre_norm=pre_norm,
                                           head_dim=head_dim)
    decoder = specs.TransformerDecoderSpec(hp.decoder_layers, hp.num_heads, pre_norm=pre_norm,
                                           head_dim=head_dim)
    spec = specs.TransformerSpec(encoder, decoder)

    target = _weights(model.target_embedding.weights_matrix)  # [V, D]
    source = target if hp.shared_embedding else _weights(model.source_embedding.weights_matrix)
    projection = target if model.softmax is None else _weights(model.softmax.weights_matrix)
    source, target = _embedding_without_pad(source), _embedding_without_pad(target)
    tokens = list(pieces)
    if unk_token is not None:  # one more row, for the unknown token only
        tokens.append(unk_token)
        source, target, projection = (_with_unk_row(m) for m in (source, target, projection))
        bias = np.zeros([len(tokens)], np.float32)
        bias[-1] = UNK_LOGIT
        decoder.projection.bias = bias
    encoder.embeddings[0].weight = source
    decoder.embeddings.weight = target
    decoder.projection.weight = projection
    encoder.scale_embeddings = decoder.scale_embeddings = True  # x sqrt(D), as t2t-lite
    encoder.position_encodings.encodings = encoder_position_table(model, max_positions)
    decoder.position_encodings.encodings = position_table(model, max_positions)

    for layer, layer_spec in zip(model.encoder_layers, encoder.layer):
        _self_attention(layer_spec.self_attention, layer)
        _feed_forward(layer_spec.ffn, layer)
    for layer, layer_spec in zip(model.decoder_layers, decoder.layer):
        _self_attention(layer_spec.self_attention, layer)
        _cross_attention(layer_spec.attention, layer)
        _feed_forward(layer_spec.ffn, layer)
    if pre_norm:
        _layer_norm(encoder.layer_norm, model.encoder_norm)
        _layer_norm(decoder.layer_norm, model.decoder_norm)

    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    pad, eos = tokens[0], tokens[1]
    unk = tokens[2] if unk_token is None else unk_token
    config = spec.config
    config.decoder_start_token = pad  # t2t's start symbol is PAD (id 0)
    config.bos_token = pad            # unused: no source BOS, the start token is set above
    config.eos_token, config.unk_token = eos, unk
    config.add_source_eos = True      # t2t-lite encodes a source as its pieces + EOS
    config.layer_norm_epsilon = float(hp.layer_norm_epsilon)  # CTranslate2's default is 1e-5
    spec.validate()
    return spec
