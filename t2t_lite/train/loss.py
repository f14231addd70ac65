"""Label-smoothed cross-entropy over non-padding target tokens (section 5.4)."""

import tensorflow as tf


def smoothed_cross_entropy(logits, targets, label_smoothing: float):
    """Sum of label-smoothed cross-entropies over real (non-zero) target tokens.

    The smoothed target puts 1 - eps on the true token and eps / (V - 1) on
    each other token (tensor2tensor's convention). Returning the sum and the
    token count, rather than their ratio, lets the trainer normalise by the
    number of real target tokens in the *global* batch, so the loss does not
    depend on how the batch is split over replicas or accumulation steps.

    Args:
      logits: float [B, T, V].
      targets: int [B, T], 0 = padding.
      label_smoothing: eps in [0, 1).
    Returns:
      (loss_sum float32 scalar, num_tokens float32 scalar).
    """
    logits = tf.cast(logits, tf.float32)
    vocab_size = tf.shape(logits)[-1]
    log_probs = tf.nn.log_softmax(logits)  # [B, T, V]
    true_log_prob = tf.gather(log_probs, targets, batch_dims=2)  # [B, T]
    confidence = 1.0 - label_smoothing
    low = label_smoothing / tf.cast(vocab_size - 1, tf.float32)
    # sum_v q(v) log p(v) without materialising the one-hot q.
    expected = (confidence - low) * true_log_prob + low * tf.reduce_sum(log_probs, axis=-1)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    return -tf.reduce_sum(expected * weights), tf.reduce_sum(weights)


def token_statistics(logits, targets):
    """Unsmoothed negative log-likelihood sum and correct-token count over real tokens.

    Returns:
      (nll_sum, num_correct, num_tokens), float32 scalars: perplexity is
      exp(nll_sum / num_tokens), accuracy num_correct / num_tokens.
    """
    logits = tf.cast(logits, tf.float32)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=targets.dtype), targets),
                      tf.float32)
    return (tf.reduce_sum(nll * weights), tf.reduce_sum(correct * weights),
            tf.reduce_sum(weights))
