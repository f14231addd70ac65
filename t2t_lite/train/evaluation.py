"""Evaluation on the dev split: loss, per-subword perplexity, token accuracy, BLEU (EVALB F1)."""

import math
from typing import Dict

import tensorflow as tf

from t2t_lite.data.pipeline import make_dataset
from t2t_lite.train.loss import smoothed_cross_entropy, token_statistics


def _dev_dataset(trainer):
    return make_dataset(trainer.data_dir, trainer.problem_name, "dev", trainer.hp.batch_size,
                        trainer.hp.max_length, training=False)


def evaluate(trainer, eval_steps: int = 0, bleu_sentences: int = 0) -> Dict[str, float]:
    """Metrics of `trainer.model` on the dev split.

    Args:
      trainer: a `Trainer` (model, hparams, data_dir, problem_name, translator_factory).
      eval_steps: dev batches to read; 0: the whole split.
      bleu_sentences: dev sentences to decode greedily for sacreBLEU (needs
        `trainer.translator_factory`); 0: no BLEU.
    Returns:
      {"loss", "perplexity", "accuracy"[, "bleu"]}: loss is label-smoothed
      like the training loss; perplexity and accuracy are per real subword.
    """
    model, hp = trainer.model, trainer.hp

    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[{"inputs": spec, "targets": spec}])
    def batch_stats(batch):
        logits = model(batch, training=False)
        loss_sum, _ = smoothed_cross_entropy(logits, batch["targets"], hp.label_smoothing)
        nll_sum, correct, tokens = token_statistics(logits, batch["targets"])
        return tf.stack([loss_sum, nll_sum, correct, tokens])

    dataset = _dev_dataset(trainer)
    if eval_steps:
        dataset = dataset.take(eval_steps)
    totals = tf.zeros([4])
    for batch in dataset:
        totals += batch_stats(batch)
    loss_sum, nll_sum, correct, tokens = (float(x) for x in totals.numpy())
    tokens = max(tokens, 1.0)
    metrics = {"loss": loss_sum / tokens, "perplexity": math.exp(min(nll_sum / tokens, 50.0)),
               "accuracy": correct / tokens}
    if bleu_sentences and trainer.translator_factory is not None:
        metrics.update(_greedy_decoding_metrics(trainer, bleu_sentences))
    return metrics


def _greedy_decoding_metrics(trainer, sentences: int) -> Dict[str, float]:
    """sacreBLEU and exact match of greedy translations of the first `sentences` dev examples.

    Exact match is what single-word outputs (the numbers problem) are judged
    by: their BLEU is 0 whenever a sentence has fewer than four tokens. For a
    problem whose metric is "evalb" (parsing) it adds "evalb_f1": the
    de-linearized outputs scored against the de-linearized references.
    """
    from t2t_lite import registry
    from t2t_lite.decode.bleu import corpus_bleu

    translator = trainer.translator_factory(trainer.model)
    hypotheses, references, sources = [], [], []
    for batch in _dev_dataset(trainer):
        hypotheses += translator.translate_ids(batch["inputs"])
        references += translator.detokenize(batch["targets"])
        sources += translator.detokenize(batch["inputs"])
        if len(references) >= sentences:
            break
    hypotheses, references = hypotheses[:sentences], references[:sentences]
    score, _ = corpus_bleu(hypotheses, references)
    exact = sum(h == r for h, r in zip(hypotheses, references)) / max(len(references), 1)
    metrics = {"bleu": float(score.score), "exact_match": exact}
    if trainer.problem_name in registry.list_problems() and (
            registry.problem(trainer.problem_name).metric == "evalb"):
        from t2t_lite.parsing.outputs import linearized_f1
        metrics["evalb_f1"] = linearized_f1(hypotheses, references, sources[:sentences])
    return metrics
