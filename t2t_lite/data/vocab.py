"""Subword vocabularies: SentencePiece models learned by datagen, applied in-graph.

Training uses the `sentencepiece` library with settings that give an exact
round trip, `decode(encode(s)) == s`, for any UTF-8 text (checked on all of
Multi30k, see STACK-NOTES.md):

  - `normalization_rule_name="identity"`: no NFKC; NBSP, TAB, full-width
    characters and HTML entities such as `&amp;` stay as written;
  - `remove_extra_whitespaces=False`: double, leading and trailing spaces stay;
  - `character_coverage=1.0` and `byte_fallback=True`: no `<unk>`; a character
    never seen in training is spelt as UTF-8 byte pieces;
  - ids `PAD=0, EOS=1, UNK=2`, no BOS (tensor2tensor's ids, which the model
    and beam search assume; defined in `t2t_lite.data.layout` and importable
    from here too). The vocabulary size counts these three and the 256 byte
    pieces.

The one normalization: leading whitespace of a line is dropped
(SentencePiece's word-boundary prefix; `add_dummy_prefix=False` would keep it
but spend pieces on sentence-initial words without the boundary marker).

Tokenizing is done by `tensorflow_text.SentencepieceTokenizer` everywhere
(datagen, training, decoding, the exported SavedModel): Python sentencepiece
breaks some ties differently ("000"), so one implementation is used throughout.

Files: `vocab_path(data_dir, problem)` is `{data_dir}/{problem}.sp{size}.model`
(the serialized SentencePiece ModelProto) with a human-readable
`{...}.vocab` beside it (piece TAB score per line).
"""

import io
import os
from typing import Iterable, Sequence, Union

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_model_pb2
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite import registry
from t2t_lite.data.layout import EOS_ID, PAD_ID, UNK_ID
from t2t_lite.data.vocab_base import Vocabulary
from t2t_lite.errors import T2TError

WORD_START = "\u2581"  # SentencePiece's word-boundary mark, "▁"

# SentencePiece's result depends on its thread count; fixing it makes the
# vocabulary the same on every machine for the same training text.
_TRAINER_THREADS = 4
# SentencePiece's BPE made to segment as subword-nmt's does (`train_sentencepiece(bpe=True)`).
_SUBWORD_NMT_BPE = dict(model_type="bpe", treat_whitespace_as_suffix=True,
                        add_dummy_prefix=False, split_by_unicode_script=False,
                        split_by_number=False, max_sentencepiece_length=64)


def vocab_file_name(problem_name: str, vocab_size: int) -> str:
    """The vocabulary's file name inside a data dir, e.g. `translate_ende.sp37000.model`."""
    return f"{problem_name}.sp{vocab_size}.model"


def vocab_path(data_dir: str, problem) -> str:
    """Path of `problem`'s vocabulary in `data_dir`; `problem` is a `Problem` or a name."""
    if isinstance(problem, str):
        problem = registry.problem(problem)
    return os.path.join(data_dir, vocab_file_name(problem.name, problem.vocab_size))


def train_sentencepiece(sentences: Iterable[str], vocab_size: int,
                        hard_limit: bool = True, whole_words: Iterable[str] = (),
                        bpe: bool = False) -> bytes:
    """Learns a unigram (or BPE) SentencePiece model with exact round trip; returns its
    proto bytes.

    Args:
      sentences: training text, one sentence per item.
      vocab_size: number of pieces, including PAD, EOS, UNK and 256 byte pieces.
      hard_limit: if False, `vocab_size` is an upper bound: text too small for
        it gives as many pieces as SentencePiece can learn instead of an error
        (text large enough gives exactly `vocab_size` pieces either way).
      whole_words: words that must each be one piece where they start a word
        (SentencePiece user-defined symbols `▁word`), e.g. the bracket and tag
        tokens of linearized trees. A symbol is matched greedily anywhere a word
        starts, so an ordinary word beginning with one (`INTERNATIONAL` with
        `IN`) is split after it; text still round-trips exactly.
      bpe: learn byte-pair merges the way subword-nmt does (Sennrich et al.
        2016) instead of a unigram model: within whitespace-separated words,
        the word boundary marked at the end of a word (`cat▁`, subword-nmt's
        `cat</w>`; not after a line's last word, so that it round-trips
        exactly), pieces mixing scripts, letters and digits (`&apos;s`), up
        to 64 characters long. `vocab_size` is then the merges plus the
        characters of the text (with `▁`) plus the 259 ids above.

    Raises:
      T2TError: `hard_limit` and the text is too small for `vocab_size`
        (SentencePiece's message).
    """
    model = io.BytesIO()
    sentences = list(sentences)
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), model_writer=model,
            vocab_size=vocab_size,
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            character_coverage=1.0, byte_fallback=True,
            pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
            hard_vocab_limit=hard_limit, num_threads=_TRAINER_THREADS, minloglevel=2,
            user_defined_symbols=[WORD_START + w for w in sorted(set(whole_words))],
            **(_SUBWORD_NMT_BPE if bpe else {"model_type": "unigram"}))
    except RuntimeError as e:
        raise T2TError(f"SentencePiece could not learn {vocab_size} pieces from "
                       f"{len(sentences):,} sentences: {e}") from None
    return model.getvalue()


def ids_before_eos(ids: Union[tf.Tensor, tf.RaggedTensor], dtype=tf.int32) -> tf.RaggedTensor:
    """The ids each row holds before its first EOS, PAD dropped: [N, T] (or ragged
    [N, (T)]) -> `dtype` RaggedTensor [N, (T')], what a vocabulary turns into text."""
    if isinstance(ids, tf.RaggedTensor):
        ids = ids.to_tensor(default_value=PAD_ID)
    ids = tf.cast(ids, dtype)                                               # [N, T]
    before_eos = tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1) == 0
    keep = tf.logical_and(before_eos, tf.not_equal(ids, PAD_ID))            # [N, T]
    return tf.ragged.boolean_mask(ids, keep)


def joined_pieces(ids: Union[tf.Tensor, tf.RaggedTensor], strings,
                  first_shown: int = 0) -> tf.Tensor:
    """The piece strings of each row's ids before its first EOS, joined: [N, T] (or
    ragged [N, (T)]) -> tf.string [N]. PAD is dropped; ids below `first_shown` or
    outside `strings` (the pieces' UTF-8, index = id) give nothing."""
    kept = ids_before_eos(ids, tf.int64)                                    # [N, (T)]
    flat = kept.flat_values
    size = len(strings)
    shown = (flat >= first_shown) & (flat < size)
    texts = tf.where(shown, tf.gather(tf.constant(strings, tf.string),
                                      tf.clip_by_value(flat, 0, size - 1)), "")
    return tf.strings.reduce_join(kept.with_flat_values(texts), axis=1)     # [N]


class SubwordVocab(Vocabulary):
    """A SentencePiece vocabulary applied with tensorflow-text, inside or outside tf.function.

    The model proto is an attribute of the tokenizer op, so a `tf.Module` that
    holds this vocabulary carries it into a SavedModel.

    Attributes (besides `Vocabulary`'s):
      model_proto: the serialized SentencePiece model (bytes).
      whole_token_ids: ids of the pieces kept whole (`train_sentencepiece`'s
        `whole_words`), e.g. a parsing problem's tree tokens.
    """

    unk_id = UNK_ID

    def __init__(self, model_proto: bytes, name: str = "subword_vocab"):
        super().__init__(model_proto, name=name)
        processor = spm.SentencePieceProcessor(model_proto=model_proto)
        if (processor.pad_id(), processor.eos_id(), processor.unk_id()) != (PAD_ID, EOS_ID, UNK_ID):
            raise T2TError("The SentencePiece model must use pad=0, eos=1, unk=2 "
                           "(train it with t2t-datagen).")
        self.vocab_size = int(processor.get_piece_size())
        pieces = sp_model_pb2.ModelProto.FromString(model_proto).pieces
        self._pieces = [piece.piece for piece in pieces]
        # Whole target tokens (train_sentencepiece's `whole_words`) are user-defined pieces.
        self.whole_token_ids = [i for i, piece in enumerate(pieces)
                                if piece.type == sp_model_pb2.ModelProto.SentencePiece.USER_DEFINED]
        self._tokenizer = tf_text.SentencepieceTokenizer(
            model=model_proto, out_type=tf.int32, add_eos=True)

    @classmethod
    def from_file(cls, path: str) -> "SubwordVocab":
        """Loads a `.model` file written by datagen.

        Raises:
          T2TError: the file is missing.
        """
        if not tf.io.gfile.exists(path):
            raise T2TError(f"No vocabulary at {path}; run t2t-datagen first.")
        with tf.io.gfile.GFile(path, "rb") as f:
            return cls(f.read())

    @classmethod
    def load(cls, data_dir: str, problem) -> "SubwordVocab":
        """Loads `problem`'s vocabulary (a `Problem` or a registered name) from `data_dir`."""
        return cls.from_file(vocab_path(data_dir, problem))

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Strings to ids with EOS appended.

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (T)], each row ending with EOS_ID.
        """
        return self._tokenizer.tokenize(text)  # [N, (T)]

    def encode_inputs(self, text: tf.Tensor) -> tf.RaggedTensor:
        """`encode` of lines the decoder translates or scores: as written (the
        vocabulary of a model imported from tensor2tensor strips them, as t2t did)."""
        return self.encode(text)

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids to strings; stops at the first EOS and drops PAD.

        Args:
          ids: integer tensor [N, T] (or RaggedTensor [N, (T)]), e.g. decoder output.
        Returns:
          tf.string tensor [N].
        """
        return self._tokenizer.detokenize(ids_before_eos(ids, tf.int32))  # [N]

    # --- Python conveniences (eager): also `Vocabulary`'s ---

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) of each text's pieces as lists, EOS last
        (its span empty): where in the UTF-8 of the text each piece comes from."""
        ids, starts, ends = self._tokenizer.tokenize_with_offsets(
            tf.constant(list(texts), dtype=tf.string))
        return ids.to_list(), starts.to_list(), ends.to_list()
