"""Evaluation on the dev split: loss, per-subword perplexity, token accuracy, BLEU (EVALB F1)."""

import math
from typing import Callable, Dict, Optional

import tensorflow as tf

from t2t_lite.data.pipeline import make_dataset
from t2t_lite.hparams_lib import HParams
from t2t_lite.train.loss import smoothed_cross_entropy, token_statistics

_SPEC = tf.TensorSpec([None, None], tf.int32)


class Evaluator:
    """Computes dev metrics of one model; built once per training run.

    The compiled loss function and the greedy translator are created on
    first use and reused, so later evaluations do not trace them again.

    Args:
      model: the model being trained.
      hp: its hparams (label smoothing, batch size, max length).
      data_dir, problem_name: where the dev shards are.
      translator_factory: model -> `Translator`, for greedy decoding metrics; None: none.
      metric: the problem's metric; "evalb" adds EVALB F1 of the de-linearized trees.
    """

    def __init__(self, model, hp: HParams, data_dir: str, problem_name: str,
                 translator_factory: Optional[Callable] = None, metric: str = "bleu"):
        self.model = model
        self.hp = hp
        self.data_dir = data_dir
        self.problem_name = problem_name
        self.translator_factory = translator_factory
        self.metric = metric
        self._translator = None
        self._batch_stats = tf.function(self._stats,
                                        input_signature=[{"inputs": _SPEC, "targets": _SPEC}])

    def _dev_dataset(self) -> tf.data.Dataset:
        return make_dataset(self.data_dir, self.problem_name, "dev", self.hp.batch_size,
                            self.hp.max_length, training=False)

    def _stats(self, batch):
        logits = self.model(batch, training=False)
        loss_sum, _ = smoothed_cross_entropy(logits, batch["targets"], self.hp.label_smoothing)
        nll_sum, correct, tokens = token_statistics(logits, batch["targets"])
        return tf.stack([loss_sum, nll_sum, correct, tokens])

    def __call__(self, eval_steps: int = 0, decode_sentences: int = 0) -> Dict[str, float]:
        """Metrics of the model on the dev split.

        Args:
          eval_steps: dev batches to read; 0: the whole split.
          decode_sentences: dev sentences to decode greedily for sacreBLEU and
            exact match (needs a translator factory); 0: none.
        Returns:
          {"loss", "perplexity", "accuracy"[, "bleu", "exact_match"[, "evalb_f1"]]}:
          loss is label-smoothed like the training loss; perplexity and
          accuracy are per real subword.
        """
        dataset = self._dev_dataset()
        if eval_steps:
            dataset = dataset.take(eval_steps)
        totals = tf.zeros([4])
        for batch in dataset:
            totals += self._batch_stats(batch)
        loss_sum, nll_sum, correct, tokens = (float(x) for x in totals.numpy())
        tokens = max(tokens, 1.0)
        metrics = {"loss": loss_sum / tokens,
                   "perplexity": math.exp(min(nll_sum / tokens, 50.0)),
                   "accuracy": correct / tokens}
        if decode_sentences and self.translator_factory is not None:
            metrics.update(self._decoding_metrics(decode_sentences))
        return metrics

    def _decoding_metrics(self, sentences: int) -> Dict[str, float]:
        """sacreBLEU and exact match of greedy translations of the first dev examples.

        Exact match is what single-word outputs (the numbers problem) are judged
        by: their BLEU is 0 whenever a sentence has fewer than four tokens.
        """
        from t2t_lite.decode.bleu import corpus_bleu

        if self._translator is None:
            self._translator = self.translator_factory(self.model)
        translator = self._translator
        hypotheses, references, sources = [], [], []
        for batch in self._dev_dataset():
            hypotheses += translator.translate_ids(batch["inputs"])
            references += translator.detokenize(batch["targets"])
            if self.metric == "evalb":  # de-linearization needs the input words
                sources += translator.detokenize(batch["inputs"])
            if len(references) >= sentences:
                break
        hypotheses, references = hypotheses[:sentences], references[:sentences]
        score, _ = corpus_bleu(hypotheses, references)
        exact = sum(h == r for h, r in zip(hypotheses, references)) / max(len(references), 1)
        metrics = {"bleu": float(score.score), "exact_match": exact}
        if self.metric == "evalb":
            from t2t_lite.parsing.outputs import linearized_f1
            metrics["evalb_f1"] = linearized_f1(hypotheses, references, sources[:sentences])
        return metrics
