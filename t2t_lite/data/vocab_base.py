"""`Vocabulary`: what every vocabulary kind of t2t-lite offers, and the defaults of one side.

The kinds: `vocab.SubwordVocab` (SentencePiece, learned by datagen),
`t2t_subwords.T2TSubwordVocab` and `t2t_text_encoders.T2TByteVocab` /
`T2TTokenVocab` (tensor2tensor's vocabularies) and `t2t_lite.marian.vocabulary.
MarianVocab` (an imported Marian model's). Datagen, the decoder, the scorer, the
exporter, the server and the attention pictures take any of them through this
interface and never ask which kind they hold.

Text becomes ids in graph (TensorFlow and tensorflow-text ops only), so the same
code runs eagerly, inside `tf.function` and inside an exported SavedModel; a
`tf.Module` holding a vocabulary carries its tables and models into the SavedModel.

Most kinds have one side: sources and targets share one table. A vocabulary with a
source side of its own (an imported Marian model's) overrides the methods marked
"one side" below: `encode_sources`, `encode_targets`, `check_inputs`,
`source_pieces` and `language_tokens`.
"""

from typing import List, Optional, Sequence, Union

import tensorflow as tf

from t2t_lite.data.layout import EOS_ID, PAD_ID


class Vocabulary(tf.Module):
    """Strings <-> ids of one model, inside or outside tf.function.

    Attributes:
      model_proto: the vocabulary file's bytes as read: what datagen hashes and
        copies and a model directory keeps.
      vocab_size: number of (target) ids, 0 .. vocab_size - 1: the model's outputs.
      whole_token_ids: ids of the pieces kept whole (a parsing problem's tree
        tokens); empty for every kind but SentencePiece's.
      pad_id, eos_id: 0 and 1 (`t2t_lite.data.layout`); every encoded row ends with
        EOS, and decoding stops at the first EOS and drops PAD.
      unk_id: the id of what the vocabulary cannot spell, or None where every text
        has ids of its own.
      language_tokens: the tokens a source line must start with (the target
        languages of a multilingual Marian model); empty for one target language.
    """

    pad_id = PAD_ID
    eos_id = EOS_ID
    unk_id: Optional[int] = None
    language_tokens: Sequence[str] = ()  # one side: no language to choose

    def __init__(self, model_proto: bytes, name: str):
        """Keeps the file's bytes; each kind reads them into its tables."""
        super().__init__(name=name)
        self.model_proto = bytes(model_proto)

    # --- In-graph, what each kind computes ---

    def encode(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Target strings (and training data) to ids, EOS appended.

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (T)], each row ending with EOS_ID.
        """
        raise NotImplementedError

    def encode_inputs(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Lines the decoder translates (and the exporter's signatures take) to ids, EOS
        appended: as `encode`, or as the kind's own program fed them to its model
        (tensor2tensor's vocabularies strip the whitespace at both ends).

        Args:
          text: tf.string tensor [N].
        Returns:
          int32 RaggedTensor [N, (S)], each row ending with EOS_ID.
        """
        raise NotImplementedError

    def decode(self, ids: Union[tf.Tensor, tf.RaggedTensor]) -> tf.Tensor:
        """Ids to strings; stops at the first EOS and drops PAD.

        Args:
          ids: integer tensor [N, T] (or RaggedTensor [N, (T)]), e.g. decoder output.
        Returns:
          tf.string tensor [N].
        """
        raise NotImplementedError

    # --- One side: a vocabulary with a source side of its own overrides these ---

    def encode_sources(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Source lines of training data (t2t-datagen): `encode`, as the targets.
        tf.string [N] -> int32 ragged [N, (S)], each row ending with EOS_ID."""
        return self.encode(text)

    def encode_targets(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Target lines a program scores or pictures (not training data):
        `encode_inputs`, as the decoder reads a line. tf.string [N] -> int32 ragged
        [N, (T)], each row ending with EOS_ID."""
        return self.encode_inputs(text)

    def check_inputs(self, texts: Sequence[str], first_line: int = 1,
                     unit: str = "line") -> None:
        """Refuses, in one line, source lines this vocabulary cannot translate: none here.

        Args:
          texts: the input lines.
          first_line: the line number of `texts[0]`, for the message.
          unit: what the number counts ("line"; datagen: "pair").
        Raises:
          T2TError: (a kind that checks) one line naming the first refused line.
        """

    def source_pieces(self, ids: Optional[Sequence[int]] = None) -> List[str]:
        """The source pieces of `ids` (default: every id, in id order): `pieces`."""
        return self.pieces(ids)

    # --- Python conveniences (eager) ---

    def pieces(self, ids: Optional[Sequence[int]] = None) -> List[str]:
        """The piece strings of `ids` (default: every id, in id order): the kind's
        `_pieces` (index = id)."""
        table = self._pieces
        return list(table) if ids is None else [table[i] for i in ids]

    def encode_texts(self, texts: Sequence[str]) -> List[List[int]]:
        """Encodes Python strings in eager mode (`encode`); each id list ends with EOS."""
        if not texts:
            return []
        return self.encode(tf.constant(list(texts), dtype=tf.string)).to_list()

    def decode_ids(self, ids: Sequence[Sequence[int]]) -> List[str]:
        """Decodes lists of ids in eager mode (stops at EOS, drops PAD)."""
        if not ids:
            return []
        ragged = tf.ragged.constant([list(row) for row in ids], dtype=tf.int32)
        return [s.decode("utf-8") for s in self.decode(ragged).numpy()]

    def tokenize_with_offsets(self, texts: Sequence[str]):
        """(ids, byte starts, byte ends) of each source text's pieces as lists, EOS last
        (its span empty): where in the UTF-8 of the text each piece comes from."""
        raise NotImplementedError
