"""Text prepared as Multi30k's `tok/*.lc.norm.tok.*` files, and a joint BPE vocabulary for it.

Multi30k's `scripts/task1-tokenize.sh` made those files with the Moses perl
scripts of commit 3a0631a (December 2017), one line at a time:

    lowercase.perl | normalize-punctuation.perl -l LANG | tokenizer.perl -l LANG

tokenizer.perl's defaults: `&`, `'`, `"`, `<`, `>`, `[`, `]` and `|` escaped
(`&amp;`, `&apos;`, `&quot;` ...), hyphens inside a word kept (no `-a`).
`lc_norm_tok` does the same with sacremoses' ports (`MosesPunctNormalizer`,
`MosesTokenizer`), putting back the two places where sacremoses 0.1.1 differs
from that script:

  - normalize-punctuation.perl reads each line with its newline, so its
    German rule that moves a period before a closing quote (`."` -> `".`,
    "don't fix period at end of sentence") fires at the end of a line too;
  - it turns `‘`, `‚` and `’` into `"` unless between two letters, where the
    port writes `'` (its `perl_parity` option fixes only `’`, and by changing
    the class for every later normalizer).

So made, Multi30k's train, val and test_2016_flickr files come out byte for
byte as its `tok/` files, in both languages (62,028 lines; the test pins
test_2016_flickr and val by their git blob hashes).

`prepare_file` writes a file so prepared with each line's tokens joined by one
space (one line of Multi30k's train.en has a double space): the text fairseq
trains on and multi-bleu.perl scores, which split on whitespace.
`learn_joint_bpe` learns one SentencePiece BPE vocabulary over both sides
(fairseq's `--joined-dictionary` over subword-nmt's joint BPE), segmenting
the words as subword-nmt does (`train_sentencepiece(bpe=True)`).
"""

import functools
import time
from typing import Callable, Iterable, List, Tuple

import sentencepiece as spm

from t2t_lite.atomic import write_text
from t2t_lite.data.layout import EOS_ID, PAD_ID, UNK_ID
from t2t_lite.textio import iter_lines

# normalize-punctuation.perl's replacements that sacremoses 0.1.1 writes as `'`.
_PERL_QUOTES = {"‘": '"', "‚": '"', "’": '"'}
# Ids of a t2t-lite SentencePiece model besides its pieces of text: PAD, EOS, UNK
# and the 256 byte pieces (`train_sentencepiece`'s byte fallback).
RESERVED_IDS = len({PAD_ID, EOS_ID, UNK_ID}) + 256


@functools.lru_cache(maxsize=4)
def _moses(lang: str):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer  # only this preparation

    normalizer = MosesPunctNormalizer(lang=lang)
    # The instance's own flat list of (pattern, replacement): the class stays as it is.
    normalizer.substitutions = [(pattern, _PERL_QUOTES.get(pattern, replacement))
                                for pattern, replacement in normalizer.substitutions]
    return normalizer, MosesTokenizer(lang=lang)


def lc_norm_tok(line: str, lang: str) -> str:
    """One line as Multi30k's tok files hold it (whitespace as they have it):
    'Ein Hund läuft im „Schnee“.' -> 'ein hund läuft im &quot; schnee &quot; .'."""
    normalizer, tokenizer = _moses(lang)
    # The newline the perl script sees (see the module doc); sacremoses strips it again.
    normalized = normalizer.normalize(line.lower() + "\n")
    return tokenizer.tokenize(normalized, escape=True, aggressive_dash_splits=False,
                              return_str=True)


def prepare_file(source: str, target: str, lang: str) -> Tuple[int, int]:
    """Writes `source` prepared (`lc_norm_tok`, tokens joined by one space) to `target`
    atomically; returns its (lines, tokens).

    Raises:
      T2TError: `source` is missing, unreadable or not UTF-8 (`t2t_lite.textio`).
    """
    lines = [" ".join(lc_norm_tok(line, lang).split())
             for line in iter_lines(source, strip="newline")]
    write_text(target, "".join(line + "\n" for line in lines))
    return len(lines), sum(len(line.split()) for line in lines)


def learn_joint_bpe(paths: Iterable[str], merges: int,
                    log: Callable[[str], None] = print) -> bytes:
    """A SentencePiece BPE model of `merges` merges learned from the lines of all
    `paths` together (both sides of a corpus: one joint vocabulary); returns its proto.
    Text too small for `merges` gives the merges it supports (`log` says how many).

    Raises:
      T2TError: a file is missing, unreadable or not UTF-8; SentencePiece fails.
    """
    from t2t_lite.data.vocab import WORD_START, train_sentencepiece  # TensorFlow

    start = time.time()
    sentences: List[str] = [line for path in paths for line in iter_lines(path, strip="newline")
                            if line.strip()]
    characters = set("".join(sentences).replace(" ", "")) | {WORD_START}
    size = merges + len(characters) + RESERVED_IDS
    proto = train_sentencepiece(sentences, size, hard_limit=False, bpe=True)
    learned = spm.SentencePieceProcessor(model_proto=proto).get_piece_size()
    log(f"  BPE: {learned - len(characters) - RESERVED_IDS:,} merges (of {merges:,} asked) "
        f"over {len(characters)} characters, {learned:,} ids, from {len(sentences):,} "
        f"sentences in {time.time() - start:.1f} s")
    return proto
