"""tensor2tensor.layers.common_hparams: `basic_params1`, refused when called.

t2t's basic parameters describe no model by themselves (t2t's Transformer
sets add ~40 fields to them); t2t-lite maps only sets built from a
Transformer set it knows (`transformer`).
"""

from t2t_lite.errors import T2TError


def basic_params1():
    """Refused: see the module doc."""
    raise T2TError("common_hparams.basic_params1() is t2t's model-agnostic base, not a "
                   "Transformer set t2t-lite knows: start from transformer.transformer_base() "
                   "(or transformer_tiny, transformer_small, transformer_big, ...).")
