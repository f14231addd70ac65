"""tensor2tensor's ByteTextEncoder and TokenTextEncoder vocabularies, applied in-graph.

A t2t `Text2TextProblem` whose `vocab_type` is CHARACTER or TOKEN encodes its
text with t2t's `ByteTextEncoder` or `TokenTextEncoder`. `T2TByteVocab` and
`T2TTokenVocab` give the same ids with TensorFlow ops only, so they run inside
`tf.function` and an exported SavedModel; both are a
`t2t_lite.data.vocab_base.Vocabulary` (as `T2TSubwordVocab` is).

t2t's rules (tensor2tensor 1.15 data_generators/text_encoder.py):

  - ByteTextEncoder: the ids of a text are the bytes of its UTF-8, each plus
    the 2 reserved ids (<pad>=0, <EOS>=1); 258 ids. Decoding joins the bytes
    and decodes them as UTF-8 with errors="replace" (U+FFFD).
  - TokenTextEncoder read from a file: one token a line (each line
    `strip()`ped), id = line index, no reserved ids prepended (the file holds
    them); of two equal lines the later id wins. Encoding `strip().split()`s
    the text (Python's whitespace) and looks each word up; a word not in the
    file becomes the problem's `oov_token` (t2t's `replace_oov`), or, without
    one, fails (t2t: KeyError). Decoding joins the tokens with one space.

Choices where t2t-lite differs (as for `T2TSubwordVocab`): `encode` appends
EOS; `decode` stops at the first EOS and drops PAD and ids outside the
vocabulary (t2t would print `<pad>`, `<EOS>`, `ID_n`). A token file must start
with `<pad>` and `<EOS>` (t2t-lite's PAD and EOS ids; t2t appends EOS id 1 to
every example too, so a file without them gives t2t wrong examples).

Files (what a data and a model directory keep, by suffix; `vocab_files`):

  - `{problem}.bytes`: one line describing the byte vocabulary (nothing to read:
    the encoder has no data), so datagen's vocabulary hash and the model
    directory's copy work as for every other vocabulary.
  - `{problem}.tokens`: a first line `#t2t-lite tokens: replace_oov=<JSON>` (the
    OOV token travels with the vocabulary into the model directory and the
    SavedModel, where no problem is at hand), then t2t's token file verbatim.
"""

import json
import os
from typing import List, Optional, Sequence, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.data.layout import EOS_ID
from t2t_lite.data.t2t_subwords import _BLANK, _SURROUNDING_BLANKS
from t2t_lite.data.vocab import ids_before_eos
from t2t_lite.data.vocab_base import Vocabulary
from t2t_lite.errors import T2TError

BYTES_SUFFIX = ".bytes"
TOKENS_SUFFIX = ".tokens"
NUM_RESERVED = 2  # t2t's <pad>, <EOS>
BYTES_DESCRIPTION = (b"t2t-lite: tensor2tensor ByteTextEncoder (id = UTF-8 byte + 2; "
                     b"0 <pad>, 1 <EOS>; 258 ids)\n")
_TOKENS_HEADER = "#t2t-lite tokens: replace_oov="
_UNKNOWN_WORD = ("t2t's TokenTextEncoder cannot encode a word that is not in its vocabulary "
                 "when the problem has no oov_token")


class T2TByteVocab(Vocabulary):
    """t2t's ByteTextEncoder in graph; a `Vocabulary` of one side.

    Attributes (besides `Vocabulary`'s): `model_proto` is the `.bytes` description
    file's bytes (what datagen hashes); `vocab_size` 258; `unk_id` None (every byte
    has an id).
    """

    vocab_size = 256 + NUM_RESERVED
    t2t_encoder = "ByteTextEncoder"  # what log lines and refusals call it

    def __init__(self, model_proto: bytes = BYTES_DESCRIPTION, name: str = "t2t_byte_vocab",
                 source: str = "the t2t byte vocabulary"):
        super().__init__(model_proto, name=name)
        if self.model_proto != BYTES_DESCRIPTION:  # one encoder only: refuse what is not it
            raise T2TError(f"{source} is not t2t-lite's byte vocabulary description.")
        self.whole_token_ids: List[int] = []

    @classmethod
    def from_file(cls, path: str) -> "T2TByteVocab":
        """Loads a `.bytes` file (T2TError: missing, unreadable or another content)."""
        return cls(_read(path), source=str(path))

    def _encode_parts(self, text: tf.Tensor) -> tf.RaggedTensor:
        """ids [N, (T)] int32 without EOS: each byte + 2."""
        raw = tf.strings.bytes_split(tf.convert_to_tensor(text, tf.string))  # [N, (T)]
        byte = tf.io.decode_raw(raw.flat_values, tf.uint8)[:, 0]        # [M], one byte each
        return raw.with_flat_values(tf.cast(byte, tf.int32) + NUM_RESERVED)

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Strings [N] to int32 RaggedTensor [N, (T)] of t2t's ids, EOS appended."""
        ids = self._encode_parts(text)
        return tf.concat([ids, tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, tf.int32))], 1)

    def encode_inputs(self, text: tf.Tensor) -> tf.RaggedTensor:
        """`encode` of lines as t2t-decoder feeds them: stripped of whitespace at both ends
        (t2t's decode_from_file `strip()`s each line; Python's `str.isspace` set)."""
        text = tf.convert_to_tensor(text, tf.string)
        return self.encode(tf.strings.regex_replace(text, _SURROUNDING_BLANKS, ""))

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids [N, T] (or ragged) to strings [N]: bytes before the first EOS, invalid UTF-8
        replaced by U+FFFD as t2t's `decode("utf-8", "replace")` does."""
        kept = ids_before_eos(ids, tf.int32)
        flat = kept.flat_values
        kept = tf.ragged.boolean_mask(kept, kept.with_flat_values(
            (flat >= NUM_RESERVED) & (flat < self.vocab_size)))
        byte = tf.cast(kept.flat_values - NUM_RESERVED, tf.uint8)
        chars = tf.strings.reduce_join(kept.with_flat_values(_bytes_to_strings(byte)), axis=1)
        return tf.strings.unicode_transcode(chars, "UTF-8", "UTF-8", errors="replace",
                                            replacement_char=0xFFFD)

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) as lists, EOS last with an empty span: byte i of
        the text is id i, spanning [i, i + 1)."""
        ids = self.encode_texts(texts)
        starts = [list(range(len(row) - 1)) + [len(row) - 1] for row in ids]
        ends = [list(range(1, len(row))) + [len(row) - 1] for row in ids]
        return ids, starts, ends

    def pieces(self, ids: Optional[Sequence[int]] = None) -> List[str]:
        """A readable string of each id: `<pad>`, `<EOS>`, printable ASCII as itself,
        other bytes as `\\xNN`."""
        table = ["<pad>", "<EOS>"] + [chr(b) if 32 < b < 127 else f"\\x{b:02x}"
                                      for b in range(256)]
        return table if ids is None else [table[i] for i in ids]


# The 256 one-byte strings, indexed by byte: gathering them is the in-graph inverse of
# bytes_split + decode_raw.
_BYTE_STRINGS = np.array([bytes([b]) for b in range(256)], dtype=object)


def _bytes_to_strings(byte: tf.Tensor) -> tf.Tensor:
    """uint8 [M] -> tf.string [M], one byte each."""
    return tf.gather(tf.constant(_BYTE_STRINGS, tf.string), tf.cast(byte, tf.int32))


def _read(path: str) -> bytes:
    """A vocabulary file's bytes (T2TError: missing or unreadable, in one line)."""
    path = str(path)
    if not tf.io.gfile.exists(path):
        raise T2TError(f"No vocabulary at {path}.")
    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    except (OSError, tf.errors.OpError) as e:
        raise T2TError(f"Cannot read the vocabulary {path}: "
                       f"{str(e).splitlines()[0] if str(e) else type(e).__name__}.") from None


def token_file_bytes(t2t_file: bytes, oov_token: Optional[str]) -> bytes:
    """The `.tokens` file of t2t's token vocabulary file's bytes and the problem's oov_token."""
    return (_TOKENS_HEADER + json.dumps(oov_token) + "\n").encode("utf-8") + bytes(t2t_file)


class T2TTokenVocab(Vocabulary):
    """t2t's TokenTextEncoder (read from a file) in graph; a `Vocabulary` of one side.

    Attributes (besides `Vocabulary`'s): `model_proto` is the `.tokens` file's bytes
    (header line + t2t's file); `vocab_size` the lines of t2t's file; `unk_id` the
    oov_token's id, or None.
    """

    t2t_encoder = "TokenTextEncoder"

    def __init__(self, model_proto: bytes, name: str = "t2t_token_vocab",
                 source: str = "the t2t token vocabulary"):
        super().__init__(model_proto, name=name)
        try:
            header, _, body = self.model_proto.decode("utf-8").partition("\n")
            if not header.startswith(_TOKENS_HEADER):
                raise ValueError
            oov = json.loads(header[len(_TOKENS_HEADER):])
        except ValueError:
            raise T2TError(f"{source} is not a t2t-lite token vocabulary (UTF-8, first line "
                           f"{_TOKENS_HEADER}<JSON>).") from None
        # t2t's readlines() (through GFile, which drops "\r") splits at "\n" only; a last
        # line without "\n" counts.
        lines = body.replace("\r", "").split("\n")
        if lines[-1] == "":
            lines.pop()
        tokens = [line.strip() for line in lines]
        if tokens[:2] != ["<pad>", "<EOS>"]:
            raise T2TError(f"{source}: lines 1 and 2 of t2t's token file must be <pad> and "
                           f"<EOS> (t2t-lite's PAD and EOS ids), found {tokens[:2]!r}.")
        ids = {t: i for i, t in enumerate(tokens)}  # the later of equal lines wins, as in t2t
        if oov is not None and oov not in ids:
            raise T2TError(f"{source}: the problem's oov_token {oov!r} is not in the vocabulary "
                           "(t2t would fail on the first unknown word).")
        self.oov_token = oov
        self.unk_id = None if oov is None else ids[oov]
        self._pieces = tokens
        self.vocab_size = len(tokens)
        self.whole_token_ids: List[int] = []
        self._strings = np.array([t.encode("utf-8") for t in tokens], dtype=object)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([t.encode("utf-8") for t in ids], tf.string),
                tf.constant(list(ids.values()), tf.int32)),
            default_value=-1 if self.unk_id is None else self.unk_id)

    @classmethod
    def from_file(cls, path: str) -> "T2TTokenVocab":
        """Loads a `.tokens` file (T2TError: missing, unreadable or malformed)."""
        return cls(_read(path), source=str(path))

    @classmethod
    def from_t2t_file(cls, path: str, oov_token: Optional[str]) -> "T2TTokenVocab":
        """The vocabulary of t2t's own token file (one token a line) and `oov_token`."""
        return cls(token_file_bytes(_read(path), oov_token), source=str(path))

    def _words(self, text: tf.Tensor, with_offsets: bool = False):
        """t2t's `strip().split()`: Python's whitespace separates words, none empty."""
        text = tf.convert_to_tensor(text, tf.string)
        if with_offsets:
            return tf_text.regex_split_with_offsets(text, _BLANK + "+")
        return tf_text.regex_split(text, _BLANK + "+")

    def _ids(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        ids = self._table.lookup(words.flat_values)
        check = tf.debugging.assert_non_negative(ids, message=_UNKNOWN_WORD)
        with tf.control_dependencies([check]):
            return words.with_flat_values(tf.identity(ids))

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Strings [N] to int32 RaggedTensor [N, (T)] of t2t's ids, EOS appended."""
        ids = self._ids(self._words(text))
        return tf.concat([ids, tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, tf.int32))], 1)

    # t2t's encode strips and splits at whitespace already.
    encode_inputs = encode

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids to strings [N]: tokens before the first EOS joined by one space (PAD and ids
        outside the vocabulary dropped)."""
        kept = ids_before_eos(ids, tf.int32)
        flat = kept.flat_values
        kept = tf.ragged.boolean_mask(kept, kept.with_flat_values(
            (flat >= 0) & (flat < self.vocab_size)))
        words = tf.gather(tf.constant(self._strings, tf.string), kept.flat_values)
        return tf.strings.reduce_join(kept.with_flat_values(words), axis=1, separator=" ")

    def encode_texts(self, texts: Sequence[str]) -> List[List[int]]:
        """Encodes Python strings eagerly; each id list ends with EOS.

        Raises:
          T2TError: a word not in the vocabulary and no oov_token (t2t: KeyError).
        """
        try:
            return super().encode_texts(texts)
        except tf.errors.InvalidArgumentError as e:
            if _UNKNOWN_WORD in e.message:
                raise T2TError(_UNKNOWN_WORD + " (t2t fails with a KeyError too).") from None
            raise

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) of each text's words as lists, EOS last (its span
        empty at the end of the text)."""
        words, starts, ends = self._words(tf.constant(list(texts), tf.string), True)
        try:
            ids = self._ids(words).to_list()
        except tf.errors.InvalidArgumentError as e:
            if _UNKNOWN_WORD in e.message:
                raise T2TError(_UNKNOWN_WORD + " (t2t fails with a KeyError too).") from None
            raise
        sizes = [len(t.encode("utf-8")) for t in texts]
        return ([row + [EOS_ID] for row in ids],
                [row + [n] for row, n in zip(starts.to_list(), sizes)],
                [row + [n] for row, n in zip(ends.to_list(), sizes)])


def vocab_kind(problem) -> str:
    """A problem's t2t vocabulary type ("subwords" for t2t-lite's own problems)."""
    return getattr(problem, "vocab_type", "subwords")


def is_text_encoder_file(path: str) -> bool:
    """Whether `path` names one of this module's vocabulary files (by suffix)."""
    return str(path).endswith((BYTES_SUFFIX, TOKENS_SUFFIX))


def load_file(path: str):
    """The vocabulary of a `.bytes` or `.tokens` file."""
    cls = T2TByteVocab if str(path).endswith(BYTES_SUFFIX) else T2TTokenVocab
    return cls.from_file(path)


def data_file(data_dir: str, problem) -> Optional[str]:
    """Where a CHARACTER or TOKEN problem's vocabulary is kept in `data_dir`; None for
    other problems."""
    suffix = {"character": BYTES_SUFFIX, "tokens": TOKENS_SUFFIX}.get(vocab_kind(problem))
    return os.path.join(data_dir, problem.name + suffix) if suffix else None


def build(problem, data_dir: str, path: str) -> tuple:
    """(vocabulary, file bytes) of a CHARACTER or TOKEN problem: the byte description,
    or t2t's token file `data_dir/{problem.vocab_filename}` with the problem's oov_token
    (t2t reads it from the data directory too), or, without it, an earlier copy at `path`.

    Raises:
      T2TError: a TOKEN problem whose token file is in neither place.
    """
    if vocab_kind(problem) == "character":
        return T2TByteVocab(), BYTES_DESCRIPTION
    t2t_path = os.path.join(data_dir, problem.vocab_filename)
    if os.path.isfile(t2t_path):
        vocab = T2TTokenVocab.from_t2t_file(t2t_path, problem.oov_token)
    elif os.path.isfile(path):
        vocab = T2TTokenVocab.from_file(path)
    else:
        raise T2TError(f"{problem.name}: VocabType.TOKEN reads t2t's token vocabulary file "
                       f"{t2t_path} (one token a line, <pad> and <EOS> first), which is missing.")
    return vocab, vocab.model_proto
