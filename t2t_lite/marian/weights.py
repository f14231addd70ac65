"""A Marian `model.safetensors` mapped, tensor by tensor, onto t2t-lite's Transformer.

    tensors = read_tensors("opus-mt-en-de")             # name -> float32 array
    assign(model, config, tensors, source_ids, target_ids, "opus-mt-en-de")

Names are those of transformers' `MarianMTModel.state_dict()`. PyTorch's linear
weights are [out, in], t2t-lite's kernels [in, out]; t2t-lite fuses the q, k, v
projections of self-attention into one kernel and bias ([D, 3D], [3D]) and the k,
v projections of cross-attention ([D, 2D], [2D]). The embedding rows and
`final_logits_bias` are permuted into t2t-lite's ids (`t2t_lite.marian.ids`).

Every tensor of the file is accounted for: the tied aliases older files hold
(`model.encoder.embed_tokens.weight`, `model.decoder.embed_tokens.weight`,
`lm_head.weight`) must equal the table they alias and the sinusoid tables
(`*.embed_positions.weight`) must equal transformers' own, and are then dropped;
anything else the map does not use, a tensor the map needs and the file lacks,
or a weight of the model the map does not fill, is an error naming it.
"""

import json
import os
from typing import Callable, Dict, List, Tuple

import numpy as np

from t2t_lite.errors import T2TError
from t2t_lite.marian.ids import renumbered_rows
from t2t_lite.imported_weights import refuse_uncovered

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_BIN = "pytorch_model.bin"
# How far an alias of the position table may be from transformers' (float32 rounding).
POSITION_TOLERANCE = 1e-6


def read_tensors(marian_dir: str) -> Dict[str, np.ndarray]:
    """Every tensor of `marian_dir`'s model.safetensors (or its shards), as NumPy arrays.

    Raises:
      T2TError: no safetensors file (a pytorch_model.bin alone: how to convert it),
        or one safetensors cannot read.
    """
    from safetensors.numpy import load_file  # only the import needs it
    single = os.path.join(marian_dir, SAFETENSORS)
    index = os.path.join(marian_dir, SAFETENSORS_INDEX)
    if os.path.exists(single):
        files = [single]
    elif os.path.exists(index):
        try:
            with open(index, encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise T2TError(f"{index} is not a safetensors index ({e}).") from None
        files = [os.path.join(marian_dir, name) for name in shards]
    elif os.path.exists(os.path.join(marian_dir, PYTORCH_BIN)):
        raise T2TError(
            f"{marian_dir} holds only {PYTORCH_BIN} (a pickled torch file, which t2t-lite does "
            f"not read); convert it to {SAFETENSORS} first where torch and safetensors are "
            f"installed: {_convert_command(marian_dir, 'v.clone().contiguous()')}")
    else:
        raise T2TError(f"{marian_dir} has no {SAFETENSORS}: not a Hugging Face model directory?")
    tensors: Dict[str, np.ndarray] = {}
    for path in files:
        try:
            tensors.update(load_file(path))
        except Exception as e:  # safetensors raises its own error types and TypeError
            hint = (f"; NumPy has no bfloat16: save the tensors in float32 where torch is "
                    f"installed: {_convert_command(marian_dir, 'v.float()', SAFETENSORS)}"
                    if "bfloat16" in str(e) else "")
            raise T2TError(f"Cannot read {path}: {type(e).__name__}: {e}{hint}") from None
    return tensors


def _convert_command(marian_dir: str, value: str, source: str = PYTORCH_BIN) -> str:
    """A shell command that writes DIR/model.safetensors from DIR/`source` with each
    tensor v saved as `value` (aliases that share memory become equal copies, which
    the import checks and drops)."""
    src, out = os.path.join(marian_dir, source), os.path.join(marian_dir, SAFETENSORS)
    load = ("torch.load(%r, map_location='cpu')" % src if source == PYTORCH_BIN else
            "safetensors.torch.load_file(%r)" % src)
    return (f"python -c \"import torch, safetensors.torch; s = {load}; "
            f"safetensors.torch.save_file({{k: {value} for k, v in s.items()}}, {out!r})\"")


def marian_positions(rows: int, depth: int) -> np.ndarray:
    """transformers' `MarianSinusoidalPositionalEmbedding.create_weight`: float32 [rows, depth]."""
    angles = np.array([[pos / np.power(10000, 2 * (j // 2) / depth) for j in range(depth)]
                       for pos in range(rows)])  # float64, as transformers computes it
    half = depth // 2 if depth % 2 == 0 else depth // 2 + 1
    table = np.empty((rows, depth), np.float32)
    table[:, :half] = np.sin(angles[:, 0::2])
    table[:, half:] = np.cos(angles[:, 1::2])
    return table


# A target: (getter of a t2t-lite variable, Marian names, how to make its value of them).
Target = Tuple[Callable, List[str], Callable[[List[np.ndarray]], np.ndarray]]


def _transposed(arrays):  # a torch linear weight [out, in] -> kernel [in, out]
    return arrays[0].T


def _kernels(arrays):  # several linear weights -> one fused kernel [in, sum(out)]
    return np.concatenate([a.T for a in arrays], axis=1)


def _concatenated(arrays):
    return np.concatenate(arrays)


def _one(arrays):
    return arrays[0]


def _attention(targets: List[Target], getter, prefix: str, self_attention: bool) -> None:
    """The q, k, v, out projections of one Marian attention onto a `MultiHeadAttention`."""
    p = prefix + "."
    groups = [("qkv", ["q", "k", "v"])] if self_attention else [("q", ["q"]), ("kv", ["k", "v"])]
    for name, parts in groups + [("output", ["out"])]:
        weights = [f"{p}{part}_proj.weight" for part in parts]
        biases = [f"{p}{part}_proj.bias" for part in parts]
        targets.append((lambda m, n=name: getattr(getter(m), f"{n}_kernel"), weights, _kernels))
        targets.append((lambda m, n=name: getattr(getter(m), f"{n}_bias"), biases,
                        _concatenated))


def _norm(targets: List[Target], getter, prefix: str) -> None:
    targets.append((lambda m: getter(m).norm.gamma, [prefix + ".weight"], _one))
    targets.append((lambda m: getter(m).norm.beta, [prefix + ".bias"], _one))


def _feed_forward(targets: List[Target], getter, prefix: str) -> None:
    for i in (1, 2):
        targets.append((lambda m, i=i: getattr(getter(m).feed_forward, f"kernel_{i}"),
                        [f"{prefix}.fc{i}.weight"], _transposed))
        targets.append((lambda m, i=i: getattr(getter(m).feed_forward, f"bias_{i}"),
                        [f"{prefix}.fc{i}.bias"], _one))
    _norm(targets, lambda m: getter(m).feed_forward_residual, f"{prefix}.final_layer_norm")


def embedding_names(shared: bool) -> Tuple[Dict[str, List[str]], List[str]]:
    """({table: the names that may hold it, first found is used}, position-table names).

    A shared table is `model.shared.weight`, which transformers ties the encoder's,
    decoder's and output layer's to; separate ones are the encoder's and the
    decoder's, tied to the output layer. transformers loads a file holding only an
    alias (it ties to whichever is present), so any of them may carry the table.
    """
    if shared:
        tables = {"shared": ["model.shared.weight", "model.encoder.embed_tokens.weight",
                             "model.decoder.embed_tokens.weight", "lm_head.weight"]}
    else:
        tables = {"source": ["model.encoder.embed_tokens.weight"],
                  "target": ["model.decoder.embed_tokens.weight", "lm_head.weight"]}
    return tables, ["model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"]


def weight_map(model, target_ids: np.ndarray) -> List[Target]:
    """Every weight of `model` (built from `config.to_hparams`) with the Marian tensors it is
    made of, except the embedding tables (`embedding_targets`)."""
    hp = model.hparams
    targets: List[Target] = []
    for stack, count in (("encoder", hp.encoder_layers), ("decoder", hp.decoder_layers)):
        for i in range(count):
            layer = (lambda s, i: lambda m: getattr(m, f"{s}_layers")[i])(stack, i)
            prefix = f"model.{stack}.layers.{i}"
            _attention(targets, lambda m, l=layer: l(m).self_attention, f"{prefix}.self_attn",
                       True)
            _norm(targets, lambda m, l=layer: l(m).self_attention_residual,
                  f"{prefix}.self_attn_layer_norm")
            if stack == "decoder":
                _attention(targets, lambda m, l=layer: l(m).cross_attention,
                           f"{prefix}.encoder_attn", False)
                _norm(targets, lambda m, l=layer: l(m).cross_attention_residual,
                      f"{prefix}.encoder_attn_layer_norm")
            _feed_forward(targets, layer, prefix)
    targets.append((lambda m: m.logits_bias.bias, ["final_logits_bias"],
                    lambda arrays: renumbered_rows(arrays[0].reshape(-1), target_ids)))
    return targets


def embedding_targets(model, tensors: Dict[str, np.ndarray], shared: bool,
                      source_ids: np.ndarray, target_ids: np.ndarray,
                      source: str) -> Tuple[List[Target], List[str]]:
    """(targets of the embedding tables, the alias names checked and dropped).

    Raises:
      T2TError: no tensor holds a table, an alias differs from what it aliases, or a
        position table differs from transformers' sinusoids.
    """
    tables, positions = embedding_names(shared)
    renumber = {"shared": target_ids, "source": source_ids, "target": target_ids}
    variables = {"shared": lambda m: m.target_embedding.weights_matrix,
                 "source": lambda m: m.source_embedding.weights_matrix,
                 "target": lambda m: m.target_embedding.weights_matrix}
    targets: List[Target] = []
    dropped: List[str] = []
    for table, names in tables.items():
        present = [name for name in names if name in tensors]
        if not present:
            raise T2TError(f"{source} lacks the embedding table {names[0]}, which a Marian "
                           "model with this config.json has.")
        main = present[0]
        for alias in present[1:]:
            if not np.array_equal(tensors[alias], tensors[main]):
                raise T2TError(f"{source}: {alias} differs from {main}, which it is tied to "
                               "(tie_word_embeddings); refusing to choose one.")
        dropped.extend(present[1:])
        targets.append((variables[table], [main],
                        lambda arrays, ids=renumber[table]: renumbered_rows(arrays[0], ids)))
    for name in positions:
        if name in tensors:
            found = tensors[name]
            expected = marian_positions(found.shape[0], model.hparams.hidden_size)
            if (found.shape != expected.shape
                    or not np.abs(found - expected).max() <= POSITION_TOLERANCE):
                raise T2TError(f"{source}: {name} is not transformers' sinusoid table (Marian's "
                               "positions are fixed sinusoids); refusing to drop it.")
            dropped.append(name)
    return targets, dropped


def assign(model, tensors: Dict[str, np.ndarray], shared: bool, source_ids: np.ndarray,
           target_ids: np.ndarray, source: str) -> None:
    """Fills every weight of `model` from Marian's `tensors`.

    Args:
      model: the Transformer built from `config.read_config(...).hparams`.
      tensors: `read_tensors(...)`.
      shared: one embedding table (share_encoder_decoder_embeddings).
      source_ids, target_ids: Marian id -> t2t-lite id (`ids.renumbering`) of the
        source and the target vocabulary (the same array when shared).
      source: the directory, for messages.

    Raises:
      T2TError: one line naming the first tensor missing, left unused, of the wrong
        shape, an alias that differs, or a weight of `model` nothing fills.
    """
    targets, dropped = embedding_targets(model, tensors, shared, source_ids, target_ids, source)
    targets += weight_map(model, target_ids)
    refuse_uncovered(
        model, targets, tensors, dropped=dropped,
        missing=lambda name: (f"{source} lacks the tensor {name}, which a Marian model "
                              "with this config.json has."),
        unused=lambda name: (f"{source} holds the tensor {name}, which nothing in a Marian "
                             "model with this config.json uses; refusing to drop it."),
        unfilled=lambda name: (f"t2t-lite's weight {name} has no Marian tensor to be "
                               "imported from (the import's weight map lacks it)."))
    for getter, names, combine in targets:
        variable = getter(model)
        arrays = [np.asarray(tensors[name], dtype=np.float32) for name in names]
        try:
            value = combine(arrays)
        except ValueError:  # shapes that do not concatenate or renumber
            value = None
        if value is None or tuple(value.shape) != tuple(variable.shape):
            shapes = ", ".join(f"{name} {list(a.shape)}" for name, a in zip(names, arrays))
            raise T2TError(f"{source}: {shapes} do not make the {list(variable.shape)} weight "
                           "config.json's model needs (config.json disagrees with the weights).")
        variable.assign(value)
