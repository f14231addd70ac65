"""Which CJK language a text is written in, from its characters: the BLEU tokenizer it needs.

    cjk_language(["吾輩は猫である。"])   # -> "ja"
    cjk_language(["Ein Haus."])          # -> None

BLEU counts words, and sacreBLEU's default tokenizer (13a) finds words at spaces
and punctuation: Chinese and Japanese are written without spaces, so 13a makes
one "word" of each clause and BLEU of such text says little. When more than
half of the non-space characters are Han, Kana or Hangul, the text is taken as
Chinese, Japanese or Korean: Korean when Hangul outnumbers Han and Kana,
Japanese when Kana makes at least a tenth of the Han and Kana (Japanese prose
writes its endings and particles in Kana; Chinese has none), Chinese otherwise.
"""

import re
from typing import Iterable, Optional

# Unicode blocks (not every rare extension: enough to tell the three apart).
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")  # Hiragana, Katakana, half-width
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")  # Jamo, syllables
_SPACE = re.compile(r"\s")

LANGUAGE_NAMES = {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def cjk_language(texts: Iterable[str]) -> Optional[str]:
    """"zh", "ja" or "ko" when more than half of the non-space characters of `texts`
    are Han, Kana or Hangul (see the module docstring); else None."""
    text = "".join(texts)
    han, kana, hangul = (len(script.findall(text)) for script in (_HAN, _KANA, _HANGUL))
    letters = len(text) - len(_SPACE.findall(text))
    if 2 * (han + kana + hangul) <= letters:
        return None
    if hangul > han + kana:
        return "ko"
    return "ja" if 10 * kana >= han + kana else "zh"
