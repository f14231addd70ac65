"""tensor2tensor.models.transformer: t2t 1.15's Transformer sets, as t2t HParams.

Each set's values are those of the t2t-lite set registered under t2t's name
(`t2t_lite/hparams/transformer_t2t.py`, checked there against t2t 1.15),
written back in t2t's names (`hparams_sets.t2t_values`); t2t 1.15's
`transformer_base` is `transformer_base_v3`, and `transformer_big`,
`transformer_tiny` and `transformer_small` are t2t's changes to it (t2t-lite's
own sets of those names are other models). A user's set changes the returned
HParams; t2t-lite maps the result when the set is looked up.
"""

from t2t_lite.hparams import transformer_t2t
from t2t_lite.t2t_compat import hparams_sets
from t2t_lite.t2t_compat.hparam import HParams


def _known(name: str) -> HParams:
    """t2t's set `name`, from t2t-lite's built-in set of the same name (called
    directly: a user directory may register a set of that name itself)."""
    return HParams(base=name, **hparams_sets.t2t_values(getattr(transformer_t2t, name)()))


def transformer_base_v1() -> HParams:
    return _known("transformer_base_v1")


def transformer_base_v2() -> HParams:
    return _known("transformer_base_v2")


def transformer_base_v3() -> HParams:
    return _known("transformer_base_v3")


def transformer_base() -> HParams:
    """t2t 1.15's transformer_base: transformer_base_v3."""
    hparams = transformer_base_v3()
    object.__setattr__(hparams, "base", "transformer_base")
    return hparams


def _changed(name: str, **changes) -> HParams:
    values = transformer_base().values()
    values.update(changes)
    return HParams(base=name, **values)


def transformer_big() -> HParams:
    """t2t 1.15's transformer_big (d 1024, d_ff 4096, 16 heads, P_drop 0.3, 2048-token batches)."""
    return _changed("transformer_big", hidden_size=1024, filter_size=4096, batch_size=2048,
                    num_heads=16, layer_prepostprocess_dropout=0.3)


def transformer_tiny() -> HParams:
    """t2t 1.15's transformer_tiny: 2 layers, d 128, d_ff 512, 4 heads."""
    return _changed("transformer_tiny", num_hidden_layers=2, hidden_size=128,
                    filter_size=512, num_heads=4)


def transformer_small() -> HParams:
    """t2t 1.15's transformer_small: 2 layers, d 256, d_ff 1024, 4 heads."""
    return _changed("transformer_small", num_hidden_layers=2, hidden_size=256,
                    filter_size=1024, num_heads=4)


def transformer_base_single_gpu() -> HParams:
    return _known("transformer_base_single_gpu")


def transformer_big_single_gpu() -> HParams:
    return _known("transformer_big_single_gpu")


def transformer_big_enfr() -> HParams:
    return _known("transformer_big_enfr")


PROVIDED = ("transformer_base", "transformer_base_v1", "transformer_base_v2",
            "transformer_base_v3", "transformer_big", "transformer_tiny", "transformer_small",
            "transformer_base_single_gpu", "transformer_big_single_gpu", "transformer_big_enfr")


def __getattr__(name: str):
    # Any other t2t set or the model class: one line instead of a bare AttributeError.
    raise AttributeError(
        f"tensor2tensor.models.transformer.{name} is not provided by t2t-lite's compatibility "
        "layer; it provides transformer_base, transformer_base_v1/v2/v3, transformer_big, "
        "transformer_tiny, transformer_small, transformer_base_single_gpu, "
        "transformer_big_single_gpu and transformer_big_enfr.")
