"""Averaging the K checkpoints of lowest dev loss (`t2t-avg-checkpoints --select=best_dev_loss`).

    written, chosen, losses = average_best(model_dir, avg_dir, data_dir, k=5)

Each complete checkpoint of the model directory (or the last `candidates` of
them) is scored by its per-token cross-entropy on the problem's whole dev
split, without label smoothing, read and batched as the trainer's evaluation
reads it (`evaluation.dev_dataset_fn`). The K lowest are averaged (ties: the
later step) into a model directory like any other average. Losses are kept in
the model directory (`dev_loss_cache`) with each checkpoint's index, so a later
run scores only the checkpoints saved since (or saved again under an old name,
by a run retrained in the same directory). A trainer may be writing the model directory: only
listed checkpoints are read, and a checkpoint it deletes meanwhile makes the
choice start again from the checkpoints listed then.
"""

import os
import time
from typing import Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from t2t_lite import checkpoints, model_dir as model_dir_lib
from t2t_lite.average_dir import write_average
from t2t_lite.checkpoints import CheckpointGone, checkpoint_step
from t2t_lite.data import datagen
from t2t_lite.data.integrity import data_loss_error
from t2t_lite.errors import T2TError
from t2t_lite.train.dev_loss_cache import (CACHE_FILE, DevLossCache, checkpoint_identity,
                                           dev_data_identity)
from t2t_lite.train.evaluation import Evaluator, dev_dataset_fn


class DevLossScorer:
    """Restores a checkpoint of `model_dir` and returns its per-token dev loss.

    One float32 model and one traced loss function serve every checkpoint; they
    are built on the first call (none when every loss is cached).
    """

    def __init__(self, model_dir: model_dir_lib.ModelDir, data_dir: str):
        self.model_dir, self.data_dir = model_dir, data_dir
        self.problem_name = model_dir.problem_name
        self.model, self.evaluator = None, None

    def _build(self) -> None:
        hp = self.model_dir.hparams.replace(label_smoothing=0.0)
        self.model = self.model_dir.build_model()
        self.evaluator = Evaluator(self.model, hp,
                                   dev_dataset_fn(self.data_dir, self.problem_name, hp))

    def __call__(self, path: str) -> float:
        """The dev loss of the checkpoint prefix `path`.

        Raises:
          CheckpointGone: `path` was deleted before or while it was read.
          T2TError: a damaged dev shard.
        """
        if self.model is None:
            self._build()
        checkpoints.restore_weights(self.model, path)
        try:
            return self.evaluator(progress=False)["loss"]
        except tf.errors.DataLossError as e:
            meta = datagen.read_metadata(self.data_dir, self.problem_name)
            raise data_loss_error(self.data_dir, self.problem_name, meta, e) from None


def lowest(losses: Dict[str, float], k: int) -> List[str]:
    """The `k` checkpoint prefixes of lowest loss, a later step first among equal
    losses; returned oldest first (the average is named after the last)."""
    ranked = sorted(losses, key=lambda path: (losses[path], -checkpoint_step(path)))
    return sorted(ranked[:k], key=checkpoint_step)


def _candidates(model_dir: str, k: int, candidates: int,
                named: Optional[List[str]] = None) -> List[str]:
    """The complete checkpoints among which to choose, at least `k` of them: those
    `named` (prefixes, matched by name), else the last `candidates` (0: all)."""
    listed = checkpoints.list_checkpoints(model_dir)
    if named:
        by_name = {os.path.basename(p): p for p in listed}
        absent = [n for n in named if os.path.basename(n) not in by_name]
        if absent:
            raise T2TError(f"--checkpoints names {', '.join(absent)}, not among the complete "
                           f"checkpoints of {model_dir} ({len(listed)}).")
        paths = sorted({by_name[os.path.basename(n)] for n in named}, key=checkpoint_step)
        which = "those --checkpoints names"
    else:
        paths = listed[-candidates:] if candidates else listed
        which = f"the last {candidates} (--candidates)" if candidates else "all"
    if k > len(paths):
        raise T2TError(f"--num_last_checkpoints={k} is more than the {len(paths)} candidate "
                       f"checkpoint(s) of {model_dir} ({which} of its {len(listed)} complete "
                       "checkpoints): average fewer, or wait for more.")
    return paths


def score(model_dir: str, paths: List[str], cache: DevLossCache, scorer: DevLossScorer,
          log: Callable[[str], None]) -> Dict[str, float]:
    """{path: dev loss} of the checkpoint prefixes `paths`, from `cache` (a loss of
    the same name and index, `checkpoint_identity`) or computed (and added to it),
    one line each.

    Raises:
      CheckpointGone: a checkpoint was deleted (or rewritten) before or while it was
        read.
    """
    listed = [os.path.basename(p) for p in checkpoints.list_checkpoints(model_dir)]
    losses = {}
    for path in paths:
        name = os.path.basename(path)
        identity = checkpoint_identity(path)
        loss = cache.get(name, identity)
        if loss is None:
            start = time.time()
            loss = scorer(path)
            if checkpoint_identity(path) != identity:  # not the weights that were scored
                raise CheckpointGone(f"Checkpoint {path} was rewritten while it was read.")
            cache.put(name, identity, loss, listed)
            how = f"[{time.time() - start:.1f} s]"
        else:
            how = f"(from {CACHE_FILE})"
        log(f"{name} (step {checkpoint_step(path)}): dev loss {loss:.4f} {how}")
        losses[path] = loss
    return losses


def average_best(model_dir: model_dir_lib.ModelDir, avg_dir: str, data_dir: str, k: int, candidates: int = 0,
                 log: Callable[[str], None] = print, named: Optional[List[str]] = None,
                 ) -> Tuple[str, List[str], Dict[str, float]]:
    """Averages the `k` checkpoints of `model_dir` of lowest dev loss into `avg_dir`.

    Args:
      data_dir: t2t-datagen's output holding the model's problem's dev split,
        encoded with the model's vocabulary.
      candidates: score only the last `candidates` complete checkpoints; 0: all.
      named: score only these checkpoint prefixes (e.g. those saved by a time, as
        recipes/multi30k_ende.py chooses at each of its marks); instead of `candidates`.
      log: prints a line (each checkpoint's loss).

    Returns:
      (the written checkpoint prefix, the prefixes averaged oldest first,
      {candidate prefix: dev loss}). average.json records the rule and the losses.

    Raises:
      T2TError: no dev split in `data_dir` (or one of another vocabulary),
        fewer candidates than `k`, `average_dir.write_average`'s errors.
    """
    if k < 1:
        raise T2TError(f"--num_last_checkpoints must be >= 1, got {k}.")
    dev_data = dev_data_identity(data_dir, model_dir.problem_name, model_dir.vocab_path)
    cache = DevLossCache(model_dir.path, dev_data, log)
    scorer = DevLossScorer(model_dir, data_dir)
    for _ in range(checkpoints.READ_ATTEMPTS):
        try:
            losses = score(model_dir.path, _candidates(model_dir.path, k, candidates, named),
                           cache, scorer, log)
            record = {"select": "best_dev_loss", "data_dir": os.path.abspath(data_dir),
                      "dev_losses": {os.path.basename(p): v for p, v in losses.items()}}
            written, chosen = write_average(model_dir, avg_dir, paths=lowest(losses, k),
                                            record=record)
            return written, chosen, losses
        except CheckpointGone as gone:
            log(f"{gone} Choosing again among the checkpoints listed now.")
    raise T2TError(f"The checkpoints of {model_dir.path} were deleted "
                   f"{checkpoints.READ_ATTEMPTS} "
                   "times while they were scored (a trainer with a small keep_checkpoint_max); "
                   "raise the trainer's --keep_checkpoint_max or use a copy of the directory.")
