"""Translation metrics: corpus BLEU, chrF and exact match, for dev evaluation and reports.

BLEU is tokenized as suits the target language (`bleu.language_tokenizer`); a
`target_language` of "" (unknown) gets sacreBLEU's default, 13a.
"""

from typing import Dict, List, Sequence, Tuple

from sacrebleu.metrics.bleu import BLEUScore

from t2t_lite import textio
from t2t_lite.metrics.bleu import corpus_bleu, corpus_chrf, language_tokenizer


def exact_match(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """The share of hypotheses equal to their reference, in [0, 1] (0 for none).

    What single-word outputs (the numbers problem) are judged by: their BLEU is
    0 whenever a sentence has fewer than four tokens.
    """
    return sum(h == r for h, r in zip(hypotheses, references)) / max(len(references), 1)


def translation_scores(hypotheses: Sequence[str], references: Sequence[str],
                       target_language: str = "") -> Dict[str, float]:
    """{"bleu": sacreBLEU (cased, the target language's tokenizer), "chrf": sacreBLEU's
    chrF2, "exact_match": share in [0, 1]}."""
    bleu, _ = corpus_bleu(hypotheses, references, tokenize=language_tokenizer(target_language))
    chrf, _ = corpus_chrf(hypotheses, references)
    return {"bleu": float(bleu.score), "chrf": float(chrf.score),
            "exact_match": exact_match(hypotheses, references)}


def read_reference(reference_path: str) -> List[str]:
    """The lines of a reference file as t2t-bleu and sacreBLEU's command line read
    them (trailing whitespace removed), so the scores here and there agree."""
    return textio.read_lines(reference_path, strip="trailing_whitespace")


def reference_bleu(outputs: Sequence[str], reference_path: str,
                   target_language: str = "") -> Tuple[BLEUScore, str]:
    """`corpus_bleu` of `outputs` against a reference file (`read_reference`), with
    the tokenizer of `target_language`."""
    return corpus_bleu(outputs, read_reference(reference_path),
                       tokenize=language_tokenizer(target_language))


def translation_report(outputs: Sequence[str], reference_path: str,
                       target_language: str = "") -> str:
    """"BLEU = 27.31 <signature>  (<details>)  chrF2 = 55.10 <signature>" of `outputs`
    against a reference file, BLEU as `reference_bleu` computes it.

    BLEU comes first and its signature names the tokenizer (`tok:ja-mecab-...`);
    recipes read the line with `^BLEU = ([0-9.]+) (\\S+)`.
    """
    references = read_reference(reference_path)
    bleu, bleu_signature = corpus_bleu(outputs, references,
                                       tokenize=language_tokenizer(target_language))
    chrf, chrf_signature = corpus_chrf(outputs, references)
    return (f"BLEU = {bleu.score:.2f} {bleu_signature}  ({bleu})  "
            f"{chrf.name} = {chrf.score:.2f} {chrf_signature}")
