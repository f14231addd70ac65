"""`best/` in a training run's model directory: the weights of the best dev BLEU so far.

`best/` is a weights-only model directory (`model_dir_writer.write_weights`) with
best.json ({"bleu", "step"}) beside the weights. The trainer replaces it whole
(`atomic.write_dir`) each time the dev BLEU improves; readers read the previous
copy while it is replaced, or after a kill cut a replacement short, until the
trainer's next start finishes it (`recover_best`).
"""

import json
import os
from typing import Any, Dict, Optional

from t2t_lite import atomic
from t2t_lite.model_dir import ModelDir
from t2t_lite.model_dir_writer import write_weights

BEST_DIR, BEST_FILE = "best", "best.json"  # the trainer's best dev BLEU so far


def read_best(model_dir: str) -> Optional[Dict[str, Any]]:
    """`model_dir/best/best.json` ({"bleu", "step"}), or None before any; that
    of the previous `best/` while it is being replaced (`atomic.readable_dir`)."""
    path = os.path.join(atomic.readable_dir(os.path.join(model_dir, BEST_DIR)), BEST_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def recover_best(model_dir: str) -> None:
    """Finishes a replacement of `model_dir/best` that a kill of the trainer cut
    short (`atomic.recover_dir`). The trainer runs this when it starts, so that
    `best/` is there again and holds the best BLEU that was to be kept."""
    atomic.recover_dir(os.path.join(model_dir, BEST_DIR))


def write_best(model_dir: str, model, step: int, bleu: float) -> None:
    """Replaces `model_dir/best` with `model`'s weights (a weights-only model
    directory, `write_weights`) and best.json recording `bleu` and `step`.

    The whole directory is written under a temporary name and renamed into
    place (`atomic.write_dir`), so best.json always describes the weights
    beside it, even if the trainer is killed while it writes them.
    """
    source = ModelDir.open(model_dir)  # the training run's metadata, copied into best/

    def fill(tmp: str) -> None:
        write_weights(source, tmp, model, step)
        atomic.write_text(os.path.join(tmp, BEST_FILE), json.dumps({"bleu": bleu, "step": step}))

    atomic.write_dir(os.path.join(model_dir, BEST_DIR), "best", fill)
