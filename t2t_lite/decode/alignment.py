"""Word alignments from the decoder's cross-attention, in Pharaoh format ("0-0 1-2 2-1").

fairseq's `--print-alignment` and OpenNMT-tf's `with_alignments=hard`: for
each output subword, the source subword that one decoder layer's
cross-attention, averaged over its heads, weighs most. The weights come from
a teacher-forced pass of the model over the source and the chosen
translation (the decoder is causal, so position t sees exactly what the
search saw when it chose token t). The source EOS is never chosen, and the
output EOS is not aligned (fairseq's rule).

Subwords become words: the words are the whitespace-separated tokens of the
input line and of the output line (`str.split()`, what a user's tools split
on), and a subword belongs to the word its bytes fall in; a subword that is
only whitespace belongs to none, and is not aligned. Word pairs are written
once each as `source-target`, 0-based, in target order.

Which layer: the last decoder layer by default, fairseq's default
(`alignment_layer` = last, heads averaged); OpenNMT-tf takes the first head
of the last layer, and Garg et al. (2019, "Jointly Learning to Align and
Translate with Transformer Models") found the penultimate layer of a 6-layer
model aligned best. `--decode_hparams=alignment_layer=L` chooses another.
"""

import re
from typing import List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from t2t_lite.data.layout import EOS_ID, PAD_ID
from t2t_lite.errors import T2TError

_BYTE_PIECE = re.compile(r"^<0x([0-9A-F]{2})>$")
_WORD = re.compile(r"\S+")


def word_spans(text: str) -> List[Tuple[int, int]]:
    """The [start, end) byte offsets in `text`'s UTF-8 of each `text.split()` word."""
    spans = []
    for match in _WORD.finditer(text):
        start = len(text[:match.start()].encode("utf-8"))
        spans.append((start, start + len(match.group().encode("utf-8"))))
    return spans


def piece_words(starts: Sequence[int], ends: Sequence[int],
                words: Sequence[Tuple[int, int]]) -> List[Optional[int]]:
    """The word of each piece given the pieces' and the words' byte spans: the first
    word its span overlaps (an empty span: the word holding its start, as for
    the leading bytes of a character spelt in byte pieces); None for none."""
    result = []
    for start, end in zip(starts, ends):
        found = None
        for w, (word_start, word_end) in enumerate(words):
            if (start < word_end and end > word_start) if end > start else \
                    word_start <= start < word_end:
                found = w
                break
        result.append(found)
    return result


def target_piece_bytes(pieces: Sequence[str]) -> List[bytes]:
    """What each output piece contributes to the detokenized text: its characters
    with the word-boundary mark as a space, or one byte for a byte piece."""
    out = []
    for piece in pieces:
        byte = _BYTE_PIECE.match(piece)
        out.append(bytes([int(byte.group(1), 16)]) if byte else
                   piece.replace("\u2581", " ").encode("utf-8"))
    return out


def target_piece_words(pieces: Sequence[str]) -> List[Optional[int]]:
    """The output word (of the detokenized text's `split()`) of each output piece."""
    chunks = target_piece_bytes(pieces)
    data = b"".join(chunks)
    ends = list(np.cumsum([len(c) for c in chunks]))
    starts = [e - len(c) for e, c in zip(ends, chunks)]
    try:
        words = word_spans(data.decode("utf-8"))
    except UnicodeDecodeError:  # a model may spell invalid UTF-8 in byte pieces
        words = [m.span() for m in re.finditer(rb"\S+", data)]
    return piece_words(starts, ends, words)


def hard_alignment(attention: np.ndarray, source_words: Sequence[Optional[int]],
                   target_words: Sequence[Optional[int]]) -> List[Tuple[int, int]]:
    """Word pairs (source, target) from one sentence's attention.

    Args:
      attention: float [T, S]: output piece t's weights over the source pieces
        (S may include the source EOS and padding, T the output EOS and padding:
        only the first len(source_words) and len(target_words) count).
      source_words, target_words: the word of each source and output piece
        (EOS excluded), None for a piece in no word.

    Returns:
      Sorted by target word, then source word; each pair once.
    """
    in_words = [s for s, word in enumerate(source_words) if word is not None]
    if not in_words:
        return []
    # Only pieces of a word compete: whitespace pieces, like the EOS, are never chosen.
    weights = np.asarray(attention)[:len(target_words), in_words]
    pairs = set()
    for t, target_word in enumerate(target_words):
        if target_word is not None:
            pairs.add((source_words[in_words[int(np.argmax(weights[t]))]], target_word))
    return sorted(pairs, key=lambda p: (p[1], p[0]))


def pharaoh(pairs: Sequence[Tuple[int, int]]) -> str:
    """"0-0 1-2 2-1" for [(0, 0), (1, 2), (2, 1)]."""
    return " ".join(f"{s}-{t}" for s, t in pairs)


def until_eos(row: Sequence[int]) -> List[int]:
    """The output ids before the first EOS (PAD dropped)."""
    out = []
    for token in row:
        if token == EOS_ID:
            break
        if token != PAD_ID:
            out.append(int(token))
    return out


def align(model, vocab, inputs: tf.Tensor, outputs: Sequence[Sequence[int]],
          sources: Sequence[str], layer: int = -1, unit: str = "word") -> List[str]:
    """Pharaoh word alignments of a batch of (source line, output ids) pairs.

    Args:
      model: the `Transformer` (an ensemble's first model).
      inputs: int32 [B, S], the search's inputs (EOS-terminated, maybe truncated).
      outputs: B output id sequences (read up to their EOS).
      sources: the B input lines `inputs` were encoded from.
      layer: the decoder layer whose cross-attention is used (negative: from the end).
      unit: "word", or "piece" for the alignment of the subwords themselves
        (source pieces without EOS, output pieces without EOS, 0-based).

    Raises:
      T2TError: `layer` out of range.
    """
    layers = len(model.decoder_layers)
    if not -layers <= layer < layers:
        raise T2TError(f"alignment_layer must be in {-layers}..{layers - 1} for this model's "
                       f"{layers} decoder layers, got {layer}.")
    rows = [until_eos(row) for row in outputs]
    longest = max([len(r) for r in rows] + [0]) + 1
    targets = tf.constant([r + [EOS_ID] + [PAD_ID] * (longest - len(r) - 1) for r in rows],
                          tf.int32)                                        # [B, T]
    cross = model.attention_weights(inputs, targets)["cross"][:, layer]   # [B, H, T, S]
    cross = tf.reduce_mean(tf.cast(cross, tf.float32), axis=1).numpy()   # [B, T, S]
    _, starts, ends = vocab.tokenize_with_offsets(list(sources))
    kept = int(inputs.shape[1]) - 1  # source pieces the model saw, EOS excluded
    result = []
    for b, (row, source) in enumerate(zip(rows, sources)):
        source_pieces = min(len(starts[b]) - 1, kept)
        if unit == "piece":
            source_words, target_words = list(range(source_pieces)), list(range(len(row)))
        else:
            source_words = piece_words(starts[b][:source_pieces], ends[b][:source_pieces],
                                       word_spans(source))
            target_words = target_piece_words(vocab.pieces(row))
        result.append(pharaoh(hard_alignment(cross[b], source_words, target_words)))
    return result
