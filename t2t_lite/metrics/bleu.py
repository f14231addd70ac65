"""Corpus BLEU and chrF through sacreBLEU, the numbers tensor2tensor users compare with.

    score, signature = corpus_bleu(hypotheses, references, tokenize=language_tokenizer("de"))
    print(score.format(signature=signature))
    # BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 27.31 58.9/...

Uses `sacrebleu.metrics.BLEU(...).corpus_score(hyps, [refs])`: the functional
`sacrebleu.corpus_bleu(hyps, refs)` with unwrapped references silently scores
against the wrong streams (see STACK-NOTES).

BLEU counts words, so the tokenizer must suit the target language
(`language_tokenizer`): sacreBLEU's own recommendations, `zh` for Chinese,
`ja-mecab` for Japanese, `ko-mecab` for Korean, `13a` otherwise. The MeCab
tokenizers need the `ja` / `ko` extras; without them such targets are scored
with `char` and one line on stderr says so. chrF counts characters and needs no
tokenizer.
"""

import functools
import sys
from typing import Optional, Sequence, Tuple

import sacrebleu
from sacrebleu.metrics.bleu import BLEUScore
from sacrebleu.metrics.chrf import CHRFScore

from t2t_lite.errors import T2TError, did_you_mean

TOKENIZERS = tuple(sorted(sacrebleu.metrics.BLEU.TOKENIZERS))

DEFAULT_TOKENIZER = "13a"  # sacreBLEU's default (mteval-v13a), for every other language
# sacreBLEU's recommendation per target language (its BLEU._TOKENIZER_MAP, which
# applies only to its built-in test sets; tests compare the two).
RECOMMENDED_TOKENIZERS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}
# ISO 639-2/3 codes a user's files may be named with, as the 639-1 code above.
_LANGUAGE_ALIASES = {"zho": "zh", "chi": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko"}
# Tokenizers that need packages outside t2t-lite's install: the extra naming them,
# and the tokenizer used without them. Characters, not sacreBLEU's other suggestion
# `spm`: that one downloads its SentencePiece model on first use, which a training
# job's dev evaluation must not depend on.
_NEEDS_EXTRA = {"ja-mecab": ("ja", "char"), "ko-mecab": ("ko", "char")}
# What sacreBLEU raises when a tokenizer's packages are missing or broken (it imports
# MeCab and its dictionary lazily and fails only when the tokenizer is built).
_BUILD_ERRORS = (ImportError, RuntimeError, AssertionError, OSError)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str],
                tokenize: str = DEFAULT_TOKENIZER,
                lowercase: bool = False) -> Tuple[BLEUScore, str]:
    """Scores one hypothesis per reference line (one reference stream).

    Args:
      hypotheses: detokenized system outputs, one per sentence.
      references: detokenized references, same count and order.
      tokenize: sacreBLEU tokenizer: "13a" (its default, mteval-v13a), "intl"
        (mteval-v14 international, what tensor2tensor's `bleu_hook` used),
        `language_tokenizer(target_language)`, ...
      lowercase: case-insensitive BLEU.

    Returns:
      (sacreBLEU's score object: `.score` is BLEU in [0, 100], `str()` the
      details; the signature string, e.g.
      "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0").

    Raises:
      T2TError: different line counts, an unknown tokenizer, or one sacreBLEU cannot
        build (ja-mecab / ko-mecab without MeCab).
    """
    _check_counts(hypotheses, references, "BLEU")
    if tokenize not in TOKENIZERS:
        raise T2TError(f"Unknown tokenizer {tokenize!r}; expected one of "
                       f"{', '.join(TOKENIZERS)}." + did_you_mean(tokenize, TOKENIZERS))
    try:
        metric = sacrebleu.metrics.BLEU(tokenize=tokenize, lowercase=lowercase)
    except _BUILD_ERRORS as e:  # MeCab or its dictionary missing (the `ja` / `ko` extras)
        extra, fallback = _NEEDS_EXTRA.get(tokenize, (None, None))
        hint = (f"; pip install -e '.[{extra}]' in the t2t-lite checkout for it, or score "
                f"with the {fallback!r} tokenizer" if extra else "")
        raise T2TError(f"sacreBLEU's {tokenize!r} tokenizer cannot be built "
                       f"({_first_line(e)}){hint}.") from None
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return score, str(metric.get_signature())


def primary_language(language: str) -> str:
    """The ISO 639-1 code of a language tag: "ja", "ja-JP", "JA_jp" and "jpn" -> "ja";
    "en_ptb_tree" -> "en"; "" -> ""."""
    primary = language.strip().lower().replace("_", "-").split("-")[0]
    return _LANGUAGE_ALIASES.get(primary, primary)


def language_tokenizer(language: str) -> str:
    """The sacreBLEU tokenizer for BLEU of text in `language` (an ISO code, "" for
    unknown): "zh", "ja-mecab", "ko-mecab" or "13a", or "char" for Japanese or
    Korean when MeCab cannot be loaded (then noted once per process on stderr)."""
    recommended = RECOMMENDED_TOKENIZERS.get(primary_language(language), DEFAULT_TOKENIZER)
    return _usable_tokenizer(recommended)


@functools.lru_cache(maxsize=None)  # checked and noted once per process, not per score
def _usable_tokenizer(recommended: str) -> str:
    """`recommended`, or its fallback after a one-line note when it cannot be built."""
    if recommended not in _NEEDS_EXTRA:
        return recommended
    why_not = _why_unusable(recommended)
    if why_not is None:
        return recommended
    extra, fallback = _NEEDS_EXTRA[recommended]
    print(f"note: BLEU of this {extra} target uses sacreBLEU's {fallback!r} tokenizer, not its "
          f"recommended {recommended!r} ({why_not}); pip install -e '.[{extra}]' in the t2t-lite "
          f"checkout for {recommended}", file=sys.stderr, flush=True)
    return fallback


def _why_unusable(tokenizer: str) -> Optional[str]:
    """None if sacreBLEU can build `tokenizer`, else why not in a few words.

    sacreBLEU imports MeCab and its dictionary lazily and fails only when the
    tokenizer is built, so building it is the check.
    """
    try:
        sacrebleu.metrics.BLEU(tokenize=tokenizer)
    except _BUILD_ERRORS as e:
        return _first_line(e)
    return None


def _first_line(error: Exception) -> str:
    """The first non-blank line of `error`'s message, without its full stop."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip().rstrip(".") if lines else type(error).__name__


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> Tuple[CHRFScore, str]:
    """sacreBLEU's chrF2 (character 6-grams, beta 2) of one hypothesis per reference line.

    Returns:
      (the score object: `.score` in [0, 100], `.name` "chrF2"; the signature,
      e.g. "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0").

    Raises:
      T2TError: different line counts.
    """
    _check_counts(hypotheses, references, "chrF")
    metric = sacrebleu.metrics.CHRF()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return score, str(metric.get_signature())


def _check_counts(hypotheses: Sequence[str], references: Sequence[str], metric: str) -> None:
    if len(hypotheses) != len(references):
        raise T2TError(f"The translation has {len(hypotheses)} lines but the reference has "
                       f"{len(references)}; {metric} needs one translation per reference line.")
