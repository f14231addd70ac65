"""Teacher-forced scoring: log P(target | source) of given pairs (t2t-decoder --score_file)."""

import math
from typing import List, Sequence

import tensorflow as tf

from t2t_lite.data.layout import PAD_ID
from t2t_lite.decode.translator import truncate_and_pad


def score_pairs(models, vocab, sources: Sequence[str], targets: Sequence[str],
                max_input_length: int = 0) -> List[float]:
    """log P(target | source), summed over the target's subwords and EOS.

    Args:
      models: one model, or several (an ensemble): then P is the mean of the
        models' probabilities at each position, as the ensemble search uses.
      max_input_length: sources and targets longer than this many subwords (EOS
        included) are truncated as the decoder truncates inputs; 0: the
        models' max_length.
    """
    models = list(models) if isinstance(models, (list, tuple)) else [models]
    max_length = max_input_length or min(m.hparams.max_length for m in models)

    def encode(texts):
        return truncate_and_pad(vocab.encode_inputs(tf.constant(list(texts), dtype=tf.string)),
                                max_length)

    inputs, outputs = encode(sources), encode(targets)
    log_probs = [tf.nn.log_softmax(model({"inputs": inputs, "targets": outputs},
                                         training=False)) for model in models]  # [B, T, V] each
    log_mean = tf.reduce_logsumexp(tf.stack(log_probs), axis=0) - math.log(len(models))
    token_log_probs = tf.gather(log_mean, outputs, batch_dims=2)  # [B, T]
    mask = tf.cast(tf.not_equal(outputs, PAD_ID), tf.float32)
    return tf.reduce_sum(token_log_probs * mask, axis=1).numpy().tolist()
