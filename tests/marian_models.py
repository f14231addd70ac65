"""The committed Hugging Face Marian reference models (tests/t2t_import/marian/README.md),
imported with t2t-import --marian_dir, for tests in any folder under tests/."""

import pathlib
import re
from typing import Callable, List

from paths import REPO_ROOT

MARIAN = REPO_ROOT / "tests" / "t2t_import" / "marian"
# The beam size each model's generation_config.json gives (its expected/beamK.* files).
BEAMS = {"shared_swish": 4, "separate_relu": 4, "multilingual_gelu": 6}
# What a multilingual_gelu line without one of its language tokens is refused with.
LANGUAGE_REFUSAL = ("This model translates into several languages: each line must start with "
                    "the token of the language to translate into, one of >>deu<<, >>fra<<, "
                    ">>spa<<.")


def importer(tmp_path_factory) -> Callable[[str], pathlib.Path]:
    """name -> the model directory t2t-import wrote for it, each imported once (for a
    module-scoped fixture)."""
    from t2t_lite.bin import t2t_import
    made = {}

    def get(name: str) -> pathlib.Path:
        if name not in made:
            out = tmp_path_factory.mktemp(name) / "model"
            assert t2t_import.main([f"--marian_dir={MARIAN / name}",
                                    f"--output_dir={out}"]) == 0
            made[name] = out
        return made[name]

    return get


def expected(name: str, file: str) -> List[str]:
    """The lines of tests/t2t_import/marian/<name>/expected/<file>."""
    return (MARIAN / name / "expected" / file).read_text(encoding="utf-8").split("\n")[:-1]


def accepted_lines(name: str) -> List[int]:
    """The indices of expected/input.txt's lines every t2t-lite program translates as
    transformers does: not blank (t2t-lite answers "" without decoding) and, for
    multilingual_gelu, starting with one of its language tokens (others are refused)."""
    lines = expected(name, "input.txt")
    if name == "multilingual_gelu":
        return [i for i, line in enumerate(lines) if re.match(r">>(deu|fra|spa)<<", line)]
    return [i for i, line in enumerate(lines) if line.strip()]
