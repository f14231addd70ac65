"""Registered hparams sets (installed as `t2t_lite.hparams`).

Explicit discovery: importing this package registers every set below.
"""

from t2t_lite.hparams import transformer  # noqa: F401  (registers sets)
from t2t_lite.hparams import transformer_t2t  # noqa: F401  (registers sets)
from t2t_lite.hparams import table3  # noqa: F401  (registers sets)
