"""tensor2tensor's SubwordTextEncoder in pure Python, for clients without TensorFlow.

    encoder = T2TSubwordText.from_file("vocab.translate_ende_multi30k.8192.subwords")
    ids = encoder.encode("A man sleeps.")     # t2t's ids (no EOS), e.g. [5, 17, ...]
    text = encoder.decode(ids)                 # "A man sleeps."

A CTranslate2 export of a model imported from tensor2tensor (t2t-import) ships
t2t's `*.subwords` vocabulary beside the CTranslate2 model; its client
(`ctranslate2_client.CT2Translator`) needs only `ctranslate2` and this module,
as a SentencePiece export's needs only `ctranslate2` and `sentencepiece`.

Why hand-written: no installable package implements t2t's format except
tensor2tensor itself, which pulls in TensorFlow 1.x-era dependencies (and this
repository never imports it); `t2t_lite.data.t2t_subwords.T2TSubwordVocab` is
the same algorithm as TensorFlow ops, for graphs and SavedModels, and so needs
TensorFlow. This module is t2t's rules, written from their description in
`t2t_lite/data/t2t_subwords.py` (tensor2tensor 1.15.7's text_encoder.py and
tokenizer.py), with the standard library only (`unicodedata`, `re`), and is
checked against t2t's own ids and round trips on 8,013 lines
(tests/export/test_ctranslate2_imported.py). In short:

  - Loading: lines split at "\\n", every "\\r" dropped, each line `rstrip()`ped
    and its enclosing quotes removed. Alphabet: the characters of all
    subtokens plus `\\ _ u ; 0-9`. Of two equal subtokens the later id wins; an
    empty subtoken keeps its id and never matches.
  - Tokenizing: maximal runs of alphanumeric characters (Unicode category L*
    or N*) and of the others; a token that is one space is dropped unless it
    is the first or the last.
  - Escaping a token: `\\` -> `\\\\`, `_` -> `\\u`, "\\n" and characters outside
    the alphabet -> `\\NNN;`; then `_` appended. Then a greedy longest-match
    split into subtokens (never longer than the longest subtoken).
  - Decoding: subtoken strings concatenated, split at `_`; each non-empty
    piece unescaped (`\\u`, `\\\\`, `\\digits;`; beyond U+10FFFF -> U+3013);
    empty results dropped; two neighbours joined by a space when the first
    character of each is alphanumeric.

Choices that follow `T2TSubwordVocab` (so the client, t2t-decoder and the
SavedModel agree), where t2t itself has no exact equivalent:

  - Loading is strict: every line a quoted subtoken, lines 1 and 2 `'<pad>_'`
    and `'<EOS>_'`; anything else is a ValueError naming the file and line.
  - `\\NNN;` naming a surrogate (U+D800..U+DFFF) decodes to U+FFFD (Python's
    lone surrogate cannot be written as UTF-8).
  - `decode_output` (what the client uses) stops at the first EOS and drops
    PAD, as t2t-lite's decoder does; `decode` is t2t's, id for id.
  - Which characters are alphanumeric is asked of this Python's `unicodedata`,
    as t2t does (t2t's set is built over range(sys.maxunicode); U+10FFFF, the
    one code point it leaves out, is unassigned, so not alphanumeric anyway).
"""

import re
import unicodedata
from typing import Dict, Iterable, List, Sequence

PAD = "<pad>_"
EOS = "<EOS>_"
PAD_ID, EOS_ID = 0, 1
_ESCAPE_CHARS = frozenset("\\_u;0123456789")
_UNESCAPE = re.compile(r"\\u|\\\\|\\([0-9]+);")
_UNDEFINED_CHAR = "\u3013"      # t2t's result for `\NNN;` beyond U+10FFFF
_REPLACEMENT_CHAR = "\ufffd"    # for a `\NNN;` naming a surrogate (see above)
_MAX_CODE_POINT = 0x10FFFF
_CACHE_SIZE = 2 ** 20           # tokens whose ids are remembered (t2t caches 2**20 too)


class _AlnumTable(dict):
    """char -> whether t2t counts it alphanumeric (category L* or N*), computed on
    first sight: cheaper than t2t's set over all 1.1M code points."""

    def __missing__(self, char: str) -> bool:
        value = self[char] = unicodedata.category(char)[0] in "LN"
        return value


_ALNUM = _AlnumTable()


def _unescape_unit(match: "re.Match") -> str:
    digits = match.group(1)
    if digits is None:
        return "_" if match.group(0) == "\\u" else "\\"
    code_point = int(digits)
    if code_point > _MAX_CODE_POINT:
        return _UNDEFINED_CHAR
    if 0xD800 <= code_point <= 0xDFFF:
        return _REPLACEMENT_CHAR
    return chr(code_point)


def parse_subwords(data: bytes, source: str = "the t2t subwords vocabulary") -> List[str]:
    """The subtoken strings of a t2t `*.subwords` file's bytes, in id order.

    Raises:
      ValueError: (one line, naming `source` and the line) not UTF-8, a line that
        is not a quoted subtoken, or lines 1-2 not '<pad>_' and '<EOS>_'.
    """
    lines = data.split(b"\n")
    if lines and lines[-1].replace(b"\r", b"").strip() == b"":
        lines.pop()  # the file's final newline
    if not lines:
        raise ValueError(f"{source} is empty, not a t2t SubwordTextEncoder vocabulary.")
    subtokens = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.replace(b"\r", b"").decode("utf-8").rstrip()
        except UnicodeDecodeError as e:
            raise ValueError(f"{source}, line {number}: not UTF-8 ({e.reason} at byte "
                             f"{e.start}); not a t2t SubwordTextEncoder vocabulary.") from None
        if len(line) < 2 or line[0] not in "'\"" or line[-1] != line[0]:
            raise ValueError(f"{source}, line {number}: {line[:40]!r} is not a quoted "
                             "subtoken; not a t2t SubwordTextEncoder vocabulary.")
        subtokens.append(line[1:-1])
    if subtokens[:2] != [PAD, EOS]:
        raise ValueError(f"{source}: the first two subtokens are {subtokens[:2]!r}, where t2t "
                         f"writes {[PAD, EOS]!r}; not a t2t SubwordTextEncoder vocabulary.")
    return subtokens


class T2TSubwordText:
    """A t2t SubwordTextEncoder vocabulary applied in pure Python, exactly as t2t 1.15.7.

    Attributes:
      subtokens: the subtoken strings in id order ('<pad>_', '<EOS>_', ...).
      vocab_size: len(subtokens).
      max_subtoken_length: characters of the longest subtoken (the greedy split's cap).
    """

    def __init__(self, subtokens: Sequence[str]):
        self.subtokens = list(subtokens)
        self.vocab_size = len(self.subtokens)
        self.max_subtoken_length = max((len(s) for s in self.subtokens), default=0)
        self._ids: Dict[str, int] = {s: i for i, s in enumerate(self.subtokens) if s}
        self._alphabet = frozenset(c for s in self.subtokens for c in s) | _ESCAPE_CHARS
        self._cache: Dict[str, List[int]] = {}

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "the t2t subwords vocabulary"
                   ) -> "T2TSubwordText":
        """From a `*.subwords` file's bytes (`source` names it in errors)."""
        return cls(parse_subwords(data, source))

    @classmethod
    def from_file(cls, path: str) -> "T2TSubwordText":
        """Loads a t2t `*.subwords` file (OSError if unreadable, ValueError if malformed)."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read(), str(path))

    # --- Encoding ---

    @staticmethod
    def tokenize(text: str) -> List[str]:
        """t2t's tokenizer.encode: maximal alphanumeric / other runs, single spaces
        between two tokens dropped."""
        if not text:
            return []
        alnum = _ALNUM
        tokens, start, previous = [], 0, alnum[text[0]]
        for position in range(1, len(text)):
            current = alnum[text[position]]
            if current != previous:
                token = text[start:position]
                if token != " " or start == 0:
                    tokens.append(token)
                start, previous = position, current
        tokens.append(text[start:])
        return tokens

    def escape(self, token: str) -> str:
        """t2t's _escape_token: `\\`, `_`, "\\n" and characters outside the alphabet
        escaped, `_` appended."""
        token = token.replace("\\", "\\\\").replace("_", "\\u")
        alphabet = self._alphabet
        return "".join(c if c in alphabet and c != "\n" else f"\\{ord(c)};"
                       for c in token) + "_"

    def _split(self, escaped: str) -> List[int]:
        """The greedy longest-match split of an escaped token into subtoken ids."""
        ids, start, end_of_token = [], 0, len(escaped)
        lookup, longest = self._ids, self.max_subtoken_length
        while start < end_of_token:
            for end in range(min(end_of_token, start + longest), start, -1):
                found = lookup.get(escaped[start:end])
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                raise ValueError(
                    f"t2t's SubwordTextEncoder cannot split {escaped!r}: a character of the "
                    "vocabulary's alphabet is not a subtoken of its own (t2t fails with an "
                    "AssertionError too).")
        return ids

    def token_ids(self, token: str) -> List[int]:
        """The ids of one token (of `tokenize`), remembered (as t2t caches them)."""
        ids = self._cache.get(token)
        if ids is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            ids = self._cache[token] = self._split(self.escape(token))
        return ids

    def encode(self, text: str) -> List[int]:
        """t2t's SubwordTextEncoder.encode: the ids of `text`, without EOS.

        Raises:
          ValueError: t2t cannot split the text with this vocabulary (only a
            hand-made vocabulary lacking one of its own alphabet's characters).
        """
        ids: List[int] = []
        for token in self.tokenize(text):
            ids.extend(self.token_ids(token))
        return ids

    def encode_inputs(self, text: str) -> List[int]:
        """`encode` of a line as t2t-decoder feeds it to the model: without the
        whitespace at both ends (t2t's decode_from_file `strip()`s each line;
        `T2TSubwordVocab.encode_inputs` does the same)."""
        return self.encode(text.strip())

    # --- Decoding ---

    def subtoken_tokens(self, ids: Iterable[int]) -> List[str]:
        """t2t's _subtoken_ids_to_tokens: the unescaped tokens the ids spell (ids
        outside the vocabulary spell nothing)."""
        size, strings = self.vocab_size, self.subtokens
        text = "".join(strings[i] if 0 <= i < size else "" for i in ids)
        tokens = []
        for piece in text.split("_"):
            if piece:
                token = _UNESCAPE.sub(_unescape_unit, piece)
                if token:
                    tokens.append(token)
        return tokens

    @staticmethod
    def detokenize(tokens: Sequence[str]) -> str:
        """t2t's tokenizer.decode: a space between two tokens whose first characters
        are both alphanumeric."""
        alnum = _ALNUM
        parts, previous = [], False
        for token in tokens:
            current = alnum[token[0]]
            if previous and current:
                parts.append(" ")
            parts.append(token)
            previous = current
        return "".join(parts)

    def decode(self, ids: Iterable[int]) -> str:
        """t2t's SubwordTextEncoder.decode, id for id (PAD and EOS spell '<pad>' and
        '<EOS>', as in t2t)."""
        return self.detokenize(self.subtoken_tokens(ids))

    def decode_output(self, ids: Iterable[int]) -> str:
        """`decode` of a model's output as t2t-lite's decoder writes it: up to the
        first EOS, PAD dropped (`T2TSubwordVocab.decode`)."""
        kept = []
        for i in ids:
            if i == EOS_ID:
                break
            if i != PAD_ID:
                kept.append(i)
        return self.decode(kept)
