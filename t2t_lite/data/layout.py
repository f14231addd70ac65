"""What datagen writes and every reader expects: special ids, split names, shard file names.

The one place these facts are defined; datagen, the input pipeline, the
vocabulary, the model's padding masks and the problems import them from here.

  - Ids: `PAD_ID = 0` (padding, and the decoder's start symbol), `EOS_ID = 1`
    (ends every encoded sequence), `UNK_ID = 2` (tensor2tensor's ids; no BOS).
  - Splits: "train", "dev", "test".
  - Shards: `{problem}-{split}-{index:05d}-of-{total:05d}`, e.g.
    `translate_ende-train-00003-of-00100`, TFRecord files in the data dir.
  - A vocabulary imported from Hugging Face Marian: a file named
    `MARIAN_VOCAB_FILE` (in a model directory) or ending with it (a data
    directory's copy, `{problem}.marian_vocab.json`); `t2t_lite.marian.vocab_file`.
  - Metadata: `{problem}.datagen.json` beside the shards (`metadata_path`);
    a data directory's problems are those with one (`problems_with_data`).
  - Layout version (`LAYOUT_VERSION`, "layout_version" in the datagen
    metadata): 3 = as 2, and each corpus of the train split has a contiguous
    range of the train shards, recorded under the split's "corpora";
    2 (`SHUFFLED_LAYOUT`) = train shards each shuffled (any prefix samples the
    whole corpus), corpora mixed and not recorded; 1 (no version recorded) =
    train shards in corpus order.

Pure Python (no TensorFlow), so light modules such as `t2t_lite.parsing.trees`
can import it.
"""

import glob
import os
import re
from typing import List, Optional, Tuple

from t2t_lite.errors import T2TError

PAD_ID = 0
EOS_ID = 1
UNK_ID = 2

SPLITS = ("train", "dev", "test")

MARIAN_VOCAB_FILE = "marian_vocab.json"

LAYOUT_VERSION = 3
SHUFFLED_LAYOUT = 2  # the first layout whose train shards are shuffled

_SHARD_DIGITS = 5
METADATA_SUFFIX = ".datagen.json"


def metadata_path(data_dir: str, problem_name: str) -> str:
    """The datagen metadata file, `D/{problem}.datagen.json`."""
    return os.path.join(data_dir, problem_name + METADATA_SUFFIX)


def problems_with_data(data_dir: str) -> List[str]:
    """The problems with datagen metadata in `data_dir`, sorted."""
    return sorted(os.path.basename(p)[:-len(METADATA_SUFFIX)] for p in
                  glob.glob(os.path.join(glob.escape(data_dir), "*" + METADATA_SUFFIX)))


def check_split(split: str) -> None:
    """Raises `T2TError` unless `split` is one of `SPLITS`."""
    if split not in SPLITS:
        raise T2TError(f"Unknown split {split!r}; expected one of {', '.join(SPLITS)}.")


def shard_name(problem_name: str, split: str, index: int, total: int) -> str:
    """The file name of shard `index` of `total`, e.g. `translate_ende-train-00003-of-00100`."""
    return f"{problem_name}-{split}-{index:0{_SHARD_DIGITS}d}-of-{total:0{_SHARD_DIGITS}d}"


def shard_glob(problem_name: str, split: str) -> str:
    """The glob matching every shard name of a split, `{problem}-{split}-?????-of-?????`.

    It can also match names that are not shards (`?` is any character); check
    each match with `parse_shard_name`.
    """
    digits = "?" * _SHARD_DIGITS
    return f"{problem_name}-{split}-{digits}-of-{digits}"


def shard_regex(problem_name: str, split: str) -> "re.Pattern[str]":
    """A regex matching exactly the shard names of a split; groups 1 and 2: index and total."""
    number = rf"(\d{{{_SHARD_DIGITS}}})"
    return re.compile(rf"^{re.escape(problem_name)}-{re.escape(split)}-{number}-of-{number}$")


def parse_shard_name(file_name: str, problem_name: str, split: str) -> Optional[Tuple[int, int]]:
    """(index, total) of a shard's file name (no directory), or None if it is not one.

    Only complete names match: datagen's temporary files (`.incomplete.` prefix)
    and anything with a suffix do not.
    """
    found = shard_regex(problem_name, split).match(file_name)
    return (int(found.group(1)), int(found.group(2))) if found else None
