"""The checkpoints of a Multi30k recipe run: when each was saved, those saved by a
mark, and those a run stopped early would have written."""

import os
import re
from typing import Dict, List, Optional


def checkpoint_times(model_dir: str) -> List[tuple]:
    """(timestamp, prefix) of every checkpoint in the model directory, oldest first
    (prefixes end in -STEP)."""
    with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
        text = f.read()
    paths = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.M)
    stamps = [float(t) for t in re.findall(r"^all_model_checkpoint_timestamps: (\S+)$", text, re.M)]
    if len(paths) != len(stamps):
        raise SystemExit(f"recipe: {model_dir}/checkpoint lists {len(paths)} checkpoints but "
                         f"{len(stamps)} timestamps.")
    return list(zip(stamps, [os.path.join(model_dir, p) for p in paths]))


def checkpoint_step(prefix: str) -> int:
    return int(prefix.rsplit("-", 1)[1])


def available_at(checkpoints: List[tuple], fraction: float, args) -> List[tuple]:
    """The checkpoints saved by a mark: a fraction of the steps, or of --train_minutes."""
    if args.train_minutes:
        return [c for c in checkpoints if c[0] <= args.start + 60 * fraction * args.train_minutes]
    return [c for c in checkpoints if checkpoint_step(c[1]) <= fraction * args.train_steps]


def minutes_into_run(saved_at: float, args) -> Optional[float]:
    """Minutes from this run's start to a checkpoint's save time; None for a checkpoint
    an earlier run saved (a resumed run's wall clock does not cover it)."""
    return round((saved_at - args.start) / 60, 1) if saved_at >= args.start else None


def early_stop(checkpoints: List[tuple], losses: Dict[str, float], patience: int) -> List[tuple]:
    """The checkpoints a run stopped early would have written, as fairseq's --patience
    stops one: at the first checkpoint after which `patience` checkpoints in a row had no
    lower dev loss than the best before them (strictly lower counts as better); all of
    them if that never happens."""
    best, bad = float("inf"), 0
    for i, (_, prefix) in enumerate(checkpoints):
        loss = losses[os.path.basename(prefix)]
        if loss < best:
            best, bad = loss, 0
        else:
            bad += 1
            if bad >= patience:
                return checkpoints[:i + 1]
    return checkpoints
