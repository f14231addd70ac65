"""Beam search with alive and finished beams, as in tensor2tensor.

A pure function over a next-token logits callback (contract in
`search_common`); it knows nothing of Keras or the model:

    ids, scores = beam_search(model_step, tf.zeros([batch], tf.int32), beam_size=4,
                              max_decode_length=input_length + 50, vocab_size=V,
                              alpha=0.6, cache=cache)
    best = ids[:, 0]  # [batch, T]

Each step extends the `beam` alive hypotheses of every example, keeps the 2 *
beam best extensions (at most `beam` of them end in EOS, so at least `beam`
can stay alive), moves those that ended with EOS into the finished set when
they rank among its `beam` best, and keeps the `beam` best unfinished ones
alive. At an example's maximum length the search stops; a hypothesis cut off
there without EOS is never preferred to one that ended (tensor2tensor's rule:
a long loop must not beat a proper translation on its length-penalised score).

Scores are log P(hypothesis) / length_penalty(length), where length counts
the output tokens including EOS (tensor2tensor's convention).

Step 0 runs once per example, before the beam is expanded (every beam would
extend the same empty hypothesis): the callback sees `batch` rows there and
`batch * beam` after.

Cache: the caller passes tensors with leading dim `batch`; after step 0 they are
repeated to [batch * beam] (beam is the inner index) and after every step reordered with a
gather on the parent beam of each surviving hypothesis. Tensors under a dict
key named "static" (at any depth) are tiled but never gathered: per-row
constants, for which the gather would be wasted work; tensors under
"per_example" are neither tiled nor gathered (one copy per example, such as the
encoder's keys and values: the callback folds the beam into them).
"""

from typing import Optional

import tensorflow as tf

from t2t_lite.decode.logits_processors import LogitsProcessors
from t2t_lite.decode.sampling import _decode_loop
from t2t_lite.decode.search_common import DEAD_THRESHOLD, gather_cache
from t2t_lite.decode.search_common import length_penalty as _length_penalty
from t2t_lite.decode.search_common import (cache_shape_invariants, compact_cache,
                                           has_growing_axes, keep_static_shapes,
                                           leading_axis_free, loop_shape_invariants,
                                           resolve_max_lengths, tile_cache, top_k_by_chunks,
                                           write_rows)
from t2t_lite.errors import T2TError
from t2t_lite.tensors import NEG_INF, write_at_last_axis

STOP_RULES = ("t2t", "beam_full", "transformers")


def beam_search(symbols_to_logits_fn, initial_ids, beam_size: int, max_decode_length,
                vocab_size: int, alpha, eos_id: int = 1, cache=None,
                length_penalty: str = "gnmt", stop_early: bool = True,
                buffer_length: Optional[int] = None, compact: bool = False,
                stop_rule: str = "t2t", return_row_steps: bool = False,
                t2t_scores: bool = False, processors: LogitsProcessors = LogitsProcessors()):
    """Batched beam search; runs in eager mode, `tf.function` and XLA.

    Args:
      symbols_to_logits_fn: (ids int32 [rows], step int32 scalar, cache)
        -> (logits float32 [rows, vocab], cache), rows = batch at step 0, then
        batch * beam (fewer with `compact`).
      initial_ids: int32 [batch], the decoder input at step 0 (PAD = 0 in t2t).
      beam_size: number of hypotheses kept per example; 1 runs greedy decoding.
      max_decode_length: int32 scalar or [batch]: at most this many output
        tokens per example; a hypothesis reaching its example's limit without
        EOS is not finished (see Returns).
      vocab_size: size of the logits' last axis (static).
      alpha: length penalty strength (0.6 in the paper).
      eos_id: end-of-sentence id, kept at the end of finished hypotheses.
      cache: nested dict of tensors with leading dim `batch` (see module doc).
      length_penalty: "gnmt" ((5 + len) / 6) ** alpha or "fairseq" len ** alpha.
      stop_early: stop an example once no alive hypothesis, even at the most
        favourable length penalty, can beat its worst finished one (as in
        tensor2tensor); the loop stops when every example has stopped.
        False runs every example to its maximum length.
      stop_rule: "t2t" (`stop_early`'s rule alone) or "beam_full": an example
        also stops as soon as it has `beam` finished hypotheses (the rule
        CTranslate2 describes, not its exact search; faster, and it may miss a longer hypothesis that the length
        penalty would have ranked higher), or "transformers": Hugging Face
        transformers' `_beam_search` with early_stopping=False (of the 2 * beam
        candidates only an EOS among the `beam` best finishes, and at the maximum
        length each of those does, EOS or not; an example stops once it has `beam`
        finished hypotheses and its best alive log-probability over the length
        penalty at the current length is no better than its worst finished one).
        transformers' own penalty is `length_penalty="fairseq"`.
      buffer_length: static output length T; needed under XLA when
        `max_decode_length` is not known while tracing. Defaults to the maximum
        of `max_decode_length`.
      compact: examples leave the loop as they stop (their results are written
        back by their original index; the cache, the static part included,
        shrinks with them), so later steps compute only the examples still
        searching. The outputs are the same. Not under XLA (changing shapes).
      return_row_steps: also return the number of rows the callback computed,
        summed over the steps (int32 scalar): the work done.
      t2t_scores: report scores as tensor2tensor does where it does not divide
        by the length penalty: greedy outputs (beam 1) and the alive hypotheses of
        an example with no finished one get their log-probabilities as scores.
        False: those are length-penalized like finished hypotheses.
      processors: transformers' logits processors to apply (`LogitsProcessors`;
        default none): to log_softmax(logits) in beam search, to the raw logits
        before greedy decoding's argmax.

    Returns:
      ids int32 [batch, beam, T] without the initial id, PAD (0) after EOS;
      scores float32 [batch, beam]. As in tensor2tensor, the hypotheses that
      ended with EOS come first, best first, whatever the scores of unfinished
      ones; only the slots left empty (fewer than `beam` finished, e.g. none
      reached EOS within the maximum length, or early stopping) hold the best
      alive hypotheses, scored at their current length, so every example
      always returns `beam` hypotheses (an example with none finished: see
      `t2t_scores`). With `return_row_steps`, the row count third.
    """
    penalty_kind = length_penalty
    _length_penalty(1, 0.0, penalty_kind)  # validates the name before tracing the loop
    if stop_rule not in STOP_RULES:
        raise T2TError(f"Unknown stop_rule {stop_rule!r}; expected one of {STOP_RULES}.")
    if beam_size == 1:
        # As in tensor2tensor, beam 1 is greedy decoding: the general loop would
        # keep searching past an EOS when alpha > 0 rewards longer outputs.
        ids, log_probs, lengths, row_steps = _decode_loop(
            symbols_to_logits_fn,
            lambda logits, step: tf.argmax(logits, axis=-1, output_type=tf.int32),
            initial_ids, max_decode_length, eos_id, cache, buffer_length, compact,
            processors=processors)
        scores = (log_probs if t2t_scores
                  else log_probs / _length_penalty(lengths, alpha, penalty_kind))
        result = ids[:, tf.newaxis], scores[:, tf.newaxis]
    else:
        *result, row_steps = _beam_search_loop(
            symbols_to_logits_fn, initial_ids, beam_size, max_decode_length, vocab_size, alpha,
            eos_id, cache, penalty_kind, stop_early, buffer_length, compact,
            stop_rule=stop_rule, return_row_steps=True, t2t_scores=t2t_scores,
            processors=processors)
    return (*result, row_steps) if return_row_steps else tuple(result)


def _beam_search_loop(symbols_to_logits_fn, initial_ids, beam_size, max_decode_length,
                      vocab_size, alpha, eos_id, cache, penalty_kind, stop_early,
                      buffer_length, compact=False, stop_rule="t2t", return_row_steps=False,
                      t2t_scores=False, processors=LogitsProcessors()):
    """The alive/finished loop for any beam size (see `beam_search`)."""
    lp = _length_penalty
    beam = beam_size
    initial_ids = tf.cast(initial_ids, tf.int32)  # [batch]
    batch_size = tf.shape(initial_ids)[0]
    buffer_length, max_lengths = resolve_max_lengths(max_decode_length, batch_size,
                                                     buffer_length)  # [batch]
    num_steps = tf.reduce_max(max_lengths)
    per_beam_k = min(2 * beam, vocab_size)

    def step_fn(step, rows, max_lengths, alive_seq, alive_log_probs, alive_last, finished_seq,
                finished_scores, finished_flags, done, lengths, cache, outputs, row_steps,
                first_logits=None):
        """One expansion. Shapes: *_seq [n, beam, T]; scores [n, beam]; n examples
        in the loop (`rows`: their indices in the batch; all of them unless `compact`).
        `first_logits` [n * beam, vocab]: step 0's, computed before the loop (`cache`
        then already holds step 0)."""
        n = tf.shape(alive_last)[0]
        if first_logits is None:
            flat_ids = tf.reshape(alive_last, [-1])  # [n * beam]
            logits, new_cache = symbols_to_logits_fn(flat_ids, step, cache)
            row_steps += n * beam
        else:
            logits, new_cache = first_logits, cache
        logits = tf.cast(logits, tf.float32)  # [n * beam, vocab]
        # Top 2 * beam per beam, then over all beams: the same result as a top-k
        # over [n, beam * vocab]. Without processors on raw logits, so the
        # log-softmax is never materialised.
        if processors:
            log_probs = processors.log_probs(logits, step, tf.repeat(max_lengths, beam))
            top_log_probs, top_tokens = top_k_by_chunks(log_probs, per_beam_k)  # [n * beam, k]
        else:
            log_norm = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)  # [n * beam, 1]
            top_logits, top_tokens = top_k_by_chunks(logits, per_beam_k)  # [n * beam, k]
            top_log_probs = top_logits - log_norm
        candidate_log_probs = (tf.reshape(top_log_probs, [-1, beam, per_beam_k])
                               + alive_log_probs[:, :, tf.newaxis])  # [n, beam, k]
        candidate_log_probs = tf.reshape(candidate_log_probs, [-1, beam * per_beam_k])
        candidate_log_probs, flat_choice = tf.math.top_k(candidate_log_probs, k=2 * beam)
        parents = flat_choice // per_beam_k  # [n, 2 * beam]
        tokens = tf.gather(tf.reshape(top_tokens, [-1, beam * per_beam_k]), flat_choice,
                           batch_dims=1)  # [n, 2 * beam]
        candidate_seq = write_at_last_axis(tf.gather(alive_seq, parents, batch_dims=1), step,
                                           tokens)  # [n, 2 * beam, T]

        active = tf.logical_not(done)[:, tf.newaxis]  # [n, 1]
        valid = (candidate_log_probs > DEAD_THRESHOLD) & active  # [n, 2 * beam]
        # Only EOS finishes a hypothesis (as in tensor2tensor): one cut off at the
        # maximum length stays alive and is returned only when its example has
        # no EOS-finished hypothesis to fill a slot with (`_fill_from_alive`).
        ends = tf.equal(tokens, eos_id)
        at_max = step + 1 >= max_lengths  # [n]
        finishing = ends
        if stop_rule == "transformers":
            # transformers: every candidate at the maximum length ends, and only the
            # `beam` best candidates can finish (an EOS below them is dropped).
            ends |= at_max[:, tf.newaxis]
            finishing = ends & (tf.range(2 * beam) < beam)[tf.newaxis]  # [n, 2 * beam]

        # Alive: the best `beam` candidates that did not end.
        alive_keys = tf.where(ends | tf.logical_not(valid), NEG_INF, candidate_log_probs)
        new_alive_log_probs, keep = tf.math.top_k(alive_keys, k=beam)  # [n, beam]
        new_alive_seq = tf.gather(candidate_seq, keep, batch_dims=1)  # [n, beam, T]
        new_alive_last = tf.gather(tokens, keep, batch_dims=1)  # [n, beam]
        new_parents = (tf.gather(parents, keep, batch_dims=1)
                       + tf.range(n)[:, tf.newaxis] * beam)  # [n, beam] rows of the cache

        # Finished: the best `beam` of the old finished set and the candidates that ended.
        new_scores = candidate_log_probs / lp(step + 1, alpha, penalty_kind)
        new_scores = tf.where(finishing & valid, new_scores, NEG_INF)  # [n, 2 * beam]
        pool_scores = tf.concat([finished_scores, new_scores], axis=1)  # [n, 3 * beam]
        pool_flags = tf.concat([finished_flags, finishing & valid], axis=1)
        finished_scores, pick = tf.math.top_k(pool_scores, k=beam)  # [n, beam]
        finished_flags = tf.gather(pool_flags, pick, batch_dims=1)
        finished_seq = tf.gather(tf.concat([finished_seq, candidate_seq], axis=1), pick,
                                 batch_dims=1)  # [n, beam, T]

        # Examples already stopped keep their alive hypotheses for the final fill.
        alive_seq = tf.where(active[:, :, tf.newaxis], new_alive_seq, alive_seq)
        alive_log_probs = tf.where(active, new_alive_log_probs, alive_log_probs)
        lengths += tf.cast(active[:, 0], tf.int32)
        stop = at_max
        if stop_early and stop_rule == "transformers":
            # transformers' heuristic for early_stopping=False: the best alive
            # hypothesis scored at the current length, no better than the worst finished.
            best_alive = alive_log_probs[:, 0] / lp(step + 1, alpha, penalty_kind)  # [n]
            worst_finished = tf.reduce_min(finished_scores, axis=1)  # [n]
            stop |= tf.reduce_all(finished_flags, axis=1) & (best_alive <= worst_finished)
        elif stop_early:
            # Log probs only fall, so the best an alive hypothesis can reach is its
            # current log prob over the largest penalty still ahead: at the maximum
            # length for alpha >= 0, at the next length for alpha < 0.
            next_length = tf.minimum(step + 2, max_lengths)
            best_penalty = tf.maximum(lp(next_length, alpha, penalty_kind),
                                      lp(max_lengths, alpha, penalty_kind))
            best_alive = alive_log_probs[:, 0] / best_penalty  # [n]
            worst_finished = tf.reduce_min(tf.where(finished_flags, finished_scores, -NEG_INF),
                                           axis=1)  # [n]
            any_finished = tf.reduce_any(finished_flags, axis=1)
            stop |= any_finished & (worst_finished > best_alive)
        if stop_rule == "beam_full":
            stop |= tf.reduce_all(finished_flags, axis=1)
        done = done | stop
        examples = (rows, max_lengths, alive_seq, alive_log_probs, new_alive_last, finished_seq,
                    finished_scores, finished_flags, done, lengths)
        if not compact:
            new_cache = gather_cache(new_cache, tf.reshape(new_parents, [-1]))
            return (step + 1, *examples, keep_static_shapes(new_cache, invariants), outputs,
                    row_steps)

        def leave():
            """Writes the stopped examples' results; the others stay, with their cache."""
            ended = tf.cast(tf.where(done)[:, 0], tf.int32)
            written = write_rows(outputs, tf.gather(rows, ended),
                                 _results(*[tf.gather(t, ended) for t in examples[2:]],
                                          alpha, penalty_kind, t2t_scores))
            stay = tf.cast(tf.where(tf.logical_not(done))[:, 0], tf.int32)  # [n']
            beam_rows = tf.reshape(stay[:, tf.newaxis] * beam + tf.range(beam), [-1])
            staying = compact_cache(new_cache, tf.reshape(tf.gather(new_parents, stay), [-1]),
                                    beam_rows, stay)
            return tuple(tf.gather(t, stay) for t in examples), staying, written

        def stay_all():
            return examples, gather_cache(new_cache, tf.reshape(new_parents, [-1])), outputs

        examples, new_cache, outputs = tf.cond(tf.reduce_any(done), leave, stay_all)
        return (step + 1, *examples, keep_static_shapes(new_cache, invariants), outputs,
                row_steps)

    def cond(step, *state):
        done = state[8]
        return tf.logical_and(step < num_steps, tf.logical_not(tf.reduce_all(done)))

    # Only beam 0 is live at first, so the first step does not pick one token `beam` times.
    first_beam = tf.concat([[0.0], tf.fill([beam - 1], NEG_INF)], axis=0)  # [beam]
    seq_zeros = tf.zeros([batch_size, beam, buffer_length], tf.int32)
    outputs = (seq_zeros, tf.zeros([batch_size, beam], tf.float32))
    cache = {} if cache is None else cache
    invariants = cache_shape_invariants(tile_cache(cache, beam))  # used by step_fn
    grows = has_growing_axes(cache)
    if compact:
        invariants = leading_axis_free(invariants)
    # Step 0 runs before the beam is expanded: every beam of an example would
    # extend the same empty hypothesis from the same cache, so one row per
    # example computes it, and its logits and cache are repeated for the beams.
    first_logits, cache = symbols_to_logits_fn(initial_ids, tf.constant(0), cache)
    state = step_fn(tf.constant(0), tf.range(batch_size), max_lengths, seq_zeros,
                    tf.tile(first_beam[tf.newaxis], [batch_size, 1]),
                    tf.tile(initial_ids[:, tf.newaxis], [1, beam]), seq_zeros,
                    tf.fill([batch_size, beam], NEG_INF), tf.zeros([batch_size, beam], tf.bool),
                    tf.zeros([batch_size], tf.bool), tf.zeros([batch_size], tf.int32),
                    tile_cache(cache, beam), outputs, batch_size,
                    first_logits=tf.repeat(first_logits, beam, axis=0))
    if compact:
        shapes = loop_shape_invariants(state, 11, invariants)
        shapes = (shapes[0], *leading_axis_free(shapes[1:11]), *shapes[11:])
        growing = {"shape_invariants": shapes}
    else:
        growing = ({"shape_invariants": loop_shape_invariants(state, 11, invariants)}
                   if grows else {})
    final = tf.while_loop(cond, step_fn, state, maximum_iterations=num_steps, **growing)
    rows, examples, outputs, row_steps = final[1], final[3:11], final[12], final[13]
    # Without `compact` every example is still here; with it, any left at the end.
    outputs = write_rows(outputs, rows, _results(*examples, alpha, penalty_kind,
                                                 t2t_scores))
    return (*outputs, row_steps) if return_row_steps else outputs


def _results(alive_seq, alive_log_probs, alive_last, finished_seq, finished_scores,
             finished_flags, done, lengths, alpha, penalty_kind, t2t_scores):
    """(ids, scores) of examples from their loop state (see `_fill_from_alive`)."""
    del alive_last, done
    return _fill_from_alive(alive_seq, alive_log_probs, finished_seq, finished_scores,
                            finished_flags, _length_penalty(lengths, alpha, penalty_kind),
                            t2t_scores)


def _fill_from_alive(alive_seq, alive_log_probs, finished_seq, finished_scores,
                     finished_flags, alive_penalty, raw_when_none_finished=False):
    """Fills the finished slots left empty with the best alive hypotheses.

    Finished hypotheses are sorted best first with the empty slots last, so slot
    j of an example with n finished takes alive hypothesis j - n.

    Args:
      *_seq [batch, beam, T], *_log_probs / *_scores / flags [batch, beam],
      alive_penalty [batch] (length penalty at the alive hypotheses' length).
      raw_when_none_finished: an example with no finished hypothesis gets its
        alive log-probabilities as scores (tensor2tensor's rule).

    Returns:
      ids int32 [batch, beam, T], scores float32 [batch, beam].
    """
    beam = tf.shape(finished_flags)[1]
    num_finished = tf.reduce_sum(tf.cast(finished_flags, tf.int32), axis=1, keepdims=True)
    source = tf.clip_by_value(tf.range(beam)[tf.newaxis] - num_finished, 0, beam - 1)
    alive_scores = alive_log_probs / alive_penalty[:, tf.newaxis]  # [batch, beam]
    if raw_when_none_finished:
        alive_scores = tf.where(num_finished == 0, alive_log_probs, alive_scores)
    ids = tf.where(finished_flags[:, :, tf.newaxis], finished_seq,
                   tf.gather(alive_seq, source, batch_dims=1))  # [batch, beam, T]
    scores = tf.where(finished_flags, finished_scores,
                      tf.gather(alive_scores, source, batch_dims=1))  # [batch, beam]
    return ids, scores
