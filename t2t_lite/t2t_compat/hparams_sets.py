"""t2t hparams sets of a user directory -> t2t-lite HParams, through t2t-import's mapping.

A set registered with t2t's `register_hparams` returns t2t's HParams
(`hparam.HParams`, built from a Transformer set of `transformer`). t2t-lite
registers in its place a function that calls it and maps the values with
`t2t_lite.t2t_compat.t2t_hparams.to_hparams`, the mapping that imports a t2t
run's hparams.json: t2t's meaning for every field it knows (its timing
signal, its target-space embedding, its layer-norm placements), a one-line
refusal for a value t2t-lite's Transformer does not compute, and one line
naming the changed hparams t2t-lite has no setting for (not used).
"""

import dataclasses
import functools
from typing import Any, Callable, Dict, FrozenSet

from t2t_lite import registry
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams as LiteHParams
from t2t_lite.t2t_compat import locate
from t2t_lite.t2t_compat.hparam import HParams
from t2t_lite.t2t_compat import t2t_hparams

# t2t's defaults for the settings t2t-import refuses other values of (`REFUSED`).
_T2T_DEFAULTS = {
    "ffn_layer": "dense_relu_dense", "self_attention_type": "dot_product", "pos": "timing",
    "max_relative_position": 0, "norm_type": "layer", "multiply_embedding_mode": "sqrt_depth",
    "vocab_divisor": 1, "attention_variables_3d": False, "proximity_bias": False,
    "unidirectional_encoder": False, "causal_decoder_self_attention": True,
    "hard_attention_k": 0, "num_area_layers": 0, "add_relative_to_values": False,
    "prepend_mode": "none", "symbol_modality_skip_top": False,
}
# t2t 1.15's transformer_base values of settings t2t-lite has no equivalent of
# (t2t_lite/hparams/transformer_t2t.py lists why): present so that `add_hparam`
# of one is refused as in t2t, and a user's change of one is said not to be used.
_T2T_UNMAPPED = {
    "optimizer": "adam", "weight_decay": 0.0, "initializer": "uniform_unit_scaling",
    "symbol_modality_num_shards": 16, "use_pad_remover": True, "num_sampled_classes": 0,
    "daisy_chain_variables": True, "min_length": 0, "min_length_bucket": 8,
    "length_bucket_step": 1.1, "max_input_seq_length": 0, "max_target_seq_length": 0,
    "symbol_dropout": 0.0, "factored_logits": False, "learning_rate_minimum": None,
    "learning_rate_cosine_cycle_steps": 250000, "optimizer_multistep_accumulate_steps": 0,
    "sampling_method": "argmax", "sampling_temp": 1.0,
}


class _Reads(dict):
    """A dict that records which keys are asked for."""

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


@functools.lru_cache(maxsize=1)
def mapped_names() -> FrozenSet[str]:
    """The t2t hparams `to_hparams` reads (asked of it, not listed twice)."""
    values = _Reads()
    t2t_hparams.to_hparams(t2t_hparams.T2TRun("", "transformer", "", values))
    return frozenset(values.asked)


def t2t_values(lite: LiteHParams) -> Dict[str, Any]:
    """A t2t-lite set of t2t's values (`t2t_lite/hparams/transformer_t2t.py`) in t2t's
    names: what t2t's own set of that name holds for every field the mapping reads."""
    fields = dataclasses.asdict(lite)
    values = {name: fields[name] for name in mapped_names() if name in fields}
    values.update(_T2T_DEFAULTS)
    values.update(_T2T_UNMAPPED)
    values["norm_epsilon"] = lite.layer_norm_epsilon
    values["layer_preprocess_sequence"] = lite.layer_preprocess_sequence or "none"
    # t2t's Transformer has the target-space embedding (t2t-lite's own sets do not).
    values["use_target_space_embedding"] = True
    return values


def to_lite(hparams: HParams, name: str) -> LiteHParams:
    """The t2t-lite HParams of the t2t set `name` returning `hparams`.

    Raises:
      T2TError: not built from a Transformer set t2t-lite knows, or a value the
        mapping refuses.
    """
    if not isinstance(hparams, HParams) or hparams.base is None:
        raise T2TError(f"hparams set {name!r} does not return t2t HParams built from a "
                       "Transformer set t2t-lite knows (transformer.transformer_base(), "
                       "transformer_tiny(), ...).")
    values = hparams.values()
    unused = sorted(k for k in hparams.changed()
                    if k not in mapped_names() and k not in t2t_hparams.REFUSED)
    run = t2t_hparams.T2TRun("", "transformer", name, values)
    try:
        lite = t2t_hparams.to_hparams(run, log=registry.note)
    except T2TError as e:
        raise T2TError(f"hparams set {name!r} (from t2t's {hparams.base}): {e}") from None
    if unused:
        registry.note(f"hparams set {name!r}: t2t-lite has no setting for "
                      + ", ".join(f"{k}={values[k]!r}" for k in unused) + "; not used.")
    return lite


def lite_set(fn: Callable[[], HParams], name: str) -> Callable[[], LiteHParams]:
    """The zero-argument t2t-lite set calling the user's t2t set `fn` and mapping it."""
    def hparams_set() -> LiteHParams:
        try:
            hparams = fn()
        except T2TError as e:
            raise T2TError(f"hparams set {name!r}: {e}") from None
        except Exception as e:  # the user's code: any error, told in one line
            raise T2TError(f"hparams set {name!r} failed: {locate.where(e, fn)}") from None
        return to_lite(hparams, name)

    hparams_set.__name__ = name
    hparams_set.__doc__ = fn.__doc__
    return hparams_set
