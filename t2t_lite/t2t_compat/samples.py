"""A t2t Text2TextProblem's samples -> t2t-lite's (source, target) pairs per split.

t2t's `generate_data` decides the splits, and so does this:
  - `is_generate_per_split=True`: `generate_samples(..., split)` once per split
    listed in `dataset_splits` (t2t-lite's "dev" is t2t's EVAL); a split not
    listed is empty.
  - `is_generate_per_split=False`: `generate_samples(..., TRAIN)` once, its
    samples dealt round-robin over the shards of every split listed, in
    `dataset_splits`' order (`generator_utils.generate_files`: sample i goes to
    shard i mod the number of shards; with t2t's default 9 train shards and 1
    dev shard, samples 9, 19, 29, ... are dev). A `None` sample is skipped and
    not counted, as t2t does.
t2t then shuffles each shard; t2t-lite shuffles train when it writes it, so
the pairs of each split are the same multiset as t2t's.

`generate_samples` receives `data_dir=None`: t2t-lite's datagen learns and
writes the vocabulary itself, and `tmp_dir` is where raw files are.
"""

from typing import Iterator, List, Optional, Tuple

from t2t_lite.data.problem import Pair
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import locate

TRAIN, EVAL, TEST = "train", "eval", "test"
T2T_SPLITS = {"train": TRAIN, "dev": EVAL, "test": TEST}  # t2t-lite's split -> t2t's


def dataset_splits(problem) -> List[Tuple[str, int]]:
    """`problem.dataset_splits` as [(t2t split, shards)], checked.

    Raises:
      T2TError: an entry without "split"/"shards", an unknown split, or no shards.
    """
    splits = []
    for entry in problem.dataset_splits:
        try:
            split, shards = entry["split"], int(entry["shards"])
        except (KeyError, TypeError, ValueError):
            raise T2TError(f"{type(problem).__name__}.dataset_splits: {entry!r} is not "
                           "{'split': ..., 'shards': N}.") from None
        if split not in T2T_SPLITS.values() or shards < 1:
            raise T2TError(f"{type(problem).__name__}.dataset_splits: {entry!r} needs a split "
                           "of problem.DatasetSplit (TRAIN, EVAL, TEST) and at least 1 shard.")
        splits.append((split, shards))
    return splits


def split_pairs(problem, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
    """The (source, target) pairs of t2t-lite's `split` ("train", "dev", "test")."""
    wanted = T2T_SPLITS[split]
    splits = dataset_splits(problem)
    if problem.is_generate_per_split:
        if wanted in [s for s, _ in splits]:
            yield from _pairs(problem, wanted, tmp_dir)
        return
    owners = [s for s, shards in splits for _ in range(shards)]  # shard -> its split
    for i, pair in enumerate(_pairs(problem, TRAIN, tmp_dir)):
        if owners[i % len(owners)] == wanted:
            yield pair


def _pairs(problem, t2t_split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
    """`generate_samples`' dicts as pairs (with t2t's prefixes); the user's errors in one line."""
    name = type(problem).__name__
    try:
        samples = problem.generate_samples(None, tmp_dir, t2t_split)
        inputs_prefix, targets_prefix = problem.inputs_prefix, problem.targets_prefix
        for sample in samples:
            if sample is None:
                continue
            yield (inputs_prefix + _text(sample, "inputs", name),
                   targets_prefix + _text(sample, "targets", name))
    except T2TError:
        raise
    except Exception as e:  # the user's code: any error, told in one line
        raise T2TError(f"{name}.generate_samples({t2t_split!r}) failed: "
                       f"{locate.where(e, type(problem))}") from None


def _text(sample, key: str, name: str) -> str:
    if not isinstance(sample, dict) or key not in sample:
        raise T2TError(f"{name}.generate_samples yielded {str(sample)[:80]!r}: expected a dict "
                       "with 'inputs' and 'targets' strings.")
    value = sample[key]
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise T2TError(f"{name}.generate_samples: {key!r} is {type(value).__name__}, not a "
                       "string (t2t-lite encodes text itself).")
    return value
