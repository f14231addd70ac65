"""Pieces shared by beam search, greedy decoding and sampling.

Conventions of every search in this package:

- `symbols_to_logits_fn(ids, step, cache) -> (logits, new_cache)`: `ids` int32
  [rows] holds the token at decoder position `step` (at step 0 the initial ids,
  PAD = 0 used as the start symbol, as in tensor2tensor); `logits` float32
  [rows, vocab] predict the token at position `step + 1` of the decoder input,
  i.e. output position `step`. `new_cache` must have the structure and shapes of
  `cache` (preallocate it; a growing cache cannot live in a compiled loop).
- Outputs are written into a fixed-size buffer of `buffer_length` tokens,
  PAD (0) after the end of each hypothesis, so the whole search is one
  `tf.while_loop` that runs under `tf.function(jit_compile=True)`.
"""

from typing import Any, Optional, Tuple

import numpy as np
import tensorflow as tf

from t2t_lite.errors import T2TError, did_you_mean

# A finite "minus infinity": arithmetic on it never gives NaN, and anything below
# DEAD_THRESHOLD is treated as an impossible hypothesis.
NEG_INF = -1.0e9
DEAD_THRESHOLD = NEG_INF / 2

LENGTH_PENALTIES = ("gnmt", "fairseq")


def length_penalty(length, alpha, kind: str = "gnmt") -> tf.Tensor:
    """The divisor applied to a hypothesis' log probability.

    Args:
      length: number of output tokens, the EOS token included (tensor2tensor's
        convention), any shape.
      alpha: strength; 0 disables the penalty (divisor 1).
      kind: "gnmt" for ((5 + length) / 6) ** alpha (Wu et al. 2016, the paper and
        tensor2tensor) or "fairseq" for length ** alpha.

    Returns:
      float32 tensor of the shape of `length`.
    """
    length = tf.cast(length, tf.float32)
    alpha = tf.cast(alpha, tf.float32)
    if kind == "gnmt":
        return tf.pow((5.0 + length) / 6.0, alpha)
    if kind == "fairseq":
        return tf.pow(length, alpha)
    raise T2TError(f"Unknown length_penalty {kind!r}; expected one of {LENGTH_PENALTIES}."
                   + did_you_mean(kind, LENGTH_PENALTIES))


def resolve_max_lengths(max_decode_length, batch_size,
                        buffer_length: Optional[int]) -> Tuple[Any, tf.Tensor]:
    """Returns (buffer length, per-example maximum lengths int32 [batch]).

    The buffer length is `buffer_length` when given, else the maximum of
    `max_decode_length` when that value is known while tracing (a Python int,
    a NumPy array, a constant). Otherwise it is a dynamic tensor, which works in
    eager mode and plain `tf.function` but not under XLA: pass `buffer_length`
    there. Per-example lengths are clipped to [1, buffer length].
    """
    if buffer_length is None:
        static = tf.get_static_value(tf.convert_to_tensor(max_decode_length))
        if static is not None:
            buffer_length = int(np.max(static))
    if isinstance(buffer_length, (int, np.integer)) and buffer_length < 1:
        raise ValueError(f"The maximum decode length must be at least 1, got {buffer_length}.")
    max_lengths = tf.broadcast_to(tf.cast(max_decode_length, tf.int32), [batch_size])  # [batch]
    if buffer_length is None:
        buffer_length = tf.maximum(tf.reduce_max(max_lengths), 1)
    max_lengths = tf.clip_by_value(max_lengths, 1, buffer_length)
    return buffer_length, max_lengths


def write_at(buffer: tf.Tensor, position, values: tf.Tensor) -> tf.Tensor:
    """Returns `buffer` [..., T] with `values` [...] written at index `position` of the last axis.

    A select rather than a scatter: it keeps static shapes and fuses under XLA.
    """
    hit = tf.equal(tf.range(tf.shape(buffer)[-1]), position)  # [T]
    return tf.where(hit, values[..., tf.newaxis], buffer)


def _map_cache(fn, cache, skip_static: bool):
    """Applies `fn` to every tensor of `cache`; with `skip_static`, leaves any
    sub-dict stored under the key "static" untouched."""
    if isinstance(cache, dict):
        return {key: (value if skip_static and key == "static"
                      else _map_cache(fn, value, skip_static))
                for key, value in cache.items()}
    if isinstance(cache, (list, tuple)):
        mapped = [_map_cache(fn, value, skip_static) for value in cache]
        return type(cache)(*mapped) if hasattr(cache, "_fields") else type(cache)(mapped)
    return fn(cache)


def tile_cache(cache, beam_size: int):
    """[batch, ...] -> [batch * beam, ...] for every tensor, each example repeated
    `beam_size` times (beam is the inner index of the flattened axis)."""
    if beam_size == 1:
        return cache
    return _map_cache(lambda t: tf.repeat(t, beam_size, axis=0), cache, skip_static=False)


def gather_cache(cache, flat_indices: tf.Tensor):
    """Reorders the leading [batch * beam] axis of every non-static tensor by
    `flat_indices` int32 [batch * beam] (the parent row of each new row)."""
    return _map_cache(lambda t: tf.gather(t, flat_indices, axis=0), cache, skip_static=True)


def keep_static_shapes(new_cache, old_cache):
    """Gives each tensor of `new_cache` the static shape of its `old_cache`
    counterpart, so a loop whose batch size is only known at run time does not
    see a loop variable "change" shape from [4, 10] to [None, 10].

    Raises:
      ValueError: the callback changed a cache tensor's shape (caches must be
        preallocated at their full size).
    """
    def merge(new, old):
        if not new.shape.is_compatible_with(old.shape):
            raise ValueError(f"symbols_to_logits_fn changed a cache tensor's shape from "
                             f"{old.shape} to {new.shape}; preallocate the cache at full size.")
        if not tf.executing_eagerly():
            new.set_shape(old.shape)
        return new

    return tf.nest.map_structure(merge, new_cache, old_cache)
