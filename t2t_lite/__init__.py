"""t2t-lite: tensor2tensor's Transformer workflow on Keras 3 and TensorFlow.

Public API::

    import t2t_lite
    hp = t2t_lite.registry.hparams("transformer_base").parse("num_heads=16")
    model = t2t_lite.build_model(hp, vocab_size=37000)
    t2t_lite.registry.list_hparams(), t2t_lite.registry.list_problems()
"""

from t2t_lite import registry
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams


def build_model(hparams: HParams, vocab_size: int):
    """Returns a built Transformer (`t2t_lite.model.transformer`), weights created.

    Args:
      hparams: the model's `HParams`.
      vocab_size: size of the shared source/target vocabulary.
    """
    from t2t_lite.model.transformer import build  # Lazy: keeps `import t2t_lite` light.
    return build(hparams, vocab_size)


__all__ = ["registry", "HParams", "T2TError", "build_model"]
