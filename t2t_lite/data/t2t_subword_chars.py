"""Character-level graph ops for t2t's SubwordTextEncoder (`t2t_subwords`).

t2t's tokenizer splits where "alphanumeric" characters (Unicode categories L*
and N*, per Python's `unicodedata`) meet others, and its escaping works on code
points while spans are reported in UTF-8 bytes: these helpers compute both as
TensorFlow ops, so the vocabulary runs in a graph and in a SavedModel.
"""

import functools
import sys
import unicodedata

import numpy as np
import tensorflow as tf

REPLACEMENT_CHAR = 0xFFFD    # for a `\NNN;` naming a surrogate (see `t2t_subwords`)


@functools.lru_cache(maxsize=1)
def alnum_bounds() -> np.ndarray:
    """Sorted code points where t2t's "alphanumeric" property changes: the
    alphanumeric ones are [b[0], b[1]), [b[2], b[3]), ... (categories L* and N*
    over range(sys.maxunicode), as t2t's tokenizer builds its set)."""
    bounds, inside = [], False
    for cp in range(sys.maxunicode):
        alnum = unicodedata.category(chr(cp))[0] in "LN"
        if alnum != inside:
            bounds.append(cp)
            inside = alnum
    if inside:
        bounds.append(sys.maxunicode)
    return np.array(bounds, np.int64)


def is_alnum(code_points: tf.Tensor) -> tf.Tensor:
    """bool, same shape: whether each code point is t2t-alphanumeric."""
    bounds = tf.constant(alnum_bounds())
    where = tf.searchsorted(bounds, tf.cast(code_points, tf.int64), side="right",
                            out_type=tf.int64)
    return where % 2 == 1


def utf8_length(code_points: tf.Tensor) -> tf.Tensor:
    """int64: bytes of each (valid) code point in UTF-8."""
    cp = tf.cast(code_points, tf.int64)
    return (1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64)
            + tf.cast(cp >= 0x10000, tf.int64))


def encode_chars(code_points: tf.Tensor) -> tf.Tensor:
    """tf.string [M]: each code point of int [M] as one UTF-8 character."""
    return tf.strings.unicode_encode(tf.expand_dims(tf.cast(code_points, tf.int32), 1), "UTF-8",
                                     errors="replace", replacement_char=REPLACEMENT_CHAR)


def position_in_row(ragged: tf.RaggedTensor) -> tf.Tensor:
    """int64 [values]: each value's index inside its row."""
    rows = ragged.value_rowids()
    return tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(ragged.row_splits, rows)
