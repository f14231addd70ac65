"""tensor2tensor.data_generators.text_encoder: the reserved ids and SubwordTextEncoder.

SubwordTextEncoder loads an existing t2t vocabulary file and encodes and
decodes with t2t's rules (`t2t_lite.data.t2t_subwords_text`, checked against
t2t's own ids); building one (`build_from_generator`) is t2t-datagen's job
here and is not provided.
"""

from typing import List, Sequence

from t2t_lite.data.t2t_subwords_text import T2TSubwordText

PAD = "<pad>"
EOS = "<EOS>"
RESERVED_TOKENS = [PAD, EOS]
NUM_RESERVED_TOKENS = len(RESERVED_TOKENS)
PAD_ID = RESERVED_TOKENS.index(PAD)  # 0
EOS_ID = RESERVED_TOKENS.index(EOS)  # 1


def to_unicode(s) -> str:
    return s.decode("utf-8") if isinstance(s, bytes) else s


native_to_unicode = to_unicode


class SubwordTextEncoder:
    """t2t's SubwordTextEncoder over an existing `*.subwords` file."""

    def __init__(self, filename: str):
        self._encoder = T2TSubwordText.from_file(filename)

    @property
    def vocab_size(self) -> int:
        return self._encoder.vocab_size

    def encode(self, text: str) -> List[int]:
        return self._encoder.encode(to_unicode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self._encoder.decode(ids)


def __getattr__(name: str):
    raise AttributeError(
        f"tensor2tensor.data_generators.text_encoder.{name} is not provided by t2t-lite's "
        "compatibility layer (it provides PAD, EOS, RESERVED_TOKENS, PAD_ID, EOS_ID, "
        "to_unicode and SubwordTextEncoder).")
