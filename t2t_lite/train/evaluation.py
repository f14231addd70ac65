"""Evaluation on the dev split: loss, per-subword perplexity, token accuracy, and the
problem's metrics of greedy translations (BLEU and exact match; parsing: EVALB F1)."""

import functools
import math
import time
from typing import Callable, Dict, Optional, Sequence

import tensorflow as tf

from t2t_lite.data.pipeline import make_dataset
from t2t_lite.hparams_lib import HParams
from t2t_lite.train.loss import smoothed_cross_entropy, token_statistics

_SPEC = tf.TensorSpec([None, None], tf.int32)


class _Progress:
    """Prints "eval: dev loss 120 batches, 31 s" every `every` seconds and when done,
    so that a long evaluation is never silent."""

    def __init__(self, what: str, unit: str, total: int = 0, every: float = 10.0):
        self.what, self.unit, self.total, self.every = what, unit, total, every
        self.count, self.start = 0, time.time()
        self.last = self.start

    def update(self, n: int) -> None:
        self.count += n
        if time.time() - self.last >= self.every:
            self._print()
            self.last = time.time()

    def done(self) -> None:
        self._print()

    def _print(self) -> None:
        count = min(self.count, self.total) if self.total else self.count
        of = f"/{self.total}" if self.total else ""
        print(f"eval: {self.what} {count}{of} {self.unit}, {time.time() - self.start:.0f} s",
              flush=True)


def dev_dataset_fn(data_dir: str, problem_name: str,
                   hp: HParams) -> Callable[[], tf.data.Dataset]:
    """() -> the dev split of `problem_name` in `data_dir` as the trainer's
    evaluation reads it: shards in order, every example, bucketed into batches
    of `hp.batch_size` tokens ({"inputs": int32 [B, S], "targets": int32 [B, T]})."""
    return functools.partial(make_dataset, data_dir, problem_name, "dev", hp.batch_size,
                             hp.max_length, training=False)


def metrics_line(metrics: Dict[str, float], notes: Optional[Dict[str, str]] = None) -> str:
    """"accuracy 0.8125  bleu 24.1000 (tok:13a)  loss 1.2000": each metric by name, with
    its note (`Evaluator`'s `notes`) in brackets."""
    notes = notes or {}
    return "  ".join(f"{name} {value:.4f}" + (f" ({notes[name]})" if name in notes else "")
                     for name, value in sorted(metrics.items()))


# (hypotheses, references, sources) -> {metric name: value}, e.g. `Problem.dev_scores`.
ScoresFn = Callable[[Sequence[str], Sequence[str], Sequence[str]], Dict[str, float]]


class Evaluator:
    """Computes dev metrics of one model; built once per training run.

    The compiled loss function and the translator's search are traced on
    first use and reused, so later evaluations do not trace them again.

    Args:
      model: the model being trained.
      hp: its hparams (label smoothing).
      dev_dataset_fn: () -> the dev batches ({"inputs", "targets"}), read in
        full at each evaluation (or the first `eval_steps` batches).
      translator: a (greedy) `Translator` over `model`, for decoding metrics; None: none.
      dev_scores: the problem's metrics of decoded outputs (`Problem.dev_scores`).
      notes: what a metric is, shown beside its value by `metrics_line`, e.g.
        {"bleu": "tok:13a"} (the BLEU tokenizer of `dev_scores`).
    """

    def __init__(self, model, hp: HParams, dev_dataset_fn: Callable[[], tf.data.Dataset],
                 translator=None, dev_scores: Optional[ScoresFn] = None,
                 notes: Optional[Dict[str, str]] = None):
        self.model = model
        self.hp = hp
        self.dev_dataset_fn = dev_dataset_fn
        self.translator = translator
        self.dev_scores = dev_scores
        self.notes = dict(notes or {})
        self._batch_stats = tf.function(self._stats, autograph=False,
                                        input_signature=[{"inputs": _SPEC, "targets": _SPEC}])

    def _stats(self, batch):
        logits = self.model(batch, training=False)
        loss_sum, _ = smoothed_cross_entropy(logits, batch["targets"], self.hp.label_smoothing)
        nll_sum, correct, tokens = token_statistics(logits, batch["targets"])
        return tf.stack([loss_sum, nll_sum, correct, tokens])

    def __call__(self, eval_steps: int = 0, decode_sentences: int = 0,
                 progress: bool = True) -> Dict[str, float]:
        """Metrics of the model on the dev split.

        Args:
          eval_steps: dev batches to read; 0: the whole split.
          decode_sentences: dev sentences to decode greedily for the problem's
            metrics (needs a translator); 0: none.
          progress: print the dev-loss progress lines (`_Progress`).
        Returns:
          {"loss", "perplexity", "accuracy"[, the problem's: "bleu", "chrf",
          "exact_match"[, "evalb_f1"]]}: loss is label-smoothed like the
          training loss; perplexity and accuracy are per real subword.
        """
        dataset = self.dev_dataset_fn()
        if eval_steps:
            dataset = dataset.take(eval_steps)
        totals = tf.zeros([4])
        shown = _Progress("dev loss", "batches") if progress else None
        for batch in dataset:
            totals += self._batch_stats(batch)
            if shown:
                shown.update(1)
        if shown:
            shown.done()
        loss_sum, nll_sum, correct, tokens = (float(x) for x in totals.numpy())
        tokens = max(tokens, 1.0)
        metrics = {"loss": loss_sum / tokens,
                   "perplexity": math.exp(min(nll_sum / tokens, 50.0)),
                   "accuracy": correct / tokens}
        if decode_sentences and self.translator is not None and self.dev_scores is not None:
            metrics.update(self._decoding_metrics(decode_sentences))
        return metrics

    def _decoding_metrics(self, sentences: int) -> Dict[str, float]:
        """The problem's scores of greedy translations of the first dev examples."""
        translator = self.translator
        hypotheses, references, sources = [], [], []
        progress = _Progress("dev greedy decoding", "sentences", total=sentences)
        for batch in self.dev_dataset_fn():
            hypotheses += translator.translate_ids(batch["inputs"])
            references += translator.detokenize(batch["targets"])
            sources += translator.detokenize(batch["inputs"])
            progress.update(len(batch["inputs"]))
            if len(references) >= sentences:
                break
        progress.done()
        return self.dev_scores(hypotheses[:sentences], references[:sentences],
                               sources[:sentences])
