"""Small tensor helpers shared by the model and the searches.

Both write "at a position" with the same argument order, (tensor, index,
values), but in two ways that are not interchangeable:

  - `add_at_position` (the model's key/value cache): a one-hot add into a
    position that still holds zeros, along axis 2 of [B, H, L, X]. A plain
    TensorFlow op, so it loads in TF Serving's SavedModel loader (which has no
    kernel for XLA's `dynamic_update_slice`).
  - `write_at_last_axis` (the searches' output buffers and states): a select
    along the last axis, which overwrites whatever was there, works for any
    dtype and fuses under XLA.
"""

import tensorflow as tf

# Added to logits at masked positions. Finite, so arithmetic on it never gives
# NaN (a fully masked attention row gives a uniform distribution).
NEG_INF = -1.0e9


def add_at_position(tensor: tf.Tensor, index, values: tf.Tensor) -> tf.Tensor:
    """Returns `tensor` [B, H, L, X] with `values` [B, H, 1, X] added at position `index` of axis 2.

    For the model's preallocated key/value cache: position `index` must still
    hold zeros (it is written exactly once), so adding is exact. Use
    `write_at_last_axis` to overwrite.
    """
    position = tf.one_hot(index, tf.shape(tensor)[2], dtype=tensor.dtype)  # [L]
    return tensor + values * position[None, None, :, None]


def write_at_last_axis(tensor: tf.Tensor, index, values: tf.Tensor) -> tf.Tensor:
    """Returns `tensor` [..., T] with `values` [...] written at `index` of the last axis.

    For the searches' buffers (output ids, per-hypothesis histories): a select
    rather than a scatter, so it keeps static shapes and fuses under XLA, and
    whatever was at `index` is replaced.
    """
    hit = tf.equal(tf.range(tf.shape(tensor)[-1]), index)  # [T]
    return tf.where(hit, values[..., tf.newaxis], tensor)
