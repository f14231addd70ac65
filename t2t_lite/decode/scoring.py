"""Teacher-forced scoring: log P(target | source) of given pairs (t2t-decoder --score_file)."""

import math
from typing import List, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.data.layout import PAD_ID
from t2t_lite.decode.search import input_limit
from t2t_lite.decode.translator import truncate_and_pad


def score_pairs(models, vocab, sources: Sequence[str], targets: Sequence[str],
                max_input_length: int = 0, batch_size: int = 32) -> List[float]:
    """log P(target | source), summed over the target's subwords and EOS.

    Pairs are scored `batch_size` at a time, sorted by length (less padding),
    and returned in their order: the logits of a batch are [batch, T, vocab],
    so a whole test set at once would not fit in memory with a real vocabulary.

    Args:
      models: one model, or several (an ensemble): then P is the mean of the
        models' probabilities at each position, as the ensemble search uses.
      max_input_length: sources and targets longer than this many subwords (EOS
        included) are truncated as the decoder truncates inputs; 0: the
        models' max_length; -1 (`NO_INPUT_LIMIT`): none are.
    """
    models = list(models) if isinstance(models, (list, tuple)) else [models]
    max_length = input_limit(max_input_length, [m.hparams.max_length for m in models])
    if not sources:
        return []

    def strings(texts):
        return tf.constant(list(texts), dtype=tf.string)

    source_ids = vocab.encode_inputs(strings(sources))  # [N, (S)], each row ending with EOS
    target_ids = vocab.encode_targets(strings(targets))  # [N, (T)]
    lengths = np.maximum(source_ids.row_lengths().numpy(), target_ids.row_lengths().numpy())
    order = np.argsort(-lengths, kind="stable")
    scores = [0.0] * len(sources)
    for begin in range(0, len(order), batch_size):
        rows = order[begin:begin + batch_size]
        batch_scores = _score_batch(models, truncate_and_pad(tf.gather(source_ids, rows),
                                                             max_length),
                                    truncate_and_pad(tf.gather(target_ids, rows), max_length))
        for row, score in zip(rows, batch_scores):
            scores[row] = score
    return scores


def _score_batch(models, inputs: tf.Tensor, outputs: tf.Tensor) -> List[float]:
    """inputs int32 [B, S], outputs int32 [B, T] -> B sums of log P(output token)."""
    log_probs = [tf.nn.log_softmax(model({"inputs": inputs, "targets": outputs},
                                         training=False)) for model in models]  # [B, T, V] each
    log_mean = tf.reduce_logsumexp(tf.stack(log_probs), axis=0) - math.log(len(models))
    token_log_probs = tf.gather(log_mean, outputs, batch_dims=2)  # [B, T]
    mask = tf.cast(tf.not_equal(outputs, PAD_ID), tf.float32)
    return tf.reduce_sum(token_log_probs * mask, axis=1).numpy().tolist()
