"""One split's raw pairs -> its TFRecord shards: train shuffled, resumable after a kill.

Example k of a split (in the problem's order, empty pairs dropped from train)
goes to shard k % n. Train shards are then each permuted with a seeded
generator, so that any prefix of any train shard is a uniform sample of the
whole corpus (a shard holds every n-th example of all of it), not its
beginning; dev and test shards keep the problem's order (BLEU lines up with
the reference files). The same seed, data and vocabulary give the same bytes.

Two phases, each resumable after a kill (files under hidden names in the data
dir, `{state}` = `.partial.{problem}-{split}`):

1. Encoding. The raw pairs are read `CHUNK_PAIRS` at a time; a chunk's
   examples are encoded and written to `{state}.chunk-{c:05d}`, grouped by
   the shard they go to (length-prefixed records), and `{state}.json` records
   the chunk: raw pairs read and their SHA-256, the file's size and SHA-256,
   where each shard's block starts, counts. A resumed run keeps the chunks
   whose files are intact, re-reads (never re-encodes) their raw pairs to check
   that they are the same, and encodes from there. Once every chunk is encoded,
   a resumed run trusts them without reading the raw pairs again.
2. Shards. Shard i is gathered from its block in every chunk (one shard in
   memory at a time, never the split), permuted (train), written under a
   temporary name and renamed, and recorded in the state with its size and
   SHA-256. A resumed run keeps the shards it finds as recorded.

The caller records the split in its metadata, then deletes the state
(`remove_state`).
"""

import glob
import hashlib
import itertools
import json
import os
import random
import struct
import time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import tensorflow as tf

from t2t_lite.data.integrity import file_sha256
from t2t_lite.data.problem import Pair
from t2t_lite.data.progress import Clock, Progress

CHUNK_PAIRS = 100_000
EMPTY_SIDE = "empty source or target"
STATE_PREFIX = ".partial."
TMP_PREFIX = ".incomplete."
_LENGTH = struct.Struct("<I")  # a chunk record's length prefix

# An encoded example: (serialized tf.train.Example, source length, target length).
Encoded = Tuple[bytes, int, int]
# Encodes pairs; yields the examples in order, a list per batch (for progress). An
# encoder may give several examples per pair (subword sampling's copies): its attribute
# `records_per_pair`, when set, says how many.
Encoder = Callable[[Sequence[Pair]], Iterator[List[Encoded]]]


def tmp_path(path: str) -> str:
    """The hidden name `path` is written under before it is renamed complete."""
    return os.path.join(os.path.dirname(path), TMP_PREFIX + os.path.basename(path))


def write_atomically(path: str, data: bytes) -> None:
    """Writes `data` to `path` under a temporary name, then renames it."""
    tmp = tmp_path(path)
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def state_prefix(data_dir: str, problem_name: str, split: str) -> str:
    """`D/.partial.{problem}-{split}`: the prefix of a split's resumable state files."""
    return os.path.join(data_dir, f"{STATE_PREFIX}{problem_name}-{split}")


def remove_state(prefix: str) -> None:
    """Deletes a split's state and chunk files (once its metadata records it)."""
    for path in glob.glob(glob.escape(prefix) + ".*"):
        os.remove(path)


def _empty_stats() -> Dict:
    return {"examples": 0, "source_subwords": 0, "target_subwords": 0,
            "max_source_length": 0, "max_target_length": 0,
            "dropped": {EMPTY_SIDE: 0}, "kept_with_empty_side": 0}


def _add_stats(total: Dict, part: Dict) -> None:
    for name in ("examples", "source_subwords", "target_subwords", "kept_with_empty_side"):
        total[name] += part[name]
    for name in ("max_source_length", "max_target_length"):
        total[name] = max(total[name], part[name])
    total["dropped"][EMPTY_SIDE] += part["dropped"][EMPTY_SIDE]


def merged_stats(parts: Iterable[Dict]) -> Dict:
    """The counts of several parts of a split (chunks, or corpora) added up;
    their shard lists ("shards", "shard_bytes", "shard_sha256"), where present,
    concatenated in order."""
    total = _empty_stats()
    for part in parts:
        _add_stats(total, part)
        for name in ("shards", "shard_bytes", "shard_sha256"):
            if name in part:
                total[name] = total.get(name, []) + part[name]
    return total


def _raw_digest(pairs: Sequence[Pair]) -> str:
    text = "\0".join(f"{source}\0{target}" for source, target in pairs)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _State:
    """`{prefix}.json`: what an interrupted run completed, for a key (vocabulary,
    shard names, seed...) that must match for it to be reused."""

    def __init__(self, prefix: str, key: Dict):
        self.prefix, self.key = prefix, key
        self.chunks: List[Dict] = []
        self.encoded = False  # every raw pair is in a chunk
        self.shards: Dict[str, Dict] = {}

    @classmethod
    def load(cls, prefix: str, key: Dict) -> Tuple["_State", bool]:
        """The recorded state if its key matches (and True), else a new one."""
        state = cls(prefix, key)
        try:
            with open(prefix + ".json", encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError):
            return state, False
        if saved.get("key") != key:
            return state, False
        state.chunks, state.encoded = saved["chunks"], saved["encoded"]
        state.shards = saved["shards"]
        return state, True

    def save(self) -> None:
        saved = {"key": self.key, "chunks": self.chunks, "encoded": self.encoded,
                 "shards": self.shards}
        write_atomically(self.prefix + ".json",
                         (json.dumps(saved, sort_keys=True) + "\n").encode("utf-8"))

    def chunk_path(self, index: int) -> str:
        return f"{self.prefix}.chunk-{index:05d}"

    def intact_chunks(self) -> int:
        """How many recorded chunks, from the first, are on disk as written."""
        for index, chunk in enumerate(self.chunks):
            path = self.chunk_path(index)
            if not (os.path.isfile(path) and os.path.getsize(path) == chunk["bytes"]
                    and file_sha256(path) == chunk["sha256"]):
                return index
        return len(self.chunks)


class SplitWriter:
    """Writes one split's shards (see the module docstring).

    Args:
      read_pairs: returns a new iterator over the split's raw pairs, in order.
      encode: pairs -> encoded examples (`Encoder`).
      paths: the shard files, shard i at paths[i].
      prefix: `state_prefix(...)` of the split.
      key: what the shards depend on besides the raw pairs (vocabulary digest...);
        a state recorded under another key is discarded.
      shuffle_seed: permute each shard with this seed; None keeps the order.
      first_shard: the split-wide index of paths[0] (a corpus's range of the
        train shards): shard i is permuted by the seed of shard first_shard + i.
      drop_empty: drop pairs with an empty or whitespace-only side (counted).
      log: receives resume notes and progress lines.
      label: the start of progress lines, e.g. "  train".
      total_pairs: the number of raw pairs when known (for the ETA).
      clock: for progress lines.

    Raw pairs are read `CHUNK_PAIRS` at a time (the unit of a resume); the shards
    do not depend on it.
    """

    def __init__(self, read_pairs: Callable[[], Iterable[Pair]], encode: Encoder,
                 paths: List[str], prefix: str, key: Dict, *, shuffle_seed: Optional[int],
                 drop_empty: bool, log: Callable[[str], None], label: str,
                 total_pairs: Optional[int] = None, clock: Clock = time.monotonic,
                 first_shard: int = 0):
        self.read_pairs, self.encode, self.paths = read_pairs, encode, paths
        self.shuffle_seed, self.drop_empty = shuffle_seed, drop_empty
        self.first_shard = first_shard
        self.log, self.label, self.total_pairs = log, label, total_pairs
        self.clock = clock
        self.chunk_pairs = CHUNK_PAIRS
        key = dict(key, shards=[os.path.basename(p) for p in paths], shuffle_seed=shuffle_seed,
                   drop_empty=drop_empty)
        self.state, found = _State.load(prefix, key)
        if not found:
            remove_state(prefix)  # another key's (or a damaged) state: nothing is reusable

    def write(self) -> Dict:
        """Writes the shards; returns the split's counts, shard names, sizes and SHA-256."""
        self._encode_chunks()
        return self._write_shards()

    # --- Phase 1: raw pairs -> chunk files -----------------------------------------------

    def _encode_chunks(self) -> None:
        state = self.state
        intact = state.intact_chunks()
        if state.encoded and intact == len(state.chunks):
            return
        pairs = iter(self.read_pairs())
        self._check_raw_prefix(pairs, intact)
        if intact < len(state.chunks) or state.encoded:
            state.chunks, state.encoded = state.chunks[:intact], False
            state.save()
        read = sum(c["pairs_read"] for c in state.chunks)
        written = sum(c["bytes"] for c in state.chunks)
        if intact:
            self.log(f"{self.label}: resuming after {intact} chunk(s) ({read:,} pairs) "
                     "an interrupted run encoded")
        progress = Progress(self.log, f"{self.label}: encoding", self.total_pairs,
                            clock=self.clock)
        progress.update(read, written)
        while True:
            raw = list(itertools.islice(pairs, self.chunk_pairs))
            if not raw:
                break
            chunk = self._write_chunk(len(state.chunks), raw, progress, read, written)
            read, written = read + chunk["pairs_read"], written + chunk["bytes"]
            state.chunks.append(chunk)
            state.save()
        state.encoded = True
        state.save()

    def _check_raw_prefix(self, pairs: Iterator[Pair], intact: int) -> None:
        """Reads the raw pairs of the first `intact` chunks from `pairs`.

        Raises:
          _RawDataChanged: they are not the pairs those chunks were made from
            (the state is reset: the split is encoded again from its start).
        """
        for chunk in self.state.chunks[:intact]:
            raw = list(itertools.islice(pairs, chunk["pairs_read"]))
            if len(raw) != chunk["pairs_read"] or _raw_digest(raw) != chunk["raw_sha256"]:
                self.log(f"{self.label}: the raw data differs from what an interrupted run "
                         "encoded; encoding the split again")
                raise _RawDataChanged()

    def _write_chunk(self, index: int, raw: List[Pair], progress: Progress,
                     read_before: int, written_before: int) -> Dict:
        stats = _empty_stats()
        kept = []
        for source, target in raw:
            if not source.strip() or not target.strip():
                if self.drop_empty:
                    stats["dropped"][EMPTY_SIDE] += 1
                    continue
                stats["kept_with_empty_side"] += 1
            kept.append((source, target))
        n = len(self.paths)
        first = sum(c["stats"]["examples"] for c in self.state.chunks)  # split-wide index
        blocks: List[List[bytes]] = [[] for _ in range(n)]
        done, size = 0, 0
        for batch in self.encode(kept):
            for record, source_length, target_length in batch:
                blocks[(first + stats["examples"]) % n].append(record)
                stats["examples"] += 1
                stats["source_subwords"] += source_length
                stats["target_subwords"] += target_length
                stats["max_source_length"] = max(stats["max_source_length"], source_length)
                stats["max_target_length"] = max(stats["max_target_length"], target_length)
                size += _LENGTH.size + len(record)
            done += len(batch) // getattr(self.encode, "records_per_pair", 1)
            progress.update(read_before + done, written_before + size)
        offsets, parts = [0], []
        for block in blocks:
            parts += [piece for record in block for piece in (_LENGTH.pack(len(record)), record)]
            offsets.append(offsets[-1] + sum(_LENGTH.size + len(r) for r in block))
        data = b"".join(parts)
        path = self.state.chunk_path(index)
        write_atomically(path, data)
        return {"pairs_read": len(raw), "raw_sha256": _raw_digest(raw), "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "offsets": offsets, "stats": stats}

    # --- Phase 2: chunk files -> shards --------------------------------------------------

    def _shard_records(self, index: int) -> List[bytes]:
        """Shard `index`'s records in split order, gathered from every chunk."""
        records = []
        for c, chunk in enumerate(self.state.chunks):
            start, end = chunk["offsets"][index], chunk["offsets"][index + 1]
            with open(self.state.chunk_path(c), "rb") as f:
                f.seek(start)
                block = f.read(end - start)
            at = 0
            while at < len(block):
                (length,) = _LENGTH.unpack_from(block, at)
                records.append(block[at + _LENGTH.size:at + _LENGTH.size + length])
                at += _LENGTH.size + length
        return records

    def _shard_intact(self, index: int) -> bool:
        done, path = self.state.shards.get(str(index)), self.paths[index]
        return bool(done and os.path.isfile(path) and os.path.getsize(path) == done["bytes"]
                    and file_sha256(path) == done["sha256"])

    def _write_shards(self) -> Dict:
        state = self.state
        kept = [i for i in range(len(self.paths)) if self._shard_intact(i)]
        if kept:
            self.log(f"{self.label}: resuming after {len(kept)} of {len(self.paths)} shard(s) "
                     "an interrupted run wrote")
        progress = Progress(self.log, f"{self.label}: writing shards", len(self.paths),
                            unit="shards", clock=self.clock)
        written = sum(state.shards[str(i)]["bytes"] for i in kept)
        for index, path in enumerate(self.paths):
            if index in kept:
                continue
            records = self._shard_records(index)
            if self.shuffle_seed is not None:
                seed = f"{self.shuffle_seed}:{self.first_shard + index}"
                random.Random(seed).shuffle(records)
            tmp = tmp_path(path)
            with tf.io.TFRecordWriter(tmp) as writer:
                for record in records:
                    writer.write(record)
            os.replace(tmp, path)
            state.shards[str(index)] = {"bytes": os.path.getsize(path),
                                        "sha256": file_sha256(path)}
            state.save()
            written += state.shards[str(index)]["bytes"]
            progress.update(index + 1, written)
        stats = merged_stats([chunk["stats"] for chunk in state.chunks])
        stats["shards"] = [os.path.basename(p) for p in self.paths]
        stats["shard_bytes"] = [state.shards[str(i)]["bytes"] for i in range(len(self.paths))]
        stats["shard_sha256"] = [state.shards[str(i)]["sha256"] for i in range(len(self.paths))]
        return stats


class _RawDataChanged(Exception):
    """The raw pairs differ from those an interrupted run encoded."""


def write_split(read_pairs: Callable[[], Iterable[Pair]], encode: Encoder, paths: List[str],
                prefix: str, key: Dict, **kwargs) -> Dict:
    """Writes one split's shards with `SplitWriter` (same arguments); starts over
    once if the raw data differs from what an interrupted run encoded."""
    try:
        return SplitWriter(read_pairs, encode, paths, prefix, key, **kwargs).write()
    except _RawDataChanged:
        remove_state(prefix)
        return SplitWriter(read_pairs, encode, paths, prefix, key, **kwargs).write()
