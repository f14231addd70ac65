"""tensor2tensor's checkpoint variable names and where each goes in t2t-lite's Transformer.

t2t's TF 1.x releases wrote names such as

    transformer/body/encoder/layer_0/self_attention/multihead_attention/q/kernel
    transformer/symbol_modality_8079_128/shared/weights_0 ... weights_15

t2t-trainer running under TF 2.x's compat layer wrote some of the same
variables as `transformer/parallel_0_5/transformer/transformer/body/...`, with
`layer_0_1` for `layer_0` (`canonical_name` maps both to the first style).
Optimizer slots and bookkeeping variables (global_step, losses_avg/,
train_stats/, Adam's accumulators) are not model weights (`is_model_variable`).

`weight_map` lists, for a model's hparams, every t2t name it needs and the
t2t-lite weight each fills, with how: t2t keeps separate q/k/v kernels where
t2t-lite fuses them ([D, 3D] self-attention, [D, 2D] cross-attention keys and
values), and splits embeddings into `symbol_modality_num_shards` row blocks.
"""

import re
from typing import Callable, Dict, List, Tuple

import numpy as np

from t2t_lite.errors import T2TError
from t2t_lite.imported_weights import Target, refuse_uncovered

_BOOKKEEPING = ("training/", "losses_avg/", "train_stats/")
_BOOKKEEPING_NAMES = {"global_step", "beta1_power", "beta2_power"}
# Slots TF 1.x optimizers add under each variable's name.
_SLOT = re.compile(r"/(Adam|Adam_\d+|LazyAdam|LazyAdam_\d+|Momentum|Adagrad|"
                   r"adafactor_v|adafactor_vr|adafactor_vc|Adafactor\w*)$")
_COMPAT_SCOPE = re.compile(r"^transformer/parallel_\d+_\d+/transformer/transformer/")
_COMPAT_LAYER = re.compile(r"/layer_(\d+)_\d+/")


def is_model_variable(name: str) -> bool:
    """False for optimizer slots and t2t's bookkeeping variables."""
    return not (name.startswith(_BOOKKEEPING) or name in _BOOKKEEPING_NAMES
                or _SLOT.search(name))


def canonical_name(name: str) -> str:
    """A variable name of either t2t style in the TF 1.x style."""
    name = _COMPAT_SCOPE.sub("transformer/", name)
    return _COMPAT_LAYER.sub(r"/layer_\1/", name)


def naming_style(names) -> str:
    """"tf1" or "tf2" (t2t-trainer under TF 2.x's compat layer), from the names present."""
    return "tf2" if any(_COMPAT_SCOPE.match(n) or _COMPAT_LAYER.search(n) for n in names) else "tf1"


# A target (`imported_weights.Target`): (getter of the t2t-lite variable from the model,
# t2t names, how to combine them).


def _one(arrays):
    return arrays[0]


def _columns(arrays):
    return np.concatenate(arrays, axis=1)


def _rows(arrays):
    return np.concatenate(arrays, axis=0)


def shard_names(scope: str, num_shards: int) -> List[str]:
    return [f"{scope}/weights_{i}" for i in range(num_shards)]


def weight_map(model, t2t_values: Dict, vocab_size: int) -> List[Target]:
    """Every t2t-lite weight of `model` (built from `t2t_hparams.to_hparams`) with the t2t
    variables it is made of.

    Args:
      model: the t2t-lite `Transformer`.
      t2t_values: t2t's hparams.json (for `symbol_modality_num_shards`).
      vocab_size: the modality's vocabulary size (in its scope name).
    """
    hp = model.hparams
    norm_scope = "layer_prepostprocess" if hp.norm_placement == "pre" else "layer_postprocess"
    body = "transformer/body"
    targets: List[Target] = []

    def norm(residual_getter, scope):
        prefix = f"{scope}/{norm_scope}/layer_norm/layer_norm_"
        targets.append((lambda m: residual_getter(m).norm.gamma, [prefix + "scale"], _one))
        targets.append((lambda m: residual_getter(m).norm.beta, [prefix + "bias"], _one))

    def attention(getter, scope, fused_qkv):
        a = f"{scope}/multihead_attention/"
        if fused_qkv:
            targets.append((lambda m: getter(m).qkv_kernel,
                            [a + "q/kernel", a + "k/kernel", a + "v/kernel"], _columns))
        else:
            targets.append((lambda m: getter(m).q_kernel, [a + "q/kernel"], _one))
            targets.append((lambda m: getter(m).kv_kernel, [a + "k/kernel", a + "v/kernel"],
                            _columns))
        targets.append((lambda m: getter(m).output_kernel, [a + "output_transform/kernel"], _one))

    def feed_forward(getter, scope):
        f = f"{scope}/ffn/"
        targets.append((lambda m: getter(m).feed_forward.kernel_1, [f + "conv1/kernel"], _one))
        targets.append((lambda m: getter(m).feed_forward.bias_1, [f + "conv1/bias"], _one))
        targets.append((lambda m: getter(m).feed_forward.kernel_2, [f + "conv2/kernel"], _one))
        targets.append((lambda m: getter(m).feed_forward.bias_2, [f + "conv2/bias"], _one))
        norm(lambda m: getter(m).feed_forward_residual, f"{scope}/ffn")

    for i in range(hp.encoder_layers):
        layer = (lambda i: lambda m: m.encoder_layers[i])(i)
        scope = f"{body}/encoder/layer_{i}"
        attention(lambda m, layer=layer: layer(m).self_attention,
                  f"{scope}/self_attention", True)
        norm(lambda m, layer=layer: layer(m).self_attention_residual, f"{scope}/self_attention")
        feed_forward(layer, scope)
    for i in range(hp.decoder_layers):
        layer = (lambda i: lambda m: m.decoder_layers[i])(i)
        scope = f"{body}/decoder/layer_{i}"
        attention(lambda m, layer=layer: layer(m).self_attention,
                  f"{scope}/self_attention", True)
        norm(lambda m, layer=layer: layer(m).self_attention_residual, f"{scope}/self_attention")
        attention(lambda m, layer=layer: layer(m).cross_attention,
                  f"{scope}/encdec_attention", False)
        norm(lambda m, layer=layer: layer(m).cross_attention_residual,
             f"{scope}/encdec_attention")
        feed_forward(layer, scope)
    if hp.norm_placement == "pre":  # t2t's final layer_preprocess of each stack
        for stack in ("encoder", "decoder"):
            prefix = f"{body}/{stack}/layer_prepostprocess/layer_norm/layer_norm_"
            targets.append((lambda m, s=stack: getattr(m, f"{s}_norm").gamma,
                            [prefix + "scale"], _one))
            targets.append((lambda m, s=stack: getattr(m, f"{s}_norm").beta,
                            [prefix + "bias"], _one))
    if hp.use_target_space_embedding:
        targets.append((lambda m: m.target_space.table,
                        [f"{body}/target_space_embedding/kernel"], _one))

    shards = int(t2t_values.get("symbol_modality_num_shards") or 1)
    modality = f"transformer/symbol_modality_{vocab_size}_{hp.hidden_size}"
    # Scopes of modalities.symbol_bottom / symbol_targets_bottom / symbol_top.
    if hp.shared_embedding_and_softmax_weights:
        embeddings = [(lambda m: m.target_embedding.weights_matrix, "shared")]
    elif hp.shared_embedding:
        embeddings = [(lambda m: m.target_embedding.weights_matrix, "shared"),
                      (lambda m: m.softmax.weights_matrix, "softmax")]
    else:
        embeddings = [(lambda m: m.source_embedding.weights_matrix, "input_emb"),
                      (lambda m: m.target_embedding.weights_matrix, "target_emb"),
                      (lambda m: m.softmax.weights_matrix, "softmax")]
    for getter, scope in embeddings:
        targets.append((getter, shard_names(f"{modality}/{scope}", shards), _rows))
    return targets


def assign(model, targets: List[Target], read: Callable[[str], np.ndarray],
           available: Dict[str, List[int]], source: str) -> None:
    """Fills `model`'s weights from t2t variables.

    Args:
      targets: `weight_map(...)`.
      read: canonical t2t name -> its value.
      available: canonical t2t name -> shape, every model variable of the checkpoint.
      source: the checkpoint, for messages.

    Raises:
      T2TError: a variable the model needs is missing, one the checkpoint holds
        is used by nothing, a weight of `model` is filled by no target (it would
        keep its random initial value), or shapes differ; each naming the variable.
    """
    refuse_uncovered(
        model, targets, available,
        missing=lambda name: (f"{source} lacks the variable {name}, which a t2t Transformer "
                              "with these hparams has: another model or hparams than "
                              "hparams.json says?"),
        unused=lambda name: (f"{source} holds the model variable {name}, which nothing in "
                             "a t2t Transformer with these hparams uses; refusing to drop it."),
        unfilled=lambda name: (f"t2t-lite's weight {name} has no t2t variable to be "
                               "imported from and would keep its random initial value; "
                               "refusing to import (t2t-import's weight map lacks it)."))
    for getter, names, combine in targets:
        variable = getter(model)
        value = combine([np.asarray(read(name), dtype=np.float32) for name in names])
        if tuple(value.shape) != tuple(variable.shape):
            raise T2TError(f"{source}: {', '.join(names)} make a {list(value.shape)} weight where "
                           f"the model needs {list(variable.shape)} (hparams.json disagrees with "
                           "the checkpoint).")
        variable.assign(value)


def checkpoint_variables(reader) -> Tuple[Dict[str, str], Dict[str, List[int]]]:
    """(canonical name -> name in the checkpoint, canonical name -> shape) of the model
    variables a `tf.train.load_checkpoint` reader holds.

    Raises:
      T2TError: two checkpoint names map to one canonical name.
    """
    original: Dict[str, str] = {}
    shapes: Dict[str, List[int]] = {}
    for name, shape in reader.get_variable_to_shape_map().items():
        if not is_model_variable(name):
            continue
        canonical = canonical_name(name)
        if canonical in original:
            raise T2TError(f"The checkpoint holds both {original[canonical]} and {name}, "
                           "which are one variable of t2t's model.")
        original[canonical] = name
        shapes[canonical] = list(shape)
    return original, shapes


