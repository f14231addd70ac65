"""tensor2tensor's SubwordTextEncoder vocabularies (`*.subwords`), applied exactly and in-graph.

Users bring models trained by tensor2tensor whose vocabulary is a t2t
`SubwordTextEncoder` file: one quoted subtoken a line, `'<pad>_'` = id 0,
`'<EOS>_'` = id 1. `T2TSubwordVocab` reads such a file and encodes / decodes
text exactly as t2t 1.15.7 does, with TensorFlow and tensorflow-text ops only,
so it runs inside `tf.function` and inside an exported SavedModel (TF Serving
runs no Python). It is a `t2t_lite.data.vocab_base.Vocabulary`, as `SubwordVocab` is.

Why hand-written: no library implements t2t's format. SentencePiece, WordPiece
and BPE tokenizers each pre-tokenize, escape and join differently; the one
reusable part is the greedy longest-match split, which tensorflow-text's
`WordpieceTokenizer` does with an empty suffix indicator. Everything around it
(t2t's tokenizer, its escaping, its unescaping and its detokenizer) is written
here from t2t's rules, as vectorised TensorFlow ops.

t2t's rules (tensor2tensor/data_generators/text_encoder.py and tokenizer.py):

  - Loading: lines are split at "\\n"; TensorFlow's GFile (which t2t reads
    with) drops every "\\r"; each line is `rstrip()`ped and one pair of
    enclosing quotes removed. The alphabet is the set of characters of all
    subtoken strings plus `\\ _ u ; 0-9`. The greedy split never tries pieces
    longer than the longest subtoken; an empty subtoken keeps its id but never
    matches; of two equal subtokens the later id wins.
  - Tokenizing: maximal runs of "alphanumeric" characters (Unicode category L*
    or N*, per Python's `unicodedata`) and of the others; a token that is
    exactly one space is dropped unless it is the first or the last token.
  - Escaping a token: `\\` -> `\\\\`, `_` -> `\\u`, "\\n" and characters outside
    the alphabet -> `\\NNN;` (decimal code point); then `_` is appended.
  - Each escaped token is split greedily into the longest subtokens present.
  - Decoding: the subtoken strings are concatenated and split at `_`; each
    non-empty piece is unescaped left to right (`\\u`, `\\\\`, `\\digits;`; a code
    point above U+10FFFF gives U+3013, as t2t); empty results are dropped; two
    consecutive tokens are joined with one space when the FIRST character of
    each is alphanumeric (t2t looks at the previous token's first character,
    not its last).

Choices where t2t has no exact equivalent (documented, not guessed):

  - `unk_id` is None: t2t has no unknown id; every character can be escaped.
    If a vocabulary's alphabet holds a character that is not also a subtoken of
    its own (t2t always writes those, so only hand-made files), t2t fails with
    an AssertionError on text containing it; here the graph raises
    InvalidArgumentError ("cannot split ...") and the Python helpers T2TError.
  - Ids are t2t-lite's: `encode` appends EOS (t2t's `encode` does not);
    `decode` stops at the first EOS and drops PAD (t2t would print `<pad>` and
    `<EOS>`). Ids outside the vocabulary decode to nothing, as in t2t.
  - Input text that is not valid UTF-8 loses the invalid bytes (t2t's
    `native_to_unicode` on bytes does the same, `errors="ignore"`).
  - `\\NNN;` naming a surrogate (U+D800..U+DFFF) decodes to U+FFFD: Python
    gives a lone surrogate that is not valid UTF-8 and cannot be written out.
  - Which characters are alphanumeric is taken from the `unicodedata` of the
    Python that builds the vocabulary and frozen into the graph (and so into a
    SavedModel); t2t asks the `unicodedata` of the Python it runs on. Both
    agree except on characters that only newer Unicode versions assign.
  - Loading is stricter than t2t: every line must be a quoted subtoken (t2t
    would take an unquoted line as it is), and lines 1 and 2 must be
    `'<pad>_'` and `'<EOS>_'` (t2t-lite's PAD and EOS ids).

`tokenize_with_offsets` is exact: a subtoken's span covers the source
characters whose escaped form it overlaps (so two subtokens sharing one
escaped character, e.g. `\\12` and `8512;`, both get that character's span),
a subtoken that is only the token-ending `_` gets an empty span at the end of
its token, and dropped single spaces belong to no subtoken.
"""

import os
from typing import List, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.data.layout import EOS_ID
from t2t_lite.data.t2t_subword_chars import (REPLACEMENT_CHAR, encode_chars, is_alnum,
                                             position_in_row, utf8_length)
from t2t_lite.data.t2t_subwords_text import parse_subwords
from t2t_lite.data.vocab import joined_pieces
from t2t_lite.data.vocab_base import Vocabulary
from t2t_lite.errors import T2TError

# Python's str.isspace() set in RE2 syntax (\t..\r, \x1c..\x1f, \x85, Unicode separators),
# at either end of a line.
_BLANK = r"[\t-\r\x{1c}-\x{1f}\x{85}\p{Z}]"
_SURROUNDING_BLANKS = f"^{_BLANK}+|{_BLANK}+$"

# Always in a t2t alphabet, whatever the subtokens: the characters escapes are made of.
_ESCAPE_CHARS = "\\_u;0123456789"
# One unit of an escaped token, in the order t2t's unescaping regex tries them.
_ESCAPE_UNIT = r"\\u|\\\\|\\[0-9]+;"
_UNDEFINED_CHAR = 0x3013      # what t2t gives for `\NNN;` beyond U+10FFFF
_MAX_CODE_POINT = 0x10FFFF
# Never a subtoken (lines are split at "\n"): WordpieceTokenizer's unknown token,
# so that a token it cannot split looks up the table's default id, -1.
_NO_MATCH = "\n"
_BIG = 2 ** 31 - 1
_CANNOT_SPLIT = ("t2t's SubwordTextEncoder cannot split this text: a character of the "
                 "vocabulary's alphabet is not a subtoken of its own")


def _split_error(error: tf.errors.InvalidArgumentError) -> Exception:
    """T2TError for the graph's "cannot split" assertion; other errors as they are."""
    if _CANNOT_SPLIT not in error.message:
        return error
    return T2TError(_CANNOT_SPLIT + " (t2t fails with an AssertionError too).")


def _parse_subwords(data: bytes, source: str) -> List[str]:
    """The subtoken strings of a t2t subwords file's bytes, in id order
    (`t2t_subwords_text.parse_subwords`, the one reader of the format).

    Raises:
      T2TError: (one line, naming `source` and the line) not UTF-8, not a
        quoted subtoken, or lines 1-2 not '<pad>_' and '<EOS>_'.
    """
    try:
        return parse_subwords(data, source)
    except ValueError as e:
        raise T2TError(str(e)) from None


def is_t2t_subwords_file(path: str) -> bool:
    """Whether `path` names a t2t SubwordTextEncoder vocabulary: by its name
    (`*.subwords`), else by its first two lines ('<pad>_' and '<EOS>_', quoted)."""
    if str(path).endswith(".subwords"):
        return True
    try:
        with tf.io.gfile.GFile(str(path), "rb") as f:
            head = f.read(64)
    except (OSError, tf.errors.OpError):
        return False
    lines = [line.replace(b"\r", b"").rstrip() for line in head.split(b"\n")[:2]]
    return lines in ([b"'<pad>_'", b"'<EOS>_'"], [b'"<pad>_"', b'"<EOS>_"'])


class T2TSubwordVocab(Vocabulary):
    """A t2t SubwordTextEncoder vocabulary, applied with TensorFlow ops inside or outside
    tf.function; a `Vocabulary` of one side, as `SubwordVocab`.

    Its lookup table is a tracked resource and its other data graph constants, so
    a `tf.Module` holding this vocabulary carries it into a SavedModel.

    Attributes (besides `Vocabulary`'s): `model_proto` is the `*.subwords` file's
    bytes (not a SentencePiece model); `vocab_size` its number of lines;
    `whole_token_ids` always empty; `unk_id` None (t2t has no unknown id).
    """

    def __init__(self, model_proto: bytes, name: str = "t2t_subword_vocab",
                 source: str = "the t2t subwords vocabulary"):
        """Reads the bytes of a t2t `*.subwords` file (`source` names it in errors)."""
        super().__init__(model_proto, name=name)
        subtokens = _parse_subwords(self.model_proto, source)
        self._pieces = subtokens
        self.vocab_size = len(subtokens)
        self.whole_token_ids: List[int] = []
        self.max_subtoken_length = max(len(s) for s in subtokens)
        self._strings = np.array([s.encode("utf-8") for s in subtokens], dtype=object)
        self._alphabet = np.array(sorted({ord(c) for s in subtokens for c in s}
                                         | {ord(c) for c in _ESCAPE_CHARS}), np.int64)
        ids = {s: i for i, s in enumerate(subtokens) if s}  # the later of equal strings wins
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([s.encode("utf-8") for s in ids], tf.string),
                tf.constant(list(ids.values()), tf.int64)),
            default_value=-1)
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._table, suffix_indicator="", max_bytes_per_word=_BIG,
            max_chars_per_token=self.max_subtoken_length, token_out_type=tf.int32,
            unknown_token=_NO_MATCH)

    @classmethod
    def from_file(cls, path: str) -> "T2TSubwordVocab":
        """Loads a t2t `*.subwords` file.

        Raises:
          T2TError: the file is missing or unreadable, or is not a t2t subwords file.
        """
        path = str(path)
        if not tf.io.gfile.exists(path):
            raise T2TError(f"No t2t subwords vocabulary at {path}.")
        try:
            with tf.io.gfile.GFile(path, "rb") as f:
                data = f.read()
        except (OSError, tf.errors.OpError) as e:
            raise T2TError(f"Cannot read the vocabulary {path}: "
                           f"{str(e).splitlines()[0] if str(e) else type(e).__name__}.") from None
        return cls(data, source=path)

    @classmethod
    def load(cls, data_dir: str, problem) -> "T2TSubwordVocab":
        """Loads t2t's `vocab.{problem}.*.subwords` from `data_dir` (`problem`: a name or a
        `Problem`); T2TError unless exactly one matches."""
        name = problem if isinstance(problem, str) else problem.name
        found = sorted(tf.io.gfile.glob(os.path.join(data_dir, f"vocab.{name}.*.subwords")))
        if len(found) != 1:
            raise T2TError(f"Expected one t2t vocabulary vocab.{name}.*.subwords in {data_dir}, "
                           f"found {len(found)}.")
        return cls.from_file(found[0])

    # --- In-graph encoding ---

    def _encode_parts(self, text: tf.Tensor, with_offsets: bool):
        """ids [N, (T)] int32 without EOS; with_offsets: also byte starts and ends [N, (T)]."""
        text = tf.convert_to_tensor(text, tf.string)
        n = tf.shape(text, out_type=tf.int64)[0]
        chars, char_starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="ignore")
        cp = tf.cast(chars.flat_values, tf.int64)                      # [M], all rows
        num_chars = tf.size(cp, out_type=tf.int64)
        char_row = chars.value_rowids()                                # [M]

        # t2t's tokenizer: maximal alphanumeric / other runs.
        alnum = is_alnum(cp)
        prev_alnum = tf.concat([[False], alnum], 0)[:-1]
        new_token = tf.logical_or(tf.equal(position_in_row(chars), 0),
                                  tf.not_equal(alnum, prev_alnum))     # [M]
        token_of_char = tf.cumsum(tf.cast(new_token, tf.int64)) - 1    # [M]
        token_first = tf.where(new_token)[:, 0]                        # [K] first char of each
        token_length = tf.concat([token_first[1:], [num_chars]], 0) - token_first
        token_row = tf.gather(char_row, token_first)                   # [K]
        tokens_in_row = tf.math.unsorted_segment_sum(tf.ones_like(token_row), token_row, n)
        token_pos = (tf.range(tf.size(token_row, out_type=tf.int64))
                     - tf.gather(tf.cumsum(tokens_in_row, exclusive=True), token_row))
        # A token that is exactly one space goes, unless first or last in its line.
        dropped = (tf.equal(token_length, 1) & tf.equal(tf.gather(cp, token_first), ord(" "))
                   & (token_pos > 0) & (token_pos < tf.gather(tokens_in_row, token_row) - 1))
        keep_token = tf.logical_not(dropped)                           # [K]
        keep_char = tf.gather(keep_token, token_of_char)               # [M]
        kept_index = tf.cumsum(tf.cast(keep_token, tf.int64)) - 1      # [K] index among kept
        num_kept = tf.reduce_sum(tf.cast(keep_token, tf.int64))
        kept_row = tf.boolean_mask(token_row, keep_token)              # [Kk]
        kcp = tf.boolean_mask(cp, keep_char)                           # [Mk]
        k_token = tf.gather(kept_index, tf.boolean_mask(token_of_char, keep_char))  # [Mk]

        # t2t's escaping, character by character.
        alphabet = tf.constant(self._alphabet)
        at = tf.minimum(tf.searchsorted(alphabet, kcp, side="left", out_type=tf.int64),
                        tf.size(alphabet, out_type=tf.int64) - 1)
        plain = tf.equal(tf.gather(alphabet, at), kcp) & tf.not_equal(kcp, ord("\n"))
        escaped = tf.where(plain, encode_chars(kcp),
                           tf.strings.join(["\\", tf.strings.as_string(kcp), ";"]))
        escaped = tf.where(tf.equal(kcp, ord("_")), "\\u", escaped)
        escaped = tf.where(tf.equal(kcp, ord("\\")), "\\\\", escaped)  # [Mk]
        escaped_chars = tf.RaggedTensor.from_value_rowids(escaped, k_token, nrows=num_kept)
        escaped_tokens = tf.strings.reduce_join(escaped_chars, axis=1) + "_"  # [Kk]

        # Greedy longest match; a token with no split is one id -1.
        pieces, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(escaped_tokens)
        check = tf.debugging.assert_non_negative(
            pieces.flat_values,
            message=_CANNOT_SPLIT)
        with tf.control_dependencies([check]):
            piece_ids = tf.identity(pieces.flat_values)
        pieces_in_row = tf.math.unsorted_segment_sum(pieces.row_lengths(), kept_row, n)
        ids = tf.RaggedTensor.from_row_lengths(piece_ids, pieces_in_row)
        if not with_offsets:
            return ids

        # Offsets: from each piece's place in the escaped text to the source characters.
        escaped_length = tf.cast(tf.strings.length(escaped), tf.int64)  # [Mk] (bytes)
        source_start = tf.boolean_mask(char_starts.flat_values, keep_char)
        source_end = source_start + utf8_length(kcp)
        # Escaped characters laid end to end, each token followed by its one-byte "_".
        escaped_at = tf.cumsum(escaped_length, exclusive=True) + k_token  # [Mk], sorted
        token_at = tf.gather(escaped_at, escaped_chars.row_starts())      # [Kk]
        piece_token_at = tf.gather(token_at, pieces.value_rowids())
        begin = piece_token_at + tf.cast(piece_starts.flat_values, tf.int64)
        end = piece_token_at + tf.cast(piece_ends.flat_values, tf.int64)
        # The kept characters holding each piece's first and last byte.
        first = tf.searchsorted(escaped_at, begin, side="right", out_type=tf.int64) - 1
        last = tf.searchsorted(escaped_at, end - 1, side="right", out_type=tf.int64) - 1
        only_underscore = begin >= tf.gather(escaped_at, first) + tf.gather(escaped_length, first)
        starts = tf.where(only_underscore, tf.gather(source_end, first),
                          tf.gather(source_start, first))
        ends = tf.gather(source_end, last)
        return (ids, tf.RaggedTensor.from_row_lengths(starts, pieces_in_row),
                tf.RaggedTensor.from_row_lengths(ends, pieces_in_row))

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Strings to ids with EOS appended (t2t's ids otherwise).

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (T)], each row ending with EOS_ID.
        """
        ids = self._encode_parts(text, with_offsets=False)
        eos = tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        return tf.concat([ids, eos], axis=1)                               # [N, (T)]

    def encode_inputs(self, text: tf.Tensor) -> tf.RaggedTensor:
        """`encode` of lines as t2t-decoder feeds them to the model: without the
        whitespace at both ends (t2t's decode_from_file and score_file `strip()` each
        line; the same set of characters as Python's `str.isspace`).

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (T)], each row ending with EOS_ID.
        """
        text = tf.convert_to_tensor(text, tf.string)
        return self.encode(tf.strings.regex_replace(text, _SURROUNDING_BLANKS, ""))

    def encode_with_offsets(self, text: tf.Tensor
                            ) -> Tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """(ids, byte starts, byte ends), each [N, (T)] with EOS last (its span empty at
        the end of the text): the source bytes of each subtoken (see the module docstring)."""
        text = tf.convert_to_tensor(text, tf.string)
        ids, starts, ends = self._encode_parts(text, with_offsets=True)
        size = tf.expand_dims(tf.cast(tf.strings.length(text), tf.int64), 1)  # [N, 1]
        eos = tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        return (tf.concat([ids, eos], axis=1), tf.concat([starts, size], axis=1),
                tf.concat([ends, size], axis=1))

    # --- In-graph decoding ---

    def _unescape(self, pieces: tf.Tensor) -> tf.Tensor:
        """t2t's unescaping of each string of tf.string [P] (no "_" inside)."""
        units = tf_text.regex_split(pieces, _ESCAPE_UNIT, _ESCAPE_UNIT)    # [P, (U)]
        unit = units.flat_values
        numeric = tf.strings.regex_full_match(unit, r"\\[0-9]+;")
        length = tf.strings.length(unit)
        digits = tf.strings.substr(unit, tf.ones_like(length), tf.maximum(length - 2, 0))
        digits = tf.strings.regex_replace(digits, "^0+", "")
        short = tf.strings.length(digits) <= 7                 # else certainly > U+10FFFF
        value = tf.strings.to_number(tf.where(numeric & short & (tf.strings.length(digits) > 0),
                                              digits, "0"), tf.int64)
        code_point = tf.where(short & (value <= _MAX_CODE_POINT), value, _UNDEFINED_CHAR)
        code_point = tf.where((code_point >= 0xD800) & (code_point <= 0xDFFF),
                              tf.constant(REPLACEMENT_CHAR, tf.int64), code_point)
        out = tf.where(numeric, encode_chars(code_point), unit)
        out = tf.where(tf.equal(unit, "\\u"), "_", out)
        out = tf.where(tf.equal(unit, "\\\\"), "\\", out)
        return tf.strings.reduce_join(units.with_flat_values(out), axis=1)  # [P]

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids to strings as t2t decodes them; stops at the first EOS and drops PAD.

        Args:
          ids: integer tensor [N, T] (or RaggedTensor [N, (T)]), e.g. decoder output.
        Returns:
          tf.string tensor [N].
        """
        text = joined_pieces(ids, self._strings)                            # [N]
        pieces = tf.strings.split(text, "_")                                # [N, (P)]
        pieces = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
        tokens = pieces.with_flat_values(self._unescape(pieces.flat_values))
        tokens = tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)  # [N, (P)]
        first = tf.strings.unicode_decode(
            tf.strings.substr(tokens.flat_values, 0, 1, unit="UTF8_CHAR"), "UTF-8",
            errors="replace")
        first = tf.reshape(first.to_tensor(default_value=0, shape=[None, 1]), [-1])  # [P]
        alnum = is_alnum(first)
        space = (position_in_row(tokens) > 0) & alnum & tf.concat([[False], alnum], 0)[:-1]
        joined = tf.strings.join([tf.where(space, " ", ""), tokens.flat_values])
        return tf.strings.reduce_join(tokens.with_flat_values(joined), axis=1)  # [N]

    # --- Python conveniences (eager): also `Vocabulary`'s (`pieces`: e.g. 'the_') ---

    def encode_texts(self, texts: Sequence[str]) -> List[List[int]]:
        """Encodes Python strings in eager mode; each id list ends with EOS.

        Raises:
          T2TError: t2t cannot encode a text with this vocabulary (see the module docstring).
        """
        try:
            return super().encode_texts(texts)
        except tf.errors.InvalidArgumentError as e:
            raise _split_error(e) from None

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) of each text's subtokens as lists, EOS last
        (its span empty): where in the UTF-8 of the text each subtoken comes from."""
        try:
            ids, starts, ends = self.encode_with_offsets(tf.constant(list(texts), tf.string))
        except tf.errors.InvalidArgumentError as e:
            raise _split_error(e) from None
        return ids.to_list(), starts.to_list(), ends.to_list()
