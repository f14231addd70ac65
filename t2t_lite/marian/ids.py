"""A Marian vocabulary's ids renumbered to t2t-lite's (`t2t_lite.data.layout`).

Marian numbers `</s>` 0, `<unk>` 1 and `<pad>` last (OPUS-MT; a config may say
otherwise). t2t-lite's model, searches, exporters and server take `PAD_ID = 0`,
`EOS_ID = 1` and `UNK_ID = 2` as fixed, so an import renumbers once, here,
instead of every program learning per-model ids: `<pad>` becomes 0, `</s>` 1,
`<unk>` 2, and every other id keeps its order from 3 on. The embedding rows,
the logits bias and the piece table are permuted with the same map, so the
imported model computes exactly what the Marian one did.
"""

from typing import Dict, List

import numpy as np

from t2t_lite.data.layout import EOS_ID, PAD_ID, UNK_ID
from t2t_lite.errors import T2TError


def renumbering(vocab_size: int, pad_id: int, eos_id: int, unk_id: int) -> np.ndarray:
    """The new id of each Marian id: int64 [vocab_size], a permutation.

    >>> renumbering(5, pad_id=4, eos_id=0, unk_id=1).tolist()
    [1, 2, 3, 4, 0]
    """
    specials = {"pad": pad_id, "eos": eos_id, "unk": unk_id}
    for name, value in specials.items():
        if not 0 <= value < vocab_size:
            raise T2TError(f"The {name} id {value} is outside the vocabulary of {vocab_size} ids.")
    if len(set(specials.values())) != 3:
        raise T2TError(f"The pad, eos and unk ids must differ: {specials}.")
    new = np.empty(vocab_size, np.int64)
    new[pad_id], new[eos_id], new[unk_id] = PAD_ID, EOS_ID, UNK_ID
    others = [i for i in range(vocab_size) if i not in specials.values()]
    new[others] = np.arange(3, vocab_size)
    return new


def renumbered_rows(table: np.ndarray, new_ids: np.ndarray) -> np.ndarray:
    """`table` [V, ...] indexed by Marian id -> the same rows indexed by new id."""
    out = np.empty_like(table)
    out[new_ids] = table
    return out


def renumbered_pieces(piece_to_id: Dict[str, int], new_ids: np.ndarray) -> List[str]:
    """vocab.json's {piece: Marian id} -> the pieces in new-id order (index = new id)."""
    pieces = [None] * len(new_ids)
    for piece, old in piece_to_id.items():
        if not 0 <= old < len(new_ids):
            raise T2TError(f"Piece {piece!r} has id {old}, outside the vocabulary of "
                           f"{len(new_ids)} ids.")
        pieces[new_ids[old]] = piece
    missing = [i for i, p in enumerate(pieces) if p is None]
    if missing:
        raise T2TError(f"The vocabulary has no piece for {len(missing)} ids "
                       f"(first: new id {missing[0]}).")
    return pieces
