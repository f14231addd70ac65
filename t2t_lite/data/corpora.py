"""A train split made of several corpora: each gets a contiguous range of the train shards.

A problem names the corpora of its train split (`Problem.train_corpora`, e.g.
one per local WMT file pair). Datagen gives corpus c of C, with p_c of the
P raw pairs, a range of the split's n shards (n = max(the problem's count, C)):

  - at least one shard each, the rest in proportion to p_c (largest
    remainders, ties to the earlier corpus; `allocate_shards`);
  - within its range, as a one-corpus split: its example k goes to the
    range's shard k % size, then each train shard is permuted with the seed of
    its split-wide index (`t2t_lite.data.split_writer`); a one-corpus split is
    byte for byte what it was before corpora were recorded.

The split's metadata then records, under "corpora", per corpus in order::

    {"name": "europarl-v7.de-en", "shard_range": [start, end], "examples": 1,905,421}

(`end` exclusive; examples after datagen's dropping), which training reads to
draw from each corpus with a weight (`t2t_lite.data.mixing`). Each corpus is
written, and resumed after a kill, as a split of its own (state files
`.partial.{problem}-train.{c}.*`, kept until the whole split is recorded).
"""

import fractions
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from t2t_lite.data.problem import Corpus
from t2t_lite.data.progress import Clock, Progress
from t2t_lite.data.split_writer import Encoder, merged_stats, write_split


def allocate_shards(counts: Sequence[int], num_shards: int) -> List[Tuple[int, int]]:
    """[start, end) shard ranges, one per corpus of `counts` pairs, contiguous in order.

    Every corpus gets at least one shard; there are max(num_shards, len(counts))
    in all. E.g. counts [600, 300], 4 shards: quotas 8/3 and 4/3 -> [(0, 3), (3, 4)].
    """
    total_shards = max(num_shards, len(counts))
    total = sum(counts)
    quotas = [fractions.Fraction(total_shards * c, total) if total
              else fractions.Fraction(total_shards, len(counts)) for c in counts]
    sizes = [max(1, int(q)) for q in quotas]
    while sum(sizes) > total_shards:  # the minimum of one took shards from the others
        i = max((i for i, size in enumerate(sizes) if size > 1),
                key=lambda i: (sizes[i] - quotas[i], -i))
        sizes[i] -= 1
    while sum(sizes) < total_shards:
        i = max(range(len(sizes)), key=lambda i: (quotas[i] - sizes[i], -i))
        sizes[i] += 1
    ranges, start = [], 0
    for size in sizes:
        ranges.append((start, start + size))
        start += size
    return ranges


def count_pairs(corpora: Sequence[Corpus], log: Callable[[str], None],
                clock: Clock) -> List[int]:
    """The raw pairs of each corpus, read once (with progress lines)."""
    progress = Progress(log, f"  train: counting the pairs of {len(corpora)} corpora,",
                        clock=clock)
    counts, done = [], 0
    for _, read in corpora:
        counts.append(0)
        for _ in read():
            counts[-1] += 1
            done += 1
            if done % 4096 == 0:
                progress.update(done)
    return counts


def write_train_split(corpora: Sequence[Corpus], counts: Optional[Sequence[int]],
                      encode: Encoder, paths: List[str], prefix: str, key: Dict, *,
                      shuffle_seed: int, log: Callable[[str], None], clock: Clock,
                      total_pairs: Optional[int] = None) -> Dict:
    """Writes the train shards `paths`, one range per corpus; returns the split's
    metadata with its "corpora".

    Args:
      counts: the raw pairs of each corpus, when known (one corpus: optional).
      total_pairs: the raw pairs of a one-corpus split, when known (for the ETA).
    """
    common = dict(shuffle_seed=shuffle_seed, drop_empty=True, log=log, clock=clock)
    if len(corpora) == 1:  # the split as it was before corpora were recorded
        (name, read), = corpora
        stats = write_split(read, encode, paths, prefix, key, label="  train",
                            total_pairs=total_pairs, **common)
        stats["corpora"] = [{"name": name, "shard_range": [0, len(paths)],
                             "examples": stats["examples"]}]
        return stats
    parts, records = [], []
    for c, ((name, read), (start, end)) in enumerate(zip(corpora, allocate_shards(
            counts, len(paths)))):
        part = write_split(read, encode, paths[start:end], f"{prefix}.{c}",
                           dict(key, corpus=name), label=f"  train {name}",
                           total_pairs=counts[c], first_shard=start, **common)
        parts.append(part)
        records.append({"name": name, "shard_range": [start, end],
                        "examples": part["examples"]})
    stats = merged_stats(parts)
    stats["corpora"] = records
    return stats


def corpora_summary(split_meta: Dict) -> str:
    """"; corpora: A 1,200 (shards 0-2), B 600 (shard 3)" for a train split of
    several corpora; "" otherwise."""
    corpora = split_meta.get("corpora", [])
    if len(corpora) < 2:
        return ""
    parts = []
    for corpus in corpora:
        start, end = corpus["shard_range"]
        where = f"shard {start}" if end - start == 1 else f"shards {start}-{end - 1}"
        parts.append(f"{corpus['name']} {corpus['examples']:,} ({where})")
    return "; corpora: " + ", ".join(parts)
