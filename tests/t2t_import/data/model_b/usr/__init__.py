from . import m30k_tiny  # noqa: F401  registers translate_ende_multi30k_tiny
