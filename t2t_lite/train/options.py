"""What a training run is told (`TrainOptions`) and what it reports (`TrainResult`).

Kept apart from the loop (`t2t_lite.train.trainer`), which imports them from here.
"""

import dataclasses
import math
from typing import Dict, Optional

from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams


@dataclasses.dataclass
class TrainOptions:
    """How to run training (the hparams say what to train)."""

    train_steps: int = 0                 # optimizer steps in total; 0: hparams.train_steps
    eval_every: int = 1000               # steps between evaluations; 0: only at the end
    eval_steps: int = 0                  # dev batches per evaluation; 0: the whole dev split
    eval_bleu_sentences: int = 100       # dev sentences greedily decoded for BLEU; 0: none
    save_checkpoints_steps: int = 1000   # 0: not by steps
    save_checkpoints_secs: int = 600     # the paper: every 10 minutes; 0: not by time
    keep_checkpoint_max: int = 20        # 0: keep every checkpoint
    log_every: int = 100
    random_seed: int = 1
    jit_compile: bool = False
    early_stopping_patience: int = 0     # evaluations without a better dev loss; 0: never
    max_train_minutes: float = 0         # wall-clock limit of this run (fairseq's
                                         # --stop-time-hours); 0: none

    def __post_init__(self):
        negative = [f.name for f in dataclasses.fields(self)
                    if isinstance(getattr(self, f.name), (int, float))
                    and not isinstance(getattr(self, f.name), bool) and getattr(self, f.name) < 0]
        if negative:
            raise T2TError(f"Training options must not be negative: {', '.join(negative)}.")


@dataclasses.dataclass
class TrainResult:
    step: int
    loss: float                          # of the last step; nan if no step ran in this call
    interrupted: bool
    eval_metrics: Dict[str, float]
    tokens: Optional[Dict[str, int]] = None  # `tokens_seen` counts since step `tokens_from`
    tokens_from: int = 0                     # > 0: resumed from a checkpoint without counts


def accumulation_steps(hp: HParams, num_replicas: int) -> int:
    """Micro-batches per optimizer step so that a step sees ~hp.tokens_per_step tokens."""
    if not hp.tokens_per_step:
        return 1
    return max(1, math.ceil(hp.tokens_per_step / (hp.batch_size * num_replicas)))
