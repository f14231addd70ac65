"""Corpus BLEU through sacreBLEU, the number tensor2tensor users compare with.

    score, signature = corpus_bleu(hypotheses, references)
    print(score.format(signature=signature))
    # BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 27.31 58.9/...

Uses `sacrebleu.metrics.BLEU(...).corpus_score(hyps, [refs])`: the functional
`sacrebleu.corpus_bleu(hyps, refs)` with unwrapped references silently scores
against the wrong streams (see STACK-NOTES).
"""

from typing import Sequence, Tuple

import sacrebleu
from sacrebleu.metrics.bleu import BLEUScore

from t2t_lite.errors import T2TError, did_you_mean

TOKENIZERS = tuple(sorted(sacrebleu.metrics.BLEU.TOKENIZERS))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "13a",
                lowercase: bool = False) -> Tuple[BLEUScore, str]:
    """Scores one hypothesis per reference line (one reference stream).

    Args:
      hypotheses: detokenized system outputs, one per sentence.
      references: detokenized references, same count and order.
      tokenize: sacreBLEU tokenizer: "13a" (its default, mteval-v13a), "intl"
        (mteval-v14 international, what tensor2tensor's `bleu_hook` used), ...
      lowercase: case-insensitive BLEU.

    Returns:
      (sacreBLEU's score object: `.score` is BLEU in [0, 100], `str()` the
      details; the signature string, e.g.
      "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0").

    Raises:
      T2TError: different line counts or an unknown tokenizer.
    """
    if len(hypotheses) != len(references):
        raise T2TError(f"The translation has {len(hypotheses)} lines but the reference has "
                       f"{len(references)}; BLEU needs one translation per reference line.")
    if tokenize not in TOKENIZERS:
        raise T2TError(f"Unknown tokenizer {tokenize!r}; expected one of "
                       f"{', '.join(TOKENIZERS)}." + did_you_mean(tokenize, TOKENIZERS))
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=lowercase)
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return score, str(metric.get_signature())
