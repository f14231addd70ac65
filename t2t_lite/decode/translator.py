"""Text in, text out over a compiled search.

    translator = Translator(Search(model, SearchParams(beam_size=4)), vocab)
    translator.translate(["a sentence", ...])  # -> ["eine Übersetzung", ...]

The search (`t2t_lite.decode.search`) is one compiled `tf.function` over ids;
this wrapper only turns strings into padded ids and ids back into strings.
"""

from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from t2t_lite.data.layout import EOS_ID
from t2t_lite.decode.search import Search
from t2t_lite.tf_api_lock import TF_API_LOCK


def truncate(ragged: tf.RaggedTensor, max_length: Optional[int]) -> tf.RaggedTensor:
    """Encoded rows [B, (S)] (each ending with EOS), each at most `max_length` long.

    A row longer than `max_length` keeps its first `max_length - 1` subwords and
    the EOS. The EOS is cut first, so rows that were short enough do not get a
    second one. `max_length` None: no row is truncated. Runs eagerly or in a
    graph (the SavedModel's signatures).
    """
    if max_length is None:
        return ragged
    head = ragged[:, :-1][:, :max_length - 1]
    return tf.concat([head, tf.fill([head.nrows(), 1], EOS_ID)], axis=1)


def truncate_and_pad(ragged: tf.RaggedTensor, max_length: Optional[int]) -> tf.Tensor:
    """Encoded rows [B, (S)] (each ending with EOS) -> int32 [B, S] model inputs,
    truncated to `max_length` (`truncate`)."""
    return truncate(ragged, max_length).to_tensor()


class Translator:
    """A `Search` and a vocabulary -> translations of strings.

    Args:
      search: the compiled search (its models, parameters, constraint).
      vocab: the models' `SubwordVocab`.
      pad_rows: under XLA, pad each batch to this many rows so few shapes
        compile (the decoder's batch size); 0: no row padding.
    """

    def __init__(self, search: Search, vocab, pad_rows: int = 0):
        self.search = search
        self.vocab = vocab
        self.pad_rows = pad_rows
        self.max_input_length = search.max_input_length

    def encode(self, texts: Sequence[str]) -> tf.Tensor:
        """Strings -> int32 [B, S] ids, EOS-terminated, truncated to max_input_length
        (None: not truncated)."""
        with TF_API_LOCK:
            return self.pad(self.vocab.encode_inputs(tf.constant(list(texts), dtype=tf.string)))

    def pad(self, ragged: tf.RaggedTensor) -> tf.Tensor:
        """Encoded rows [B, (S)] -> int32 [B, S] model inputs (`truncate_and_pad`)."""
        return truncate_and_pad(ragged, self.max_input_length)

    def detokenize(self, ids: tf.Tensor) -> List[str]:
        """int [B, T] -> strings (stops at EOS)."""
        with TF_API_LOCK:
            return [s.decode("utf-8") for s in self.vocab.decode(ids).numpy()]

    def translate_ids(self, inputs: tf.Tensor) -> List[str]:
        """Best translation of each row of `inputs` (int32 [B, S])."""
        ids, _ = self.search.run(inputs, self.pad_rows)
        with TF_API_LOCK:
            return self.detokenize(ids[:, 0])

    def nbest_ids(self, inputs: tf.Tensor) -> Tuple[List[List[str]], List[List[float]]]:
        """All beams of each row, best first, with their scores."""
        texts, scores, _ = self.nbest(inputs)
        return texts, scores

    def nbest(self, inputs: tf.Tensor):
        """(texts [B][beam], scores [B][beam], ids int [B, beam, T]) of all beams, best first."""
        return self.nbest_of(*self.search.run(inputs, self.pad_rows))

    def nbest_of(self, ids: tf.Tensor, scores: tf.Tensor):
        """`nbest` of the search's ids [B, beam, T] and scores [B, beam]."""
        with TF_API_LOCK:
            beams = ids.shape[1]
            texts = self.detokenize(tf.reshape(ids, [-1, tf.shape(ids)[2]]))
            return ([texts[i * beams:(i + 1) * beams] for i in range(len(texts) // beams)],
                    scores.numpy().tolist(), ids.numpy())

    def translate(self, texts: Sequence[str]) -> List[str]:
        """Translates one batch of sentences; empty strings give empty strings."""
        texts = list(texts)
        if not texts:
            return []
        out = self.translate_ids(self.encode(texts))
        return [o if t.strip() else "" for t, o in zip(texts, out)]
