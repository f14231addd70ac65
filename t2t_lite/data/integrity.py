"""Damaged shards are refused, never used silently.

Datagen records each shard's byte size and SHA-256 in `{problem}.datagen.json`
(per split: "shard_bytes", "shard_sha256", in the order of "shards"). The
trainer compares sizes before it starts (free: a stat per file), so a missing,
truncated or grown shard is one line naming the file; `t2t-datagen --verify`
compares checksums, which also finds a byte flipped in the middle; and a
record TensorFlow finds corrupt while training (`DataLossError`, whose message
names no file) becomes one line naming the shards whose checksum differs.
"""

import hashlib
import os
from typing import Dict, Iterable, List, Optional

import tensorflow as tf

from t2t_lite.data.layout import SHUFFLED_LAYOUT
from t2t_lite.errors import T2TError

_BLOCK = 1 << 20


def file_sha256(path: str) -> str:
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def shard_records(paths: Iterable[str]) -> Dict[str, List]:
    """{"shard_bytes": [...], "shard_sha256": [...]} of `paths`, for the metadata."""
    paths = list(paths)
    return {"shard_bytes": [os.path.getsize(p) for p in paths],
            "shard_sha256": [file_sha256(p) for p in paths]}


def count_records(paths: Iterable[str]) -> Optional[int]:
    """How many examples the TFRecord shards `paths` hold, every record read (its
    CRCs checked) and parsed as datagen's {"inputs", "targets"} int64 example;
    None when a record is corrupt or does not parse."""
    features = {"inputs": tf.io.VarLenFeature(tf.int64),
                "targets": tf.io.VarLenFeature(tf.int64)}
    records = tf.data.TFRecordDataset(list(paths)).batch(4096)
    rows = records.map(lambda batch: tf.io.parse_example(batch, features)["inputs"].dense_shape[0])
    try:
        return int(rows.reduce(tf.constant(0, tf.int64), lambda total, n: total + n))
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
        return None


def _rerun(problem_name: str, data_dir: str) -> str:
    return (f"delete it and re-run t2t-datagen --problem={problem_name} --data_dir={data_dir} "
            "(it rewrites only what is missing)")


def damaged_shards(data_dir: str, problem_name: str, split_meta: Dict,
                   checksums: bool = False) -> List[str]:
    """Descriptions of the split's shards that are missing, of the wrong size, or
    (with `checksums`) of the wrong content; [] when all are as datagen wrote them.

    Raises:
      T2TError: the metadata has no sizes (written by an older t2t-lite).
    """
    if "shard_bytes" not in split_meta:
        raise T2TError(f"{problem_name}.datagen.json in {data_dir} records no shard sizes "
                       f"(an older t2t-datagen); re-run t2t-datagen --problem={problem_name} "
                       f"--data_dir={data_dir} to record them.")
    problems = []
    for name, size, sha in zip(split_meta["shards"], split_meta["shard_bytes"],
                               split_meta["shard_sha256"]):
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            problems.append(f"{path} is missing")
            continue
        actual = os.path.getsize(path)
        if actual != size:
            how = "truncated" if actual < size else "longer than written"
            problems.append(f"{path} is {how} ({actual:,} bytes; t2t-datagen wrote {size:,})")
        elif checksums and file_sha256(path) != sha:
            problems.append(f"{path} is corrupt (its SHA-256 differs from what t2t-datagen "
                            "wrote)")
    return problems


def check_shards(data_dir: str, problem_name: str, meta: Dict, splits: Iterable[str],
                 checksums: bool = False) -> None:
    """Raises a one-line `T2TError` naming the first damaged shard of `splits`,
    or saying that the train shards are in corpus order (an older layout)."""
    for split in splits:
        split_meta = meta.get("splits", {}).get(split)
        if split_meta is None:
            continue  # the pipeline says which split is missing
        if split == "train" and meta.get("layout_version", 1) < SHUFFLED_LAYOUT:
            raise T2TError(f"The train shards of {problem_name} in {data_dir} hold the corpus "
                           "in order (written by an older t2t-datagen): re-run t2t-datagen "
                           f"--problem={problem_name} --data_dir={data_dir} to shuffle them.")
        problems = damaged_shards(data_dir, problem_name, split_meta, checksums)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise T2TError(f"{problems[0]}{more}; {_rerun(problem_name, data_dir)}.")


def data_loss_error(data_dir: str, problem_name: str, meta: Dict, error: Exception) -> T2TError:
    """A one-line error for TensorFlow's `DataLossError` while reading shards,
    naming the shards whose checksum differs."""
    found = []
    for split, split_meta in meta.get("splits", {}).items():
        if "shard_bytes" in split_meta:
            found += damaged_shards(data_dir, problem_name, split_meta, checksums=True)
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    detail = detail.split("}}")[-1].split("[Op:")[0].strip()  # "corrupted record at 41458"
    if found:
        return T2TError(f"{found[0]}: {detail}; {_rerun(problem_name, data_dir)}.")
    return T2TError(f"A shard of {problem_name} in {data_dir} is corrupt ({detail}); run "
                    f"t2t-datagen --verify --problem={problem_name} --data_dir={data_dir}.")
