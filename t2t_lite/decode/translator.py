"""Translating with a trained model: encoder once, cached decoder, beam search.

    translator = Translator(model, vocab, DecodeParams(beam_size=4, alpha=0.6))
    translator.translate(["a sentence", ...])  # -> ["eine Übersetzung", ...]

The search (encode, init_cache, beam search over `model.decode_step`) is one
compiled `tf.function`; Python only batches sentences and turns bytes into str.
"""

import dataclasses
import functools
from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from t2t_lite.decode.beam_search import beam_search
from t2t_lite.decode.sampling import sample
from t2t_lite.decode import tree_constraint
from t2t_lite.decode.search_common import forbid_eos_before
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import parse_overrides


@dataclasses.dataclass(frozen=True)
class DecodeParams:
    """How to search (defaults: the paper's section 6.1)."""

    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50            # max output length = input length + extra_length
    min_length: int = 0               # no EOS before this many output tokens (fairseq --min-len)
    length_penalty: str = "gnmt"      # or "fairseq"
    max_input_length: int = 0         # longer inputs are truncated; 0: the model's max_length
    batch_size: int = 32              # sentences per batch (t2t-decoder)
    return_beams: bool = False        # write all beams, TAB-separated (t2t-decoder)
    write_beam_scores: bool = False   # append each hypothesis' score (t2t-decoder)
    sampling_temperature: float = 0.0  # > 0: sample instead of beam search
    top_k: int = 0                    # sampling: only the k most likely tokens; 0: all
    sampling_seed: int = 0
    tree_constraint: bool = False     # write only well-formed linearized trees (parsing)

    @classmethod
    def for_problem(cls, problem, **overrides) -> "DecodeParams":
        """The problem's decoding defaults (beam size, alpha, extra length,
        tree constraint), with keyword `overrides`."""
        defaults = dict(beam_size=problem.beam_size, alpha=problem.alpha,
                        extra_length=problem.extra_length,
                        tree_constraint=problem.tree_constraint)
        return cls(**{**defaults, **overrides})

    def parse(self, overrides: str) -> "DecodeParams":
        """A copy with "beam_size=4,alpha=0.6"-style overrides (t2t's --decode_hparams)."""
        return parse_overrides(self, overrides, "decode hparam")

    def __post_init__(self):
        if self.beam_size < 1:
            raise T2TError(f"beam_size must be >= 1, got {self.beam_size}.")
        if self.batch_size < 1:
            raise T2TError(f"batch_size must be >= 1, got {self.batch_size}.")
        if self.sampling_temperature < 0 or self.top_k < 0:
            raise T2TError("sampling_temperature and top_k must be >= 0.")
        if self.alpha < 0 or self.extra_length < 0 or self.min_length < 0:
            raise T2TError("alpha, extra_length and min_length must be >= 0.")
        if self.length_penalty not in ("gnmt", "fairseq"):
            raise T2TError(f"length_penalty must be 'gnmt' or 'fairseq', "
                           f"got {self.length_penalty!r}.")


class Translator(tf.Module):
    """Model + vocabulary + search parameters -> a compiled translation function."""

    def __init__(self, model, vocab, params: DecodeParams = DecodeParams(),
                 jit_compile: bool = False, growing_cache: Optional[bool] = None):
        """`growing_cache`: append to the decoder's key/value cache each step
        instead of preallocating it at the maximum output length (default:
        growing without XLA, which needs static shapes; preallocated with it)."""
        super().__init__(name="translator")
        if growing_cache and jit_compile:
            raise T2TError("A growing cache has dynamic shapes, which XLA cannot compile.")
        self.growing_cache = (not jit_compile) if growing_cache is None else growing_cache
        self.model = model
        self.vocab = vocab
        self.params = params
        self.max_input_length = params.max_input_length or model.hparams.max_length
        self.jit_compile = jit_compile
        if params.tree_constraint:
            if jit_compile:
                raise T2TError("tree_constraint splits the input into words with "
                               "SentencePiece ops, which XLA cannot compile; decode "
                               "without --jit_compile.")
            self.tree_token_kinds = tree_constraint.token_kinds(vocab.pieces(),
                                                                vocab.whole_token_ids)
        # `search` traced once for any [B, S]; with jit_compile XLA compiles it
        # again for each new input shape, so `run_search` pads shapes to a few sizes.
        self.search_compiled = tf.function(self.search, jit_compile=jit_compile,
                                           input_signature=[tf.TensorSpec([None, None], tf.int32)])

    def search(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """inputs int32 [B, S] (0-padded, EOS-terminated) -> ids [B, beam, T], scores [B, beam]."""
        p = self.params
        memory, memory_bias = self.model.encode(inputs)
        input_lengths = tf.reduce_sum(tf.cast(tf.not_equal(inputs, 0), tf.int32), axis=1)
        max_lengths = input_lengths + p.extra_length  # [B]
        # Inputs are padded to their longest row, so S + extra_length is the
        # longest output; it depends on shapes only, so XLA sees it as static.
        buffer_length = tf.shape(inputs)[1] + p.extra_length
        if self.model.hparams.pos == "emb":  # learned positions stop at max_length
            max_lengths = tf.minimum(max_lengths, self.model.hparams.max_length)
            buffer_length = tf.minimum(buffer_length, self.model.hparams.max_length)
        if self.growing_cache:
            cache = self.model.init_cache(memory, memory_bias, None)
            step_fn = functools.partial(self.model.decode_step, growing=True)
        else:
            cache = self.model.init_cache(memory, memory_bias, buffer_length)
            step_fn = self.model.decode_step
        step_fn = forbid_eos_before(step_fn, p.min_length, eos_id=1)
        if p.tree_constraint:
            texts = self.vocab.decode(inputs)  # [B] the input words back
            cache[tree_constraint.STATE_KEY] = tree_constraint.initial_state(texts)
            step_fn = tree_constraint.constrain_to_trees(step_fn, self.tree_token_kinds)
        if p.sampling_temperature > 0:  # one sample per input, scored by its log prob
            ids, log_probs = sample(step_fn, tf.zeros_like(input_lengths),
                                    max_lengths, temperature=p.sampling_temperature,
                                    top_k=p.top_k, seed=(p.sampling_seed, 0), cache=cache,
                                    buffer_length=buffer_length)
            return ids[:, tf.newaxis], log_probs[:, tf.newaxis]
        return beam_search(step_fn, tf.zeros_like(input_lengths), p.beam_size,
                           max_lengths, self.model.vocab_size, p.alpha, eos_id=1, cache=cache,
                           length_penalty=p.length_penalty, buffer_length=buffer_length)

    def run_search(self, inputs: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """`search_compiled` on int [B, S] inputs -> ids [B, beam, T], scores [B, beam].

        Under XLA every new input shape is a new compilation: inputs are padded
        to a multiple of 8 tokens and to `batch_size` rows (empty rows), and
        the padding rows are dropped from the result.
        """
        inputs = tf.cast(inputs, tf.int32)
        rows = int(inputs.shape[0])
        if self.jit_compile:
            length = int(inputs.shape[1])
            inputs = tf.pad(inputs, [[0, max(self.params.batch_size - rows, 0)],
                                     [0, -length % 8]])
        ids, scores = self.search_compiled(inputs)
        return ids[:rows], scores[:rows]

    def encode(self, texts: Sequence[str]) -> tf.Tensor:
        """Strings -> int32 [B, S] ids, EOS-terminated, truncated to max_input_length."""
        return self.pad(self.vocab.encode(tf.constant(list(texts), dtype=tf.string)))

    def pad(self, ragged: tf.RaggedTensor) -> tf.Tensor:
        """Encoded rows [B, (S)] -> int32 [B, S] model inputs, truncated to max_input_length."""
        too_long = ragged.row_lengths() > self.max_input_length
        if bool(tf.reduce_any(too_long)):
            # Keep the first max_input_length - 1 subwords and the EOS. The EOS is
            # cut first, so rows that were short enough do not get a second one.
            head = ragged[:, :-1][:, :self.max_input_length - 1]
            ragged = tf.concat([head, tf.ones([head.nrows(), 1], tf.int32)], axis=1)
        return ragged.to_tensor()

    def detokenize(self, ids: tf.Tensor) -> List[str]:
        """int [B, T] -> strings (stops at EOS)."""
        return [s.decode("utf-8") for s in self.vocab.decode(ids).numpy()]

    def translate_ids(self, inputs: tf.Tensor) -> List[str]:
        """Best translation of each row of `inputs` (int32 [B, S])."""
        ids, _ = self.run_search(inputs)
        return self.detokenize(ids[:, 0])

    def nbest_ids(self, inputs: tf.Tensor) -> Tuple[List[List[str]], List[List[float]]]:
        """All beams of each row, best first, with their scores."""
        ids, scores = self.run_search(inputs)
        beams = ids.shape[1]
        texts = self.detokenize(tf.reshape(ids, [-1, tf.shape(ids)[2]]))
        return ([texts[i * beams:(i + 1) * beams] for i in range(len(texts) // beams)],
                scores.numpy().tolist())

    def translate(self, texts: Sequence[str]) -> List[str]:
        """Translates one batch of sentences; empty strings give empty strings."""
        texts = list(texts)
        if not texts:
            return []
        out = self.translate_ids(self.encode(texts))
        return [o if t.strip() else "" for t, o in zip(texts, out)]

    def score(self, sources: Sequence[str], targets: Sequence[str]) -> List[float]:
        """log P(target | source), summed over the target's subwords and EOS."""
        inputs, outputs = self.encode(sources), self.encode(targets)
        logits = self.model({"inputs": inputs, "targets": outputs}, training=False)
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=outputs, logits=logits)
        mask = tf.cast(tf.not_equal(outputs, 0), tf.float32)
        return (-tf.reduce_sum(nll * mask, axis=1)).numpy().tolist()
