"""Datagen's figures from its output: phase times from its lines, the gaps
between lines, shard sizes and the examples its metadata records."""

import glob
import json
import os
import re
import statistics
from typing import Dict, List

from .corpus import PROBLEM
from .datagen_process import Line

GAP_LIMIT_S = 10.0  # issue 42: a progress line every 10 s or less ...
GAP_SLACK_S = 0.5  # ... counted late beyond this (a heartbeat thread wakes ms late when busy)

_NUMBER = r"([\d,]+)"


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_phases(lines: List[Line]) -> Dict:
    """Datagen's own figures from its lines: the vocabulary's time, each split's
    time and pairs/s, the last encoding rate printed; and each phase's CPU seconds
    (the child's CPU at its summary line minus at the previous phase's, 0.2 s samples)."""
    phases: Dict = {"splits": {}}
    before = 0.0  # CPU seconds at the end of the previous phase
    for _, cpu, line in lines:
        if line.startswith("t2t-datagen:"):
            before = cpu  # imports done
        vocab = re.search(r"vocabulary: learned .* in ([\d.]+) s(?: \(learning ([\d.]+) s\))?",
                          line)
        if vocab:
            phases["vocab_s"] = float(vocab.group(1))
            if vocab.group(2):
                phases["vocab_learning_s"] = float(vocab.group(2))
            phases["vocab_cpu_s"], before = cpu - before, cpu
        split = re.search(rf"^\s*(\w+): {_NUMBER} examples in (\d+) shard.*dropped {_NUMBER}"
                          r".*\[([\d.]+) s\]$", line)
        if split:
            examples, dropped = _int(split.group(2)), _int(split.group(4))
            seconds = float(split.group(5))
            phases["splits"][split.group(1)] = {
                "examples": examples, "dropped": dropped, "shards": int(split.group(3)),
                "seconds": seconds, "pairs_per_s": (examples + dropped) / max(seconds, 1e-9),
                "cpu_s": cpu - before}
            before = cpu
        rate = re.search(rf"train: encoding .* {_NUMBER} pairs/s", line)
        if rate:
            phases["train_encoding_pairs_per_s_last_line"] = _int(rate.group(1))
    return phases


def gaps(lines: List[Line], wall: float) -> Dict:
    """The longest silence between consecutive lines, and before the first / after the last."""
    between = [(b - a, a, line) for (a, _, line), (b, _, _) in zip(lines, lines[1:])]
    longest = max(between, default=(0.0, 0.0, ""))
    return {"lines": len(lines), "longest_gap_s": longest[0], "longest_gap_after_s": longest[1],
            "longest_gap_after_line": longest[2].strip(),
            "gaps_late": sum(gap > GAP_LIMIT_S + GAP_SLACK_S for gap, _, _ in between),
            "first_line_s": lines[0][0] if lines else None,
            "after_last_line_s": wall - lines[-1][0] if lines else None}


def shard_sizes(data_dir: str) -> Dict:
    """Count, min/median/max and total MB of each split's shards."""
    sizes: Dict = {}
    for split in ("train", "dev", "test"):
        found = [os.path.getsize(p) / 1e6
                 for p in glob.glob(os.path.join(data_dir, f"{PROBLEM}-{split}-*-of-*"))]
        if found:
            sizes[split] = {"count": len(found), "min_mb": min(found),
                            "median_mb": statistics.median(found), "max_mb": max(found),
                            "total_mb": sum(found)}
    return sizes


def metadata_examples(data_dir: str) -> Dict[str, int]:
    """Examples per split as datagen's metadata records them."""
    try:
        with open(os.path.join(data_dir, f"{PROBLEM}.datagen.json"), encoding="utf-8") as f:
            return {s: v["examples"] for s, v in json.load(f)["splits"].items()}
    except (OSError, ValueError, KeyError):
        return {}
