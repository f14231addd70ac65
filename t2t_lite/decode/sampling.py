"""Greedy decoding and sampling (temperature, top-k) over a logits callback.

Both choose one token per example per step and share one compiled loop; see
`search_common` for the callback contract. Beam search with `beam_size=1`
runs `greedy_search`.
"""

from typing import Optional, Sequence, Tuple

import tensorflow as tf

from t2t_lite.decode.logits_processors import LogitsProcessors
from t2t_lite.decode.search_common import (cache_shape_invariants, compact_cache,
                                           has_growing_axes, keep_static_shapes,
                                           leading_axis_free, loop_shape_invariants,
                                           resolve_max_lengths, write_rows)
from t2t_lite.tensors import write_at_last_axis


def _decode_loop(symbols_to_logits_fn, choose_fn, initial_ids, max_decode_length, eos_id,
                 cache, buffer_length, compact: bool = False,
                 processors: LogitsProcessors = LogitsProcessors()):
    """One token per example per step until EOS or its maximum length.

    Args:
      choose_fn: (logits float32 [rows, vocab], step) -> int32 [rows]; must
        treat every row on its own when `compact` (argmax does, position-keyed
        random draws do not).
      compact: examples leave the loop when they end (results written back by
        their original index, the cache shrinking with them); not under XLA.
      processors: transformers' logits processors: `choose_fn` sees them applied to
        the raw logits (as transformers' greedy search), the log-probabilities are
        the beam search's (`LogitsProcessors.log_probs`).

    Returns:
      ids int32 [batch, T] (EOS kept, PAD after it), log_probs float32 [batch]
      (sum of log_softmax(logits) of the chosen tokens), lengths int32 [batch]
      (tokens produced, EOS included), and the rows computed over all steps
      (int32 scalar).
    """
    initial_ids = tf.cast(initial_ids, tf.int32)  # [batch]
    batch_size = tf.shape(initial_ids)[0]
    buffer_length, max_lengths = resolve_max_lengths(max_decode_length, batch_size,
                                                     buffer_length)
    num_steps = tf.reduce_max(max_lengths)
    cache = {} if cache is None else cache
    invariants = cache_shape_invariants(cache)
    if compact:
        invariants = leading_axis_free(invariants)

    def cond(step, rows, max_lengths, ids, last, done, log_probs, lengths, *_):
        return tf.logical_and(step < num_steps, tf.logical_not(tf.reduce_all(done)))

    def body(step, rows, max_lengths, ids, last, done, log_probs, lengths, cache, outputs,
             row_steps):
        logits, new_cache = symbols_to_logits_fn(last, step, cache)
        cache = keep_static_shapes(new_cache, invariants)
        logits = tf.cast(logits, tf.float32)  # [n, vocab]
        row_steps += tf.shape(last)[0]
        if processors:
            token = tf.cast(choose_fn(processors.choice_logits(logits, step, max_lengths),
                                      step), tf.int32)  # [n]
            token_log_prob = tf.gather(processors.log_probs(logits, step, max_lengths), token,
                                       axis=1, batch_dims=1)  # [n]
        else:
            token = tf.cast(choose_fn(logits, step), tf.int32)  # [n]
            token_log_prob = (tf.gather(logits, token, axis=1, batch_dims=1)
                              - tf.reduce_logsumexp(logits, axis=1))  # [n]
        token = tf.where(done, 0, token)
        ids = write_at_last_axis(ids, step, token)
        log_probs += tf.where(done, 0.0, token_log_prob)
        lengths += tf.cast(tf.logical_not(done), tf.int32)
        done = done | tf.equal(token, eos_id) | (step + 1 >= max_lengths)
        examples = (rows, max_lengths, ids, token, done, log_probs, lengths)
        if not compact:
            return (step + 1, *examples, cache, outputs, row_steps)

        def leave():
            ended = tf.cast(tf.where(done)[:, 0], tf.int32)
            written = write_rows(outputs, tf.gather(rows, ended),
                                 tuple(tf.gather(t, ended) for t in (ids, log_probs, lengths)))
            stay = tf.cast(tf.where(tf.logical_not(done))[:, 0], tf.int32)
            return (tuple(tf.gather(t, stay) for t in examples),
                    compact_cache(cache, stay, stay, stay), written)

        examples, cache, outputs = tf.cond(tf.reduce_any(done), leave,
                                           lambda: (examples, cache, outputs))
        return (step + 1, *examples, keep_static_shapes(cache, invariants), outputs, row_steps)

    ids = tf.zeros([batch_size, buffer_length], tf.int32)
    zeros = tf.zeros([batch_size], tf.float32), tf.zeros([batch_size], tf.int32)
    state = (tf.constant(0), tf.range(batch_size), max_lengths, ids, initial_ids,
             tf.zeros([batch_size], tf.bool), *zeros, cache, (ids, *zeros), tf.constant(0))
    if compact or has_growing_axes(cache):
        shapes = loop_shape_invariants(state, 8, invariants)
        if compact:
            shapes = (shapes[0], *leading_axis_free(shapes[1:8]), *shapes[8:])
        loop_options = {"shape_invariants": shapes}
    else:
        loop_options = {}
    final = tf.while_loop(cond, body, state, maximum_iterations=num_steps, **loop_options)
    rows, ids, log_probs, lengths, outputs, row_steps = (final[1], final[3], final[6], final[7],
                                                         final[9], final[10])
    # Without `compact` every example is still here; with it, any left at the end.
    return (*write_rows(outputs, rows, (ids, log_probs, lengths)), row_steps)


def greedy_search(symbols_to_logits_fn, initial_ids, max_decode_length, eos_id: int = 1,
                  cache=None, buffer_length: Optional[int] = None
                  ) -> Tuple[tf.Tensor, tf.Tensor]:
    """Argmax decoding: the most likely token each step, stopping at EOS.

    Args:
      symbols_to_logits_fn: (ids int32 [batch], step, cache) -> (logits [batch, vocab], cache).
      initial_ids: int32 [batch], usually zeros (PAD as the start symbol).
      max_decode_length: int32 scalar or [batch]; a hypothesis that reaches its
        example's limit stops there without EOS.
      eos_id: the end-of-sentence id, kept in the output.
      cache: nested dict of [batch, ...] tensors passed to the callback.
      buffer_length: static output length; needed under XLA when
        `max_decode_length` is not known while tracing.

    Returns:
      ids int32 [batch, T] (PAD after EOS), log_probs float32 [batch].
    """
    ids, log_probs, _, _ = _decode_loop(
        symbols_to_logits_fn, lambda logits, step: tf.argmax(logits, axis=-1, output_type=tf.int32),
        initial_ids, max_decode_length, eos_id, cache, buffer_length)
    return ids, log_probs


def sample(symbols_to_logits_fn, initial_ids, max_decode_length, temperature: float = 1.0,
           top_k: int = 0, seed: Sequence[int] = (0, 0), eos_id: int = 1, cache=None,
           buffer_length: Optional[int] = None, return_row_steps: bool = False,
           processors: LogitsProcessors = LogitsProcessors()):
    """Random sampling from softmax(logits / temperature), optionally restricted
    to the `top_k` most likely tokens.

    Stateless random ops keyed on (`seed`, step): the same seed gives the same
    output in eager, `tf.function` and XLA. `temperature=0` is greedy decoding.

    Args:
      temperature: > 0 flattens (> 1) or sharpens (< 1) the distribution.
      top_k: sample among the k most likely tokens; 0 means the whole vocabulary.
      seed: two integers (or an int32 [2] tensor).
      return_row_steps: also return the rows computed over all steps.
      processors: transformers' logits processors, applied to the logits before
        temperature and top-k (as transformers does).
      Other arguments as in `greedy_search`.

    Returns:
      ids int32 [batch, T], log_probs float32 [batch] under the model's own
      distribution (before temperature and top-k); with `return_row_steps`,
      the row count (int32 scalar) third.
    """
    if isinstance(temperature, (int, float)) and temperature == 0:
        def choose(logits, step):
            return tf.argmax(logits, axis=-1, output_type=tf.int32)
    else:
        seed = tf.cast(seed, tf.int32)

        def choose(logits, step):  # logits [batch, vocab]
            logits = logits / tf.cast(temperature, tf.float32)
            if top_k:
                kth_best = tf.math.top_k(logits, k=top_k).values[:, -1:]  # [batch, 1]
                logits = tf.where(logits < kth_best, tf.float32.min, logits)
            step_seed = tf.random.experimental.stateless_fold_in(seed, step)
            return tf.random.stateless_categorical(logits, 1, step_seed, dtype=tf.int32)[:, 0]

    ids, log_probs, _, row_steps = _decode_loop(symbols_to_logits_fn, choose, initial_ids,
                                                max_decode_length, eos_id, cache, buffer_length,
                                                processors=processors)
    return (ids, log_probs, row_steps) if return_row_steps else (ids, log_probs)
