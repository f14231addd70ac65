"""tensor2tensor.layers.modalities: ModalityType's names.

t2t-lite's Transformer has one modality, t2t's SYMBOL (shared subword
embeddings and softmax); a problem whose hparams choose another is refused
(`checks.problem_hparams`).
"""


class ModalityType:
    """t2t 1.15's modality names (those text problems use, and the common others)."""
    SYMBOL = "symbol"
    SYMBOL_WEIGHTS_ALL = "symbol_weights_all"
    SYMBOL_ONE_HOT = "symbol_one_hot"
    CLASS_LABEL = "class_label"
    IDENTITY = "identity"
    IDENTITY_SYMBOL = "identity_symbol"
    REAL = "real"
    IMAGE = "image"
    AUDIO = "audio"
    CTC_SYMBOL = "ctc_symbol"
