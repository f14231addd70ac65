"""A Marian (OPUS-MT) vocabulary computing MarianTokenizer's ids in-graph, in t2t-lite's ids.

`MarianVocab` is a `t2t_lite.data.vocab_base.Vocabulary` with a source side of
its own, built from TensorFlow and tensorflow-text ops only, so a SavedModel
still takes and returns strings. It computes what transformers 5.23's
`MarianTokenizer` does (`tokenizer(line)["input_ids"]`,
`tokenizer(text_target=line)["input_ids"]` and
`decode(ids, skip_special_tokens=True)`), with its ids renumbered
(`t2t_lite.marian.ids`: `<pad>` 0, `</s>` 1, `<unk>` 2).

Encoding one side (the source: `source.spm` and the source table; the target:
`target.spm` and the target table):

  - the line is cut where `</s>`, `<unk>` or `<pad>` is written in it (they are
    transformers' "added tokens"); each stands for its id, and each other
    segment is encoded as follows;
  - a `>>xxx<<` at the very start of the segment (up to its first `<<`, spaces
    and all) is cut off and looked up as one piece; a segment starting with a
    space keeps it as text;
  - the rest is cut into pieces by the side's SentencePiece model
    (`tf_text.SentencepieceTokenizer`), each piece looked up in the side's
    table; a piece absent from the table is `<unk>` (2), never its
    SentencePiece id;
  - `</s>` (1) is appended.

Decoding (target table): stops at the first `</s>`, drops `<pad>` and skips
`<unk>` (transformers' `skip_special_tokens`); the remaining pieces are joined,
each `▁` becomes a space, and the whitespace at both ends goes (Python's
`str.strip` set). That is what `MarianTokenizer.decode` gives: its
`decode_pieces` joins pieces the same way and passes through pieces its
SentencePiece model does not know (language tokens, pieces of the other side),
so it does not matter which `.spm` joins them.

Multilingual models (the source table holds `>>xxx<<` tokens,
`language_tokens`): transformers translates a line without a language token,
or with one the model does not know (then `<unk>`), into some language;
t2t-lite refuses it with one line naming the model's tokens. The check runs
where each program can turn it into one line:

  - `check_inputs(texts)`: a Python check (T2TError naming the line), for
    t2t-decoder and t2t-server to call on their input before anything else;
  - `encode_inputs`: run eagerly, the same check raises T2TError; inside a
    `tf.function` (the exporter's signatures) a graph assert with the same
    message (an InvalidArgumentError from the SavedModel).

Empty and whitespace-only lines pass: every program answers them with "" and
never translates them. Target text (`encode`) is never checked.

Checked against transformers with tests/t2t_import/marian/check_tokenizer.py:
1,500 random lines made of number words, spaces, TABs, `>>xxx<<`, `</s>`,
`<unk>`, `<pad>` and characters outside the vocabularies encode to the same ids
on both sides of the three reference models but for the first difference
below, and 3,000 random output id sequences of each decode to the same text.

Differences from MarianTokenizer, on input it never meets in practice:
`<pad>` written in a separate-vocabulary target is the target's `<pad>` here
(transformers gives the source's `<pad>` id, outside the target vocabulary);
a `<pad>` id in a separate-vocabulary target (which generation never outputs)
is dropped, where transformers prints `<pad>`; bytes that are not UTF-8 become
U+FFFD first; ids outside the table decode to nothing. And one the ids cannot
show: `<pad>` written in a source line is id 0 as in transformers, but
t2t-lite's model masks id 0 as padding where transformers attends to it.
"""

import re
from typing import List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.data.layout import EOS_ID, UNK_ID
from t2t_lite.data.vocab import WORD_START, joined_pieces
from t2t_lite.data.vocab_base import Vocabulary
from t2t_lite.errors import T2TError
from t2t_lite.marian.vocab_file import StoredVocab, parse_vocab

# The leading `>>xxx<<` of a line (group 1, or nothing): MarianTokenizer's
# `remove_language_code` (`>>` at the start, up to the first `<<`).
_LANGUAGE_CODE = r"(?s)^(>>.*?<<)?.*$"
# Python's str.isspace() set in RE2 syntax (\t..\r, \x1c..\x1f, \x85, Unicode separators).
_BLANK = r"[\t-\r\x{1c}-\x{1f}\x{85}\p{Z}]"


def is_language_token(piece: str) -> bool:
    """Whether `piece` is a `>>xxx<<` language token (MarianTokenizer's test)."""
    return piece.startswith(">>") and piece.endswith("<<")


def _table(pieces: Sequence[str]) -> tf.lookup.StaticHashTable:
    """piece -> its t2t-lite id (its index); anything else -> `<unk>`."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant([p.encode("utf-8") for p in pieces], tf.string),
            tf.range(len(pieces), dtype=tf.int64)),
        default_value=UNK_ID)


class _Side(tf.Module):
    """One side's SentencePiece model (pieces as strings) and piece table."""

    def __init__(self, spm_proto: bytes, pieces: Sequence[str], name: str):
        super().__init__(name=name)
        self.tokenizer = tf_text.SentencepieceTokenizer(model=spm_proto, out_type=tf.string)
        self.table = _table(pieces)
        # MarianTokenizer's added tokens (<pad>, </s>, <unk>: ids 0-2 here): a line is cut
        # where one is written, and it stands for its id.
        self.specials = "|".join(re.escape(piece) for piece in pieces[:3])


def _utf8(text) -> tf.Tensor:
    """tf.string [N], bytes that are not UTF-8 replaced by U+FFFD."""
    text = tf.convert_to_tensor(text, tf.string)
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")


def _language_code(text: tf.Tensor) -> tf.Tensor:
    """tf.string [M] (UTF-8) -> the leading `>>xxx<<` of each, or "" [M]."""
    return tf.strings.regex_replace(text, _LANGUAGE_CODE, r"\1")


def _per_line(values: tf.RaggedTensor, segments: tf.RaggedTensor) -> tf.RaggedTensor:
    """[M, (P)] values of the segments of [N, (K)] -> [N, (T)], each line's in order."""
    return tf.RaggedTensor.from_row_splits(values, segments.row_splits).merge_dims(1, 2)


class MarianVocab(Vocabulary):
    """A Hugging Face Marian vocabulary, in t2t-lite's ids: a `Vocabulary` whose source
    side is its own (`encode_sources`, `encode_targets`, `check_inputs`,
    `source_pieces` and `language_tokens` are this class's).

    Its SentencePiece models are attributes of the tokenizer ops and its piece
    tables tracked resources, so a `tf.Module` holding it carries it into a
    SavedModel. See the module docstring for what it computes and where the
    language-token check of a multilingual model runs.

    Attributes (besides `Vocabulary`'s, where `model_proto` is the `marian_vocab.json`
    bytes as read, not a SentencePiece model, `vocab_size` the target vocabulary's
    size and `language_tokens` the source table's `>>xxx<<` tokens in id order):
      source_vocab_size: the source vocabulary's size (the same for a shared one).
      separate_vocabs: whether source and target have their own tables.
    """

    unk_id = UNK_ID

    def __init__(self, model_proto: bytes, name: str = "marian_vocab",
                 source: str = "the Marian vocabulary"):
        """Reads the bytes of a `marian_vocab.json` (`source` names it in errors)."""
        super().__init__(model_proto, name=name)
        stored: StoredVocab = parse_vocab(self.model_proto, source)
        self.separate_vocabs = stored.separate_vocabs
        self._source_pieces = list(stored.source_pieces)
        self._pieces = list(stored.target_pieces)
        self.vocab_size = len(self._pieces)
        self.source_vocab_size = len(self._source_pieces)
        self.whole_token_ids: List[int] = []
        self.language_tokens = [p for p in self._source_pieces if is_language_token(p)]
        self._strings = np.array([p.encode("utf-8") for p in self._pieces], dtype=object)
        self._source = _Side(stored.source_spm, self._source_pieces, "source")
        self._target = _Side(stored.target_spm, self._pieces, "target")
        self.refusal = ""
        if self.language_tokens:
            # no quotes: the graph assert would print them escaped
            self.refusal = ("This model translates into several languages: each line must "
                            "start with the token of the language to translate into, one of "
                            f"{', '.join(self.language_tokens)}.")
            self._languages = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant([t.encode("utf-8") for t in self.language_tokens], tf.string),
                    tf.ones([len(self.language_tokens)], tf.int64)),
                default_value=0)

    @classmethod
    def from_file(cls, path: str) -> "MarianVocab":
        """Loads a `marian_vocab.json` (`vocab_file.write_vocab`).

        Raises:
          T2TError: the file is missing, unreadable or damaged.
        """
        path = str(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise T2TError(f"No Marian vocabulary at {path}.") from None
        except OSError as e:
            raise T2TError(f"Cannot read the vocabulary {path}: {e.strerror}.") from None
        return cls(data, source=path)

    # --- In-graph encoding ---

    def _encode(self, side: _Side, text: tf.Tensor, with_offsets: bool = False):
        """ids int32 [N, (T)] with EOS; with_offsets: also byte starts and ends int64 [N, (T)].

        As MarianTokenizer: the line is cut into segments at the special tokens
        written in it; a special token is its id; any other segment loses its
        leading `>>xxx<<` (looked up as one piece) and SentencePiece cuts the rest.
        """
        text = _utf8(text)                                                    # [N]
        segments, segment_starts, _ = tf_text.regex_split_with_offsets(
            text, side.specials, side.specials)                               # [N, (K)]
        segment = segments.flat_values                                        # [M]
        special = tf.strings.regex_full_match(segment, side.specials)         # [M]
        # a special token is looked up whole, like a language token, with nothing left
        code = tf.where(special, segment, _language_code(segment))            # [M]
        code_bytes = tf.strings.length(code)                                  # int32 [M]
        rest = tf.strings.substr(segment, code_bytes, tf.strings.length(segment))
        has_code = code_bytes > 0
        in_row = tf.cast(has_code, tf.int64)
        code_ids = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(side.table.lookup(code), has_code), in_row)       # [M, (0|1)]
        if with_offsets:
            pieces, starts, ends = side.tokenizer.tokenize_with_offsets(rest)  # [M, (P)]
        else:
            pieces = side.tokenizer.tokenize(rest)                            # [M, (P)]
        piece_ids = pieces.with_flat_values(side.table.lookup(pieces.flat_values))
        eos = tf.fill([tf.shape(text)[0], 1], tf.constant(EOS_ID, tf.int64))  # [N, 1]
        ids = tf.concat([_per_line(tf.concat([code_ids, piece_ids], axis=1), segments), eos],
                        axis=1)                                               # [N, (T)]
        if not with_offsets:
            return tf.cast(ids, tf.int32)
        begin = tf.cast(segment_starts.flat_values, tf.int64)[:, tf.newaxis]  # [M, 1]
        code_bytes = tf.cast(code_bytes, tf.int64)
        code_starts = tf.RaggedTensor.from_row_lengths(
            tf.zeros_like(code_ids.flat_values), in_row)
        code_ends = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(code_bytes, has_code),
                                                     in_row)
        shift = code_bytes[:, tf.newaxis]                                     # [M, 1]
        size = tf.cast(tf.strings.length(text), tf.int64)[:, tf.newaxis]     # [N, 1]
        starts = tf.concat([code_starts, tf.cast(starts, tf.int64) + shift], axis=1) + begin
        ends = tf.concat([code_ends, tf.cast(ends, tf.int64) + shift], axis=1) + begin
        return (tf.cast(ids, tf.int32), tf.concat([_per_line(starts, segments), size], axis=1),
                tf.concat([_per_line(ends, segments), size], axis=1))

    def _accepted(self, text: tf.Tensor) -> tf.Tensor:
        """bool [N]: each line blank or starting with one of `language_tokens`."""
        text = _utf8(text)
        blank = tf.strings.regex_full_match(text, _BLANK + "*")
        return tf.logical_or(blank, self._languages.lookup(_language_code(text)) > 0)

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Target strings to ids (`target.spm`, the target table), EOS appended.

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (T)], each row ending with EOS_ID.
        """
        return self._encode(self._target, text)

    def encode_sources(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Source lines of training data (t2t-datagen): `encode_inputs`, the source side;
        datagen checks them first (`check_inputs`)."""
        return self.encode_inputs(text)

    def encode_targets(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Target lines a program scores or pictures: `encode`, the target side, never
        refused for a missing language token."""
        return self.encode(text)

    def encode_inputs(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Source strings to ids (`source.spm`, the source table), EOS appended.

        A multilingual model refuses a line without one of its language tokens:
        T2TError when run eagerly, a graph assert (InvalidArgumentError with the
        same message) inside a `tf.function`.

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (S)], each row ending with EOS_ID.
        """
        text = tf.convert_to_tensor(text, tf.string)
        if self.language_tokens:
            accepted = self._accepted(text)                                   # [N]
            if tf.executing_eagerly():
                refused = np.flatnonzero(~accepted.numpy())
                if refused.size:
                    raise T2TError(self._refusal_of(text.numpy()[refused[0]]))
            else:
                check = tf.debugging.Assert(tf.reduce_all(accepted), [self.refusal])
                with tf.control_dependencies([check]):
                    text = tf.identity(text)
        return self._encode(self._source, text)

    def _refusal_of(self, line: Union[bytes, str], where: str = "") -> str:
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        shown = line if len(line) <= 60 else line[:57] + "..."
        return f"{self.refusal} Refused{where}: {shown!r}."

    def check_inputs(self, texts: Sequence[str], first_line: int = 1,
                     unit: str = "line") -> None:
        """Refuses source lines a multilingual model cannot translate (no language token
        of its own at the start); blank lines pass. Nothing to check for a model of one
        target language.

        Args:
          texts: the input lines.
          first_line: the line number of `texts[0]`, for the message.
          unit: what the number counts ("line"; datagen: "pair").
        Raises:
          T2TError: one line naming the model's language tokens and the first refused line.
        """
        if not self.language_tokens or not texts:
            return
        accepted = self._accepted(tf.constant(list(texts), tf.string)).numpy()
        refused = np.flatnonzero(~accepted)
        if refused.size:
            i = int(refused[0])
            raise T2TError(self._refusal_of(texts[i], f" {unit} {first_line + i}"))

    # --- In-graph decoding ---

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids to strings as `MarianTokenizer.decode(ids, skip_special_tokens=True)`; stops
        at the first EOS, drops PAD, skips UNK.

        Args:
          ids: integer tensor [N, T] (or RaggedTensor [N, (T)]), e.g. decoder output.
        Returns:
          tf.string tensor [N].
        """
        text = joined_pieces(ids, self._strings, first_shown=UNK_ID + 1)      # [N]
        text = tf.strings.regex_replace(text, WORD_START, " ")
        return tf.strings.regex_replace(text, f"^{_BLANK}+|{_BLANK}+$", "")   # [N]

    # --- Python conveniences (eager): also `Vocabulary`'s (`encode_texts`: the targets,
    # `pieces`: the target pieces) ---

    def encode_input_texts(self, texts: Sequence[str]) -> List[List[int]]:
        """Encodes source strings in eager mode (`encode_inputs`, after `check_inputs`)."""
        if not texts:
            return []
        self.check_inputs(texts)
        return self.encode_inputs(tf.constant(list(texts), dtype=tf.string)).to_list()

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) of each source text's pieces as lists, EOS last
        (its span empty at the end): where in the UTF-8 of the text each piece comes
        from (a language token: its own bytes)."""
        self.check_inputs(texts)
        ids, starts, ends = self._encode(self._source, tf.constant(list(texts), tf.string),
                                         with_offsets=True)
        return ids.to_list(), starts.to_list(), ends.to_list()

    def source_pieces(self, ids: Optional[Sequence[int]] = None) -> List[str]:
        """The source pieces of `ids` (default: every id, in id order)."""
        table = self._source_pieces
        return list(table) if ids is None else [table[i] for i in ids]
