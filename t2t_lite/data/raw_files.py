"""What identifies the raw files a split was read from: each file's size and SHA-256.

A problem names the local files each split reads (`Problem.raw_files`). Datagen
records them in the split's metadata, and those of the train split beside a
vocabulary it learned, as::

    "raw_files": [{"file": "/abs/train.tsv", "bytes": 1234, "sha256": "9f2c..."}]

A rerun compares the files' content now with the record (`changed_file`, by
size and SHA-256 in order; a file moved elsewhere with the same content is the
same), so an edit that keeps a file's length (a corrected typo, a re-exported
file) is noticed. Each file is hashed once per datagen (`RawFiles`): a held-out
dev split reads the train files' records again.
"""

import hashlib
import os
from typing import Callable, Dict, List, Optional, Sequence

Record = Dict  # {"file": absolute path, "bytes": size, "sha256": hex digest}


def file_record(path: str) -> Record:
    """The size and SHA-256 of the file `path` (read whole, in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"file": os.path.abspath(path), "bytes": os.path.getsize(path),
            "sha256": digest.hexdigest()}


class RawFiles:
    """`file_record` of each file, computed once."""

    def __init__(self):
        self._records: Dict[str, Record] = {}

    def records(self, paths: Sequence[str]) -> List[Record]:
        """The records of `paths`, in order; none when one of them cannot be read
        (e.g. deleted after datagen: nothing to compare, a finished split is reused;
        one to be written stops at the problem's own one-line error)."""
        try:
            for path in paths:
                if path not in self._records:
                    self._records[path] = file_record(path)
        except OSError:
            return []
        return [self._records[p] for p in paths]


def changed_file(recorded: Sequence[Record], current: Sequence[Record]) -> Optional[str]:
    """The first file whose content differs between `recorded` and `current` (by
    position: size and SHA-256), or None when every file holds what was recorded.
    A damaged record (hand-edited metadata) differs: what was made from it is made again."""
    if not isinstance(recorded, list):
        recorded = []
    for i, now in enumerate(current):
        if i >= len(recorded) or _content(recorded[i]) != _content(now):
            return now["file"]
    if len(recorded) > len(current):
        extra = recorded[len(current)]
        return str(extra.get("file")) if isinstance(extra, dict) else "a recorded file"
    return None


def _content(record) -> Optional[tuple]:
    return (record.get("bytes"), record.get("sha256")) if isinstance(record, dict) else None


def split_changed(done: Optional[Dict], split: str, files: List[Record],
                  log: Callable[[str], None]) -> bool:
    """Whether the raw `files` of a split recorded as `done` (its metadata, or None)
    changed since it was written (says so); False when there is nothing to compare:
    no record, or no files now (they cannot be read)."""
    changed = files and done is not None and changed_file(done.get("raw_files", files), files)
    if changed:
        log(f"  {split}: {changed} changed since the split was written; writing it again")
    return bool(changed)


def record_if_missing(done: Dict, split: str, files: List[Record],
                      log: Callable[[str], None]) -> None:
    """Records the raw `files` of a reused split that an older t2t-datagen wrote
    without them (says so)."""
    if files and "raw_files" not in done:
        done["raw_files"] = files
        log(f"  {split}: written by an older t2t-datagen, which recorded no size and SHA-256 "
            "of its raw files: reused as written; recorded now (delete its shards to write "
            "them from the current files)")
