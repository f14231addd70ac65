"""Pictures of what a model attends to (the paper's appendix, Figures 3-5).

    maps = attention_maps(model, vocab, "A dog runs .")          # target: its own translation
    draw_heatmaps(maps, "cross", layer=-1, heads=None, path="attention.png")
    save_npz(maps, "attention.npz")

The weights come from the model itself (`Transformer.attention_weights`, the
softmax of every layer and head in one teacher-forced pass), not from a second
implementation of attention. Labels are the subword pieces: source pieces (and
EOS) for encoder keys and queries; for the decoder, each query row is labelled
with the piece it predicts and each self-attention key with the decoder input
at that position (the start symbol, then the target shifted right).
"""

import dataclasses
from typing import Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError

KINDS = ("encoder", "decoder", "cross")
MAX_PIECES = 60  # longer inputs or outputs are refused: the labels would be unreadable
START = "<s>"


@dataclasses.dataclass
class AttentionMaps:
    """Weights of one sentence pair with their token labels.

    weights: kind -> float32 [layers, heads, queries, keys].
    source, target: the pieces of the source (with EOS) and target (with EOS).
    """

    weights: Dict[str, np.ndarray]
    source: List[str]
    target: List[str]

    def labels(self, kind: str):
        """(query labels, key labels) of `kind`."""
        if kind == "encoder":
            return self.source, self.source
        if kind == "cross":
            return self.target, self.source
        return self.target, [START] + self.target[:-1]


def _pieces(vocab, ids: Sequence[int], source_side: bool = False) -> List[str]:
    """The labels of `ids`: the vocabulary's pieces (its source pieces for the source,
    where they differ: an imported Marian model with separate vocabularies)."""
    return vocab.source_pieces(ids) if source_side else vocab.pieces(ids)


def attention_maps(model, vocab, source: str, target: Optional[str] = None,
                   search: SearchParams = SearchParams()) -> AttentionMaps:
    """Runs `model` on `source` and `target` (default: its own translation with
    `search`) and returns every layer's and head's attention weights.

    Raises:
      T2TError: an empty source, or a source or target of more than MAX_PIECES pieces.
    """
    if not source.strip():
        raise T2TError("The source sentence is empty.")
    translator = Translator(Search(model, search), vocab)
    if target is None:
        target = translator.translate([source])[0]
    ids = {}
    for name, text in (("source", source), ("target", target)):
        encode = vocab.encode_inputs if name == "source" else vocab.encode_targets
        row = encode(tf.constant([text])).to_list()[0]  # pieces + EOS
        if len(row) > MAX_PIECES:
            raise T2TError(f"The {name} has {len(row)} pieces (EOS included); pictures are "
                           f"drawn for at most {MAX_PIECES}, or the labels become unreadable.")
        ids[name] = row
    weights = model.attention_weights(tf.constant([ids["source"]], tf.int32),
                                      tf.constant([ids["target"]], tf.int32))
    return AttentionMaps({kind: w[0].numpy() for kind, w in weights.items()},
                         _pieces(vocab, ids["source"], source_side=True),
                         _pieces(vocab, ids["target"]))


def save_npz(maps: AttentionMaps, path: str) -> None:
    """Writes the raw weights (`encoder`, `decoder`, `cross`: [layers, heads, queries,
    keys]) and the pieces (`source`, `target`) for notebooks."""
    np.savez(path, **maps.weights, source=np.array(maps.source), target=np.array(maps.target))


def _select(maps: AttentionMaps, kind: str, layer: int, heads: Optional[List[int]]):
    if kind not in KINDS:
        raise T2TError(f"Unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}.")
    weights = maps.weights[kind]  # [L, H, Q, K]
    layers, num_heads = weights.shape[:2]
    if not -layers <= layer < layers:
        raise T2TError(f"--layer must be in 0..{layers - 1} (or negative from the end), "
                       f"got {layer}.")
    heads = list(range(num_heads)) if heads is None else heads
    bad = [h for h in heads if not 0 <= h < num_heads]
    if bad:
        raise T2TError(f"--head must be in 0..{num_heads - 1} or 'all', got {bad[0]}.")
    return weights[layer], heads


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise T2TError("Drawing needs matplotlib: pip install -e '.[plot]' "
                       "(or write the weights with --npz).") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_heatmaps(maps: AttentionMaps, kind: str, layer: int, heads: Optional[List[int]],
                  path: str) -> None:
    """One token-by-token heat map per head (queries down, keys across) into a PNG."""
    plt = _pyplot()
    weights, heads = _select(maps, kind, layer, heads)
    queries, keys = maps.labels(kind)
    cols = min(len(heads), 4)
    rows = -(-len(heads) // cols)
    size = 0.22 * max(len(queries), len(keys)) + 1.5
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
    for ax, head in zip(axes.flat, heads):
        ax.imshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0, aspect="equal")
        ax.set_xticks(range(len(keys)), keys, rotation=90, fontsize=7)
        ax.set_yticks(range(len(queries)), queries, fontsize=7)
        ax.set_title(f"head {head}", fontsize=9)
    for ax in list(axes.flat)[len(heads):]:
        ax.axis("off")
    layer_number = layer % maps.weights[kind].shape[0]
    fig.suptitle(f"{kind} attention, layer {layer_number}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_lines(maps: AttentionMaps, kind: str, layer: int, heads: Optional[List[int]],
               path: str) -> None:
    """The paper's style: queries on the left, keys on the right, a line from each
    query to each key whose opacity and width follow the weight, one colour per head."""
    plt = _pyplot()
    weights, heads = _select(maps, kind, layer, heads)
    queries, keys = maps.labels(kind)
    n = max(len(queries), len(keys))
    fig, ax = plt.subplots(figsize=(5, 0.28 * n + 1))
    colours = plt.get_cmap("tab10")
    for i, head in enumerate(heads):
        for q in range(len(queries)):
            for k in range(len(keys)):
                w = float(weights[head, q, k])
                if w > 0.02:
                    ax.plot([0, 1], [q, k], color=colours(i % 10), alpha=min(1.0, w),
                            linewidth=3 * w)
    for q, label in enumerate(queries):
        ax.text(-0.02, q, label, ha="right", va="center", fontsize=8)
    for k, label in enumerate(keys):
        ax.text(1.02, k, label, ha="left", va="center", fontsize=8)
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(n, -1)
    ax.axis("off")
    layer_number = layer % maps.weights[kind].shape[0]
    ax.set_title(f"{kind} attention, layer {layer_number}, heads {', '.join(map(str, heads))}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
