"""Translation metrics: corpus BLEU and exact match, for dev evaluation and reports."""

from typing import Dict, Sequence, Tuple

from sacrebleu.metrics.bleu import BLEUScore

from t2t_lite import textio
from t2t_lite.metrics.bleu import corpus_bleu


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """The share of hypotheses equal to their reference, in [0, 1] (0 for none).

    What single-word outputs (the numbers problem) are judged by: their BLEU is
    0 whenever a sentence has fewer than four tokens.
    """
    return sum(h == r for h, r in zip(hypotheses, references)) / max(len(references), 1)


def translation_scores(hypotheses: Sequence[str], references: Sequence[str]) -> Dict[str, float]:
    """{"bleu": sacreBLEU (13a, cased), "exact_match": share in [0, 1]}."""
    score, _ = corpus_bleu(hypotheses, references)
    return {"bleu": float(score.score), "exact_match": exact_match(hypotheses, references)}


def reference_bleu(outputs: Sequence[str], reference_path: str) -> Tuple[BLEUScore, str]:
    """`corpus_bleu` of `outputs` against a reference file.

    References are read as t2t-bleu and sacreBLEU's command line read them
    (trailing whitespace removed), so the scores here and there agree.
    """
    return corpus_bleu(outputs, textio.read_lines(reference_path, strip="trailing_whitespace"))


def bleu_report(outputs: Sequence[str], reference_path: str) -> str:
    """"BLEU = 27.31 <signature>  (<details>)" of `outputs` against a reference file
    (`reference_bleu`)."""
    score, signature = reference_bleu(outputs, reference_path)
    return f"BLEU = {score.score:.2f} {signature}  ({score})"
