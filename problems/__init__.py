"""Registered problems (installed as `t2t_lite.problems`).

Explicit discovery: importing this package registers every problem module
listed here.
"""

from t2t_lite.problems import parsing_wsj  # noqa: F401  (registers problems)
from t2t_lite.problems import translate_multi30k  # noqa: F401  (registers problems)
from t2t_lite.problems import translate_numbers  # noqa: F401  (registers problems)
from t2t_lite.problems import translate_wmt  # noqa: F401  (registers problems)
