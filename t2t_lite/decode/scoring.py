"""Teacher-forced scoring: log P(target | source) of given pairs (t2t-decoder --score_file)."""

from typing import List, Sequence

import tensorflow as tf

from t2t_lite.data.layout import PAD_ID
from t2t_lite.decode.translator import truncate_and_pad


def score_pairs(model, vocab, sources: Sequence[str], targets: Sequence[str],
                max_input_length: int = 0) -> List[float]:
    """log P(target | source) under `model`, summed over the target's subwords and EOS.

    Args:
      max_input_length: sources and targets longer than this many subwords (EOS
        included) are truncated as the decoder truncates inputs; 0: the
        model's max_length.
    """
    max_length = max_input_length or model.hparams.max_length

    def encode(texts):
        return truncate_and_pad(vocab.encode(tf.constant(list(texts), dtype=tf.string)),
                                max_length)

    inputs, outputs = encode(sources), encode(targets)
    logits = model({"inputs": inputs, "targets": outputs}, training=False)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=outputs, logits=logits)
    mask = tf.cast(tf.not_equal(outputs, PAD_ID), tf.float32)
    return (-tf.reduce_sum(nll * mask, axis=1)).numpy().tolist()
