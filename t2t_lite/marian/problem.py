"""The problem of a model imported from Hugging Face Marian: its generation settings as
decoding defaults, no data of its own."""

import re
from typing import Any, Dict

from t2t_lite.data.problem import Problem
from t2t_lite.errors import T2TError

def problem_name(source_lang: str, target_lang: str) -> str:
    """The imported model's problem name: `marian_SRC_TGT` from tokenizer_config.json's
    languages, lower-cased, every other character than [a-z0-9] as `_`
    (`en`, `de+fr` -> `marian_en_de_fr`)."""
    def part(lang: str) -> str:
        return re.sub(r"[^a-z0-9]+", "_", (lang or "xx").lower()).strip("_") or "xx"
    return f"marian_{part(source_lang)}_{part(target_lang)}"


class MarianProblem(Problem):
    """What t2t-lite knows of an imported Marian model's task.

    Decoding defaults are the model's `generation_config.json` as
    `MarianMTModel.generate` applies it (beam size, length penalty,
    transformers' beam rule and logits processors, the maximum length), so
    `t2t-decoder --output_dir=M` with no --decode_hparams decodes as transformers
    does. It has no data: to fine-tune, encode your pairs with `t2t-datagen
    --vocab_from=M` (the imported vocabulary).
    """

    def __init__(self, name: str, record: Dict[str, Any]):
        self.name = name
        self.record = record
        self.source_language = record.get("source_language", "")
        self.target_language = record.get("target_language", "")
        # SearchParams fields (`SearchParams.for_problem`): the generation settings as
        # `t2t_lite.t2t_import.marian_importer.decode_hparams` translated them at import.
        self.search_defaults = dict(record["decode_hparams"])
        self.beam_size = int(self.search_defaults.get("beam_size", 1))
        self.alpha = float(self.search_defaults.get("alpha", 1.0))

    def raw_pairs(self, split, tmp_dir):
        raise T2TError(f"{self.name} is the problem of an imported Marian model: t2t-lite "
                       "has no data for it; define your files' problem with "
                       "t2t-datagen --train_files=... --vocab_from=<the imported model>.")
