"""BLEU on Moses-tokenized text: the convention of papers scored with multi-bleu.perl
or fairseq's BLEU (e.g. most Multi30k results), beside sacreBLEU's detokenized score.

    score, signature = moses_bleu(hypotheses, references, lang="de", lowercase=True)
    # signature: "nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:2.6.0|moses:de"

Both sides are tokenized with sacremoses' port of the Moses tokenizer (its
`tokenizer.perl`), without escaping (`&`, `"` and `'` stay as written, as with
tokenizer.perl's -no-escape), then scored by sacreBLEU with no tokenizer of its own.
A paper's tokenized BLEU depends on its exact preprocessing, so compare such
numbers as a convention, not as a replication.
"""

import functools
from typing import List, Sequence, Tuple

from sacrebleu.metrics.bleu import BLEUScore

from t2t_lite.metrics.bleu import corpus_bleu


@functools.lru_cache(maxsize=8)
def _tokenizer(lang: str):
    from sacremoses import MosesTokenizer  # only this metric needs it

    return MosesTokenizer(lang=lang)


def moses_tokenized(lines: Sequence[str], lang: str) -> List[str]:
    """Each line tokenized as Moses' tokenizer.perl -l LANG -no-escape does, tokens
    joined by one space: 'Ein Mann, der "schläft".' -> 'Ein Mann , der " schläft " .'."""
    tokenizer = _tokenizer(lang)
    return [tokenizer.tokenize(line, escape=False, return_str=True) for line in lines]


def moses_bleu(hypotheses: Sequence[str], references: Sequence[str], lang: str,
               lowercase: bool = False) -> Tuple[BLEUScore, str]:
    """Corpus BLEU of the Moses-tokenized lines (`corpus_bleu` with tokenize="none");
    the signature names the Moses language.

    Raises:
      T2TError: different line counts.
    """
    score, signature = corpus_bleu(moses_tokenized(hypotheses, lang),
                                   moses_tokenized(references, lang), tokenize="none",
                                   lowercase=lowercase)
    return score, f"{signature}|moses:{lang}"
