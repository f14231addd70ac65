"""The compiled search: model(s) + search parameters -> output ids, no text.

    search = Search(model, SearchParams(beam_size=4, alpha=0.6))
    ids, scores = search.run(inputs)  # int32 [B, S] -> [B, beam, T], [B, beam]

One `tf.function` encodes the inputs, builds each model's key/value cache and
runs beam search (or sampling) over a next-token logits callback. Text in and
out is `t2t_lite.decode.translator`'s job; output formatting belongs to the
decoder program (`t2t_lite.decode.decoding`).

Several models (an ensemble) decode together: each keeps its own cache, and
the search sees the log of the mean of their probabilities at each step
(fairseq's rule). A problem may add a `SearchConstraint` (parsing: only
well-formed trees), whose state the search keeps in its cache.
"""

import dataclasses
import functools
import math
import threading
from typing import Optional, Sequence, Tuple, Union

import keras
import tensorflow as tf

from t2t_lite.data.problem import NO_INPUT_LIMIT, SearchConstraint
from t2t_lite.data.layout import EOS_ID, PAD_ID
from t2t_lite.decode.beam_search import STOP_RULES, beam_search
from t2t_lite.decode.logits_processors import LogitsProcessors
from t2t_lite.decode.sampling import sample
from t2t_lite.decode.search_common import (CONSTRAINT_KEY, LENGTH_PENALTIES, constrained,
                                           forbid_eos_before)
from t2t_lite.errors import T2TError, did_you_mean
from t2t_lite.tf_api_lock import TF_API_LOCK
from t2t_lite.hparams_lib import parse_overrides
from t2t_lite.model.layers import weights_cast_once

# `Search.run` (and `finish`) may be called from several threads at once (t2t-server's
# concurrent batches); its work counters are updated under this lock.
_WORK_LOCK = threading.Lock()


def input_limit(max_input_length: int, max_lengths: Sequence[int]) -> Optional[int]:
    """The longest model input, in subwords with EOS, for a `max_input_length` setting:
    the setting itself, the smallest of the models' `max_lengths` for 0, or None (no
    limit) for `NO_INPUT_LIMIT`."""
    if max_input_length == NO_INPUT_LIMIT:
        return None
    return max_input_length or min(max_lengths)


@dataclasses.dataclass(frozen=True)
class SearchParams:
    """How to search (defaults: the paper's section 6.1). Part of t2t's --decode_hparams."""

    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50            # max output length = input length + extra_length
    min_length: int = 0               # no EOS before this many output tokens (fairseq --min-len)
    length_penalty: str = "gnmt"      # or "fairseq"
    max_input_length: int = 0         # longer inputs keep their first N - 1 subwords and EOS;
                                      # 0: the model's max_length; -1: no limit (t2t-decoder's
                                      # max_input_size=-1, the default of imported models)
    sampling_temperature: float = 0.0  # > 0: sample instead of beam search
    top_k: int = 0                    # sampling: only the k most likely tokens; 0: all
    sampling_seed: int = 0
    tree_constraint: bool = True      # apply the problem's search constraint, if it has
                                      # one (parsing: only well-formed trees)
    stop_rule: str = "t2t"            # when a sentence's beam search stops: "t2t" (no alive
                                      # hypothesis can still win), "beam_full" (also once
                                      # it has beam_size finished hypotheses, the rule
                                      # CTranslate2 describes) or "transformers" (Hugging
                                      # Face transformers' beam search, early_stopping=False)
    t2t_scores: bool = False          # scores as tensor2tensor reports them: greedy outputs
                                      # and a sentence with no finished hypothesis get
                                      # log-probabilities, not length-penalized (the
                                      # default of models imported from t2t)
    forbid_pad: bool = False          # transformers' bad_words_ids=[[pad]]: PAD never chosen
    forced_eos: bool = False          # transformers' forced_eos_token_id: EOS the only
                                      # choice at an output's last possible position
    renormalize: bool = False         # transformers' renormalize_logits: beam search's
                                      # log-probabilities normalized again after the above
    max_output_length: int = 0        # > 0: every output at most this many tokens
                                      # (transformers' max_length - 1), not input + extra_length

    @classmethod
    def for_problem(cls, problem, **overrides) -> "SearchParams":
        """The problem's decoding defaults (beam size, alpha, extra length, and where it
        has them t2t's scores, its input limit and its `search_defaults`: an imported
        Marian model's generation settings), with keyword `overrides`."""
        defaults = dict(beam_size=problem.beam_size, alpha=problem.alpha,
                        extra_length=problem.extra_length,
                        t2t_scores=problem.t2t_scores, max_input_length=problem.max_input_length)
        defaults.update(getattr(problem, "search_defaults", {}))
        return cls(**{**defaults, **overrides})

    @property
    def processors(self) -> LogitsProcessors:
        """transformers' logits processors these parameters ask for."""
        return LogitsProcessors(forbid_pad=self.forbid_pad, forced_eos=self.forced_eos,
                                renormalize=self.renormalize, pad_id=PAD_ID, eos_id=EOS_ID)

    def parse(self, overrides: str) -> "SearchParams":
        """A copy with "beam_size=4,alpha=0.6"-style overrides (t2t's --decode_hparams)."""
        return parse_overrides(self, overrides, "decode hparam")

    def __post_init__(self):
        if self.beam_size < 1:
            raise T2TError(f"beam_size must be >= 1, got {self.beam_size}.")
        if self.sampling_temperature < 0 or self.top_k < 0:
            raise T2TError("sampling_temperature and top_k must be >= 0.")
        if (self.alpha < 0 or self.extra_length < 0 or self.min_length < 0
                or self.max_output_length < 0):
            raise T2TError("alpha, extra_length, min_length and max_output_length must be "
                           ">= 0.")
        if self.max_input_length < NO_INPUT_LIMIT:
            raise T2TError(f"max_input_length must be >= 1, 0 (the model's max_length) or "
                           f"{NO_INPUT_LIMIT} (no limit), got {self.max_input_length}.")
        if self.stop_rule not in STOP_RULES:
            raise T2TError(f"stop_rule must be one of {', '.join(STOP_RULES)}, got "
                           f"{self.stop_rule!r}." + did_you_mean(self.stop_rule, STOP_RULES))
        if self.length_penalty not in LENGTH_PENALTIES:
            raise T2TError(f"length_penalty must be 'gnmt' or 'fairseq', "
                           f"got {self.length_penalty!r}."
                           + did_you_mean(self.length_penalty, LENGTH_PENALTIES))


def ensemble_logits(step_fns):
    """One logits callback from several models' callbacks, each with its own cache.

    The cache is `{"model_0": cache_0, "model_1": cache_1, ...}`; the result is
    log(mean_i softmax(logits_i)) (fairseq's ensemble rule), float32 [rows, V].
    """
    log_n = math.log(len(step_fns))

    def step(ids, index, cache):
        log_probs, new_cache = [], {}
        for i, step_fn in enumerate(step_fns):
            logits, new_cache[f"model_{i}"] = step_fn(ids, index, cache[f"model_{i}"])
            log_probs.append(tf.nn.log_softmax(tf.cast(logits, tf.float32)))
        return tf.reduce_logsumexp(tf.stack(log_probs), axis=0) - log_n, new_cache

    return step


class Search(tf.Module):
    """Model(s) + search parameters -> a compiled search over int32 inputs.

    Args:
      models: one model, or several with the same vocabulary (an ensemble).
      params: the `SearchParams`.
      constraint: the problem's `SearchConstraint` (applied when
        `params.tree_constraint`), or None.
      jit_compile: compile the search with XLA.
      growing_cache: append to the decoders' key/value caches each step instead
        of preallocating them at the maximum output length (default: growing
        without XLA, which needs static shapes; preallocated with it).
      compact: sentences leave the loop (with their cache) as they finish, so
        later steps compute only those still searching; the same outputs.
        Default: without XLA (it needs static shapes), for greedy and beam
        search (sampling draws by row position, so its rows stay).
      runtime_alpha: hold the length penalty's alpha in a variable that the
        traced search reads, so `set_alpha` changes it without tracing again
        (t2t-tune-decoder); default: a constant of the graph.

    `work` counts, over all `run` calls, the decoder rows computed
    (`computed`: one row is one hypothesis for one step) and those that the
    returned best hypotheses needed (`useful`: for each sentence, one row for
    its first token, computed before the beam is expanded, then beam size x
    each further token of its best output, EOS included; rows `run` added for
    XLA's padding are computed but never useful).
    """

    def __init__(self, models, params: SearchParams = SearchParams(),
                 constraint: Optional[SearchConstraint] = None, jit_compile: bool = False,
                 growing_cache: Optional[bool] = None, compact: Optional[bool] = None,
                 runtime_alpha: bool = False):
        super().__init__(name="search")
        self.models = list(models) if isinstance(models, (list, tuple)) else [models]
        if not self.models:
            raise T2TError("Decoding needs at least one model.")
        sizes = sorted({m.vocab_size for m in self.models})
        if len(sizes) > 1:
            raise T2TError(f"Ensembled models must share one vocabulary; their sizes "
                           f"differ: {sizes}.")
        if growing_cache and jit_compile:
            raise T2TError("A growing cache has dynamic shapes, which XLA cannot compile.")
        if compact and jit_compile:
            raise T2TError("Compacting the batch changes shapes, which XLA cannot compile.")
        self.growing_cache = (not jit_compile) if growing_cache is None else growing_cache
        self.compact = (not jit_compile) if compact is None else compact
        self.work = {"useful": 0, "computed": 0}
        self.params = params
        self.alpha = (tf.Variable(params.alpha, trainable=False, dtype=tf.float32, name="alpha")
                      if runtime_alpha else params.alpha)
        self.vocab_size = sizes[0]
        self.max_input_length = input_limit(params.max_input_length,
                                            [m.hparams.max_length for m in self.models])
        self.jit_compile = jit_compile
        self.constraint = constraint if params.tree_constraint else None
        if self.constraint is not None and jit_compile and not self.constraint.supports_xla:
            raise T2TError("The problem's search constraint (tree_constraint) cannot be "
                           "compiled with XLA; decode without --jit_compile or with "
                           "--decode_hparams=tree_constraint=False.")
        # Traced once for any [B, S]; with jit_compile XLA compiles it again for
        # each new input shape, so `run` pads shapes to a few sizes. The search
        # writes its loops as tf.while_loop/tf.cond, so autograph is off: converting
        # the search, model and Keras code took ~2.5 s of the first trace (of ~3).
        self.compiled = tf.function(self.search_with_work, jit_compile=jit_compile,
                                    autograph=False,
                                    input_signature=[tf.TensorSpec([None, None], tf.int32)])

    def set_alpha(self, alpha: float) -> None:
        """Searches from now on with length penalty `alpha`, without tracing again.

        Raises:
          T2TError: a negative alpha.
          ValueError: the search was not built with `runtime_alpha=True`.
        """
        if not isinstance(self.alpha, tf.Variable):
            raise ValueError("set_alpha needs a Search built with runtime_alpha=True.")
        self.params = dataclasses.replace(self.params, alpha=alpha)  # validates it
        self.alpha.assign(alpha)

    def _logits_fn(self, inputs: tf.Tensor, buffer_length):
        """(the models' logits callback, its initial cache) for inputs [B, S]."""
        step_fns, caches = [], []
        for model in self.models:
            memory, memory_bias = model.encode(inputs)
            if self.growing_cache:
                caches.append(model.init_cache(memory, memory_bias, None))
                step_fns.append(functools.partial(model.decode_step, growing=True))
            else:
                caches.append(model.init_cache(memory, memory_bias, buffer_length))
                step_fns.append(model.decode_step)
        if len(self.models) == 1:
            return step_fns[0], caches[0]
        return ensemble_logits(step_fns), {f"model_{i}": c for i, c in enumerate(caches)}

    def search(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """inputs int32 [B, S] (0-padded, EOS-terminated) -> ids [B, beam, T], scores [B, beam]."""
        ids, scores, _ = self.search_with_work(inputs)
        return ids, scores

    def search_with_work(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """As `search`, and the work: int32 [2], (useful, computed) decoder rows."""
        ids, scores, computed = self._search(inputs)
        has_input = tf.reduce_any(tf.not_equal(inputs, 0), axis=1)  # not a padding row
        best = tf.where(has_input[:, tf.newaxis], ids[:, 0], 0)
        tokens = tf.math.count_nonzero(best, dtype=tf.int32)  # of the best outputs
        sentences = tf.math.count_nonzero(has_input, dtype=tf.int32)
        beam = tf.shape(ids)[1]  # every output has a first token (at least EOS)
        return ids, scores, tf.stack([sentences + (tokens - sentences) * beam, computed])

    def _search(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        # Every weight is read once, before the loop: read inside it, each is an
        # op launched at every step (a tenth of a small model's step). Keras
        # layers read their variables through the scope's values.
        weights, casts = [], {}
        for model in self.models:
            dtype = tf.as_dtype(model.compute_dtype)
            for w in model.weights:
                value = tf.convert_to_tensor(w.value)
                weights.append((w, value))
                # Under bfloat16 each weight is also cast once, here, not at every step.
                if value.dtype.is_floating and value.dtype != dtype:
                    casts[(id(w), dtype)] = tf.cast(value, dtype)
        with keras.StatelessScope(state_mapping=weights), weights_cast_once(casts):
            return self._search_loop(inputs)

    def _search_loop(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        p = self.params
        input_lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs, 0), tf.int32), axis=1)
        if p.max_output_length:  # transformers' rule: one limit for every output
            max_lengths = tf.fill(tf.shape(input_lengths), p.max_output_length)  # [B]
            buffer_length = p.max_output_length
        else:
            max_lengths = input_lengths + p.extra_length  # [B]
            # Inputs are padded to their longest row, so S + extra_length is the
            # longest output; it depends on shapes only, so XLA sees it as static.
            buffer_length = tf.shape(inputs)[1] + p.extra_length
        for model in self.models:
            if model.hparams.pos == "emb":  # learned positions stop at max_length
                max_lengths = tf.minimum(max_lengths, model.hparams.max_length)
                buffer_length = tf.minimum(buffer_length, model.hparams.max_length)
        step_fn, cache = self._logits_fn(inputs, buffer_length)
        step_fn = forbid_eos_before(step_fn, p.min_length, eos_id=EOS_ID)
        if self.constraint is not None:
            step_fn = constrained(step_fn, self.constraint)
            cache = {**cache, CONSTRAINT_KEY: self.constraint.initial_state(inputs)}
        start = tf.zeros_like(input_lengths)
        if p.sampling_temperature > 0:  # one sample per input, scored by its log prob
            ids, log_probs, rows = sample(step_fn, start, max_lengths,
                                          temperature=p.sampling_temperature, top_k=p.top_k,
                                          seed=(p.sampling_seed, 0), eos_id=EOS_ID, cache=cache,
                                          buffer_length=buffer_length, return_row_steps=True,
                                          processors=p.processors)
            return ids[:, tf.newaxis], log_probs[:, tf.newaxis], rows
        return beam_search(step_fn, start, p.beam_size, max_lengths, self.vocab_size, self.alpha,
                           eos_id=EOS_ID, cache=cache, length_penalty=p.length_penalty,
                           buffer_length=buffer_length, compact=self.compact,
                           stop_rule=p.stop_rule, return_row_steps=True,
                           t2t_scores=p.t2t_scores, processors=p.processors)

    def run(self, inputs: Union[tf.Tensor, Sequence], pad_rows: int = 0
            ) -> Tuple[tf.Tensor, tf.Tensor]:
        """The compiled search on int [B, S] inputs -> ids [B, beam, T], scores [B, beam].

        Under XLA every new input shape is a new compilation: inputs are padded
        to a multiple of 8 tokens and to `pad_rows` rows (empty rows), and the
        padding rows are dropped from the result. The same as
        `finish(compiled(prepared), rows)` for `prepared, rows = prepare(...)`.
        """
        with TF_API_LOCK:  # only the compiled call may run beside another thread's
            self.compiled.get_concrete_function()  # traced once, under the lock
            prepared, rows = self.prepare(inputs, pad_rows)
        outputs = self.compiled(prepared)
        with TF_API_LOCK:
            return self.finish(outputs, rows)

    def prepare(self, inputs: Union[tf.Tensor, Sequence], pad_rows: int = 0
                ) -> Tuple[tf.Tensor, int]:
        """`run`'s first step: (int32 input of `compiled`, the number of input rows)."""
        inputs = tf.cast(inputs, tf.int32)
        rows = int(inputs.shape[0])
        if self.jit_compile:
            length = int(inputs.shape[1])
            inputs = tf.pad(inputs, [[0, max(pad_rows - rows, 0)], [0, -length % 8]])
        return inputs, rows

    def finish(self, outputs: Tuple[tf.Tensor, tf.Tensor, tf.Tensor], rows: int
               ) -> Tuple[tf.Tensor, tf.Tensor]:
        """`run`'s last step: counts the work of `compiled`'s `outputs` and keeps `rows` rows."""
        ids, scores, work = outputs
        useful, computed = work.numpy().tolist()
        with _WORK_LOCK:
            self.work["useful"] += useful
            self.work["computed"] += computed
        return ids[:rows], scores[:rows]


def search_for_problem(models, problem, vocab, params: SearchParams,
                       jit_compile: bool = False, compact: Optional[bool] = None,
                       runtime_alpha: bool = False) -> Search:
    """A `Search` with `problem`'s search constraint (when `params.tree_constraint`)."""
    constraint = problem.search_constraint(vocab) if params.tree_constraint else None
    return Search(models, params, constraint, jit_compile=jit_compile, compact=compact,
                  runtime_alpha=runtime_alpha)
