"""t2t-bleu: corpus BLEU of a translation file against a reference file.

    t2t-bleu --translation=out.de --reference=newstest2014.de [--tokenize=intl] [--lowercase]
    t2t-bleu --translation=out.ja --reference=test.ja --target_lang=ja
    t2t-bleu --translation=out.de --reference=test.de --moses_lang=de --lowercase

Prints sacreBLEU's BLEU line with its signature, then its chrF2 line, as t2t-decoder's
report prints chrF2 beside BLEU:

    BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 27.31 58.9/33.0/...
    chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 55.10

the lines of `sacrebleu REF -i HYP -m bleu chrf -f text -w 2` (which right-aligns the
metric names; chrF2 is cased there and here, also with --lowercase). `--score_only`
prints the BLEU number alone. `--target_lang=LANG` picks
the tokenizer t2t-decoder and dev evaluation use for that target language (`zh`,
`ja-mecab`, `ko-mecab`, else `13a`: `t2t_lite.metrics.bleu.language_tokenizer`).
Without `--target_lang` or `--tokenize`, a translation that reads as Chinese, Japanese
or Korean (`t2t_lite.metrics.scripts.cjk_language`) is still scored with 13a, which
finds no words in text written without spaces, and one note on stderr names the
`--target_lang` to give.
`--moses_lang=LANG` scores Moses-tokenized text instead (both sides tokenized as
tokenizer.perl -l LANG -no-escape does, then sacreBLEU with tok:none): the
convention of papers scored with multi-bleu.perl or fairseq (`t2t_lite.metrics.moses`).
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli
from t2t_lite.metrics.bleu import (DEFAULT_TOKENIZER, RECOMMENDED_TOKENIZERS, TOKENIZERS,
                                   corpus_bleu, corpus_chrf, language_tokenizer)
from t2t_lite.metrics.moses import moses_bleu
from t2t_lite.metrics.scripts import LANGUAGE_NAMES, cjk_language
from t2t_lite.textio import read_lines

PROG = "t2t-bleu"


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--translation", required=True,
                        help="system output, one detokenized sentence per line")
    parser.add_argument("--reference", required=True,
                        help="reference translation, same number of lines")
    parser.add_argument("--tokenize", default=None,
                        help=f"sacreBLEU tokenizer (default 13a; 'intl' as in tensor2tensor's "
                             f"bleu_hook); one of {', '.join(TOKENIZERS)}")
    parser.add_argument("--target_lang", default="",
                        help="the reference's language (e.g. ja): its tokenizer, as t2t-decoder "
                             "scores it (zh, ja-mecab, ko-mecab, else 13a)")
    parser.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU")
    parser.add_argument("--moses_lang", default="",
                        help="score Moses-tokenized text of this language (e.g. de) instead "
                             "of sacreBLEU's own tokenization")
    parser.add_argument("--score_only", action="store_true",
                        help="print the BLEU number only (no signature, no chrF2)")
    return parser


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = build_parser()
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    # Read as sacreBLEU's command line reads files (trailing whitespace removed),
    # and a byte-order mark removed with a note, as every program does (`textio`).
    translation = read_lines(args.translation, strip="trailing_whitespace", note=cli.note)
    reference = read_lines(args.reference, strip="trailing_whitespace", note=cli.note)
    if args.moses_lang:
        if args.tokenize or args.target_lang:
            raise cli.T2TError("--moses_lang tokenizes the text itself: not with --tokenize "
                               "or --target_lang.")
        score, signature = moses_bleu(translation, reference, args.moses_lang, args.lowercase)
    else:
        if not (args.tokenize or args.target_lang):
            _note_cjk(translation)
        score, signature = corpus_bleu(translation, reference, tokenize=_tokenizer(args),
                                       lowercase=args.lowercase)
    print(score.format(score_only=args.score_only, signature=signature))
    if not args.score_only:
        chrf, chrf_signature = corpus_chrf(translation, reference)
        print(chrf.format(signature=chrf_signature))
    return 0


def _note_cjk(translation: List[str]) -> None:
    """One line on stderr when the translation reads as Chinese, Japanese or Korean."""
    language = cjk_language(translation)
    if language:
        print(f"{PROG}: note: the translation reads as {LANGUAGE_NAMES[language]} (more than "
              f"half of its non-space characters are Han, Kana or Hangul), which BLEU's default "
              f"tokenizer 13a does not split into words; give --target_lang={language} to score "
              f"it with sacreBLEU's {RECOMMENDED_TOKENIZERS[language]!r} tokenizer",
              file=sys.stderr, flush=True)


def _tokenizer(args: argparse.Namespace) -> str:
    """--tokenize, or the tokenizer of --target_lang, or 13a."""
    if args.tokenize and args.target_lang:
        raise cli.T2TError("--target_lang chooses the tokenizer: not with --tokenize.")
    if args.target_lang:
        return language_tokenizer(args.target_lang)
    return args.tokenize or DEFAULT_TOKENIZER


def main(argv: Optional[List[str]] = None) -> int:
    """Returns 0, or 1 after a one-line error (argparse itself exits 2 on bad flags)."""
    args = parse_args(argv)
    return cli.main(PROG, lambda: run(args), tensorflow=False)


if __name__ == "__main__":
    sys.exit(main())
