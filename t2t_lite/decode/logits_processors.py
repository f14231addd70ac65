"""Hugging Face transformers' logits processors of OPUS-MT's generation settings.

An imported Marian model decodes as `MarianMTModel.generate` does only if the
search sees the next-token scores transformers' processors make:

- `forbid_pad`: `bad_words_ids=[[pad]]`, PAD never chosen (its score minus infinity);
- `forced_eos`: `forced_eos_token_id`, EOS the only choice at a hypothesis' last
  possible output position (transformers' `max_length - 1`, its max_length counting
  the start token);
- `renormalize`: `renormalize_logits`, a second log-softmax after the others, so the
  remaining tokens' probabilities sum to one again.

Beam search applies them to log_softmax(logits) (`log_probs`), as transformers'
`_beam_search` does; greedy decoding to the raw logits before its argmax
(`choice_logits`), as transformers' greedy search does, where renormalizing changes
nothing. Minus infinity is `NEG_INF` here (finite, as everywhere in t2t-lite).

    processors = LogitsProcessors(forbid_pad=True, forced_eos=True, renormalize=True)
    log_probs = processors.log_probs(logits, step, row_max_lengths)  # [rows, V]
"""

import dataclasses

import tensorflow as tf

from t2t_lite.data.layout import EOS_ID, PAD_ID
from t2t_lite.tensors import NEG_INF


@dataclasses.dataclass(frozen=True)
class LogitsProcessors:
    """Which of transformers' processors a search applies (all off: none)."""

    forbid_pad: bool = False   # bad_words_ids=[[pad]]
    forced_eos: bool = False   # forced_eos_token_id=eos at the last output position
    renormalize: bool = False  # renormalize_logits: log_softmax after the others
    pad_id: int = PAD_ID
    eos_id: int = EOS_ID

    def __bool__(self) -> bool:
        return self.forbid_pad or self.forced_eos or self.renormalize

    def _mask(self, scores: tf.Tensor, step, max_lengths: tf.Tensor) -> tf.Tensor:
        """`scores` [rows, V] with PAD and the forced EOS applied; `max_lengths` int32
        [rows] (each row's maximum number of output tokens), `step` its output position."""
        token = tf.range(tf.shape(scores)[-1])  # [V]
        minus_inf = tf.constant(NEG_INF, scores.dtype)
        if self.forbid_pad:
            scores = tf.where(tf.equal(token, self.pad_id), minus_inf, scores)
        if self.forced_eos:
            last = tf.equal(step + 1, max_lengths)[:, tf.newaxis]  # [rows, 1]
            forced = tf.where(tf.equal(token, self.eos_id), tf.zeros([], scores.dtype), minus_inf)
            scores = tf.where(last, forced[tf.newaxis], scores)
        return scores

    def log_probs(self, logits: tf.Tensor, step, max_lengths: tf.Tensor) -> tf.Tensor:
        """float32 [rows, V]: log_softmax(logits), the processors, then (`renormalize`)
        log_softmax again: the scores transformers' beam search adds up."""
        scores = self._mask(tf.nn.log_softmax(tf.cast(logits, tf.float32)), step, max_lengths)
        return tf.nn.log_softmax(scores) if self.renormalize else scores

    def choice_logits(self, logits: tf.Tensor, step, max_lengths: tf.Tensor) -> tf.Tensor:
        """[rows, V]: the processors on the raw logits (transformers' greedy search
        takes their argmax)."""
        return self._mask(logits, step, max_lengths)
