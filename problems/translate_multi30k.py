"""Multi30k English-German (task 1, raw and cased): a real data set small enough for a CPU.

Files looked for in `--tmp_dir` (the layout of multi30k/dataset `data/task1/raw`
and of `../shared/data/multi30k`), nothing is downloaded:

  - train: `train.en`, `train.de` (29,000 pairs)
  - dev:   `val.en`, `val.de` (1,014 pairs)
  - test:  `test_2016_flickr.en`, `test_2016_flickr.de` (1,000 pairs)

The text is used exactly as written (`&amp;`, a TAB, non-breaking spaces and
trailing spaces included); the vocabulary round-trips it exactly.
"""

import os
from typing import Iterator, List, Optional

from t2t_lite import registry
from t2t_lite.data.layout import check_split
from t2t_lite.data.problem import Pair, Problem, read_parallel_text
from t2t_lite.errors import T2TError

_FILE_STEMS = {"train": "train", "dev": "val", "test": "test_2016_flickr"}


@registry.register_problem("translate_ende_multi30k")
class TranslateEndeMulti30k(Problem):
    """Multi30k English->German from local files, shared 8,000-piece vocabulary."""

    source_language = "en"
    target_language = "de"
    vocab_size = 8000
    num_train_shards = 4

    def raw_files(self, split: str, tmp_dir: Optional[str]) -> List[str]:
        """`{stem}.en` and `{stem}.de` in `tmp_dir` (none without `tmp_dir`)."""
        check_split(split)
        stem = _FILE_STEMS[split]
        return [os.path.join(tmp_dir, f"{stem}.{lang}") for lang in ("en", "de")] if tmp_dir \
            else []

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        check_split(split)
        stem = _FILE_STEMS[split]
        if not tmp_dir:
            raise T2TError(f"{self.name} reads local files: pass --tmp_dir=DIR with "
                           f"{stem}.en and {stem}.de (e.g. ../shared/data/multi30k).")
        paths = self.raw_files(split, tmp_dir)
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise T2TError(f"{self.name}: missing {', '.join(missing)} (--tmp_dir must hold "
                           f"train, val and test_2016_flickr .en/.de files).")
        yield from read_parallel_text(*paths)
