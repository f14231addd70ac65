"""The Transformer model (registered as "transformer")."""

from t2t_lite.model import transformer  # noqa: F401  (registers the model)
