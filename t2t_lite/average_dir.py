"""An average of checkpoints as a model directory of its own (t2t-avg-checkpoints).

`write_average` fills a weights-only model directory (`model_dir_writer.write_weights`)
with the mean of a model directory's checkpoints and average.json (where they
came from), under a hidden temporary name renamed into place when complete
(`atomic.write_dir`): readers never see an average half-written.
"""

import json
import os
from typing import Any, Dict, List, Optional, Tuple

from t2t_lite import atomic, averaging, checkpoints
from t2t_lite.errors import T2TError
from t2t_lite.model_dir import ModelDir
from t2t_lite.model_dir_writer import write_weights

AVERAGE_FILE = "average.json"  # in a directory written by t2t-avg-checkpoints


def write_average(model_dir: ModelDir, avg_dir: str, last: int = 5,
                  paths: Optional[List[str]] = None,
                  record: Optional[Dict[str, Any]] = None) -> Tuple[str, List[str]]:
    """Averages checkpoints of `model_dir` into the model directory `avg_dir`.

    The average is written in full into a hidden temporary directory beside
    `avg_dir` and renamed to `avg_dir` when complete, replacing a previous
    average there: `avg_dir` is at every moment absent, the previous average
    or the new one, never half-written, even if this process is killed.
    Temporary directories left by killed runs are removed first.

    Args:
      last: average the last `last` complete checkpoints (a trainer may be
        writing `model_dir`), unless `paths` names them.
      paths: the checkpoint prefixes to average.
      record: more fields for average.json (how `paths` were chosen).

    Returns:
      (the written checkpoint prefix `avg_dir/ckpt-<last step>`, the prefixes averaged).

    Raises:
      T2TError: `avg_dir` is the model directory, or exists and is not an
        average (no average.json); no checkpoints; checkpoints of another model.
    """
    avg_dir = os.path.abspath(avg_dir)
    if avg_dir == os.path.abspath(model_dir.path):
        raise T2TError("--avg_dir must differ from the model directory.")
    _check_replaceable(avg_dir)
    model = model_dir.build_model()
    if paths:
        averaging.average_into(model, paths)
    else:
        paths = averaging.restore_latest(model, model_dir.path, "", last)
    step = checkpoints.checkpoint_step(paths[-1])

    def fill(tmp: str) -> None:
        write_weights(model_dir, tmp, model, step)
        atomic.write_text(os.path.join(tmp, AVERAGE_FILE), json.dumps(
            {"model_dir": os.path.abspath(model_dir.path), "checkpoints": paths, **(record or {})},
            indent=2))

    atomic.write_dir(avg_dir, "avg", fill)
    return os.path.join(avg_dir, f"ckpt-{step}"), paths


def _check_replaceable(avg_dir: str) -> None:
    """Refuses an `avg_dir` that exists and holds anything but an earlier average."""
    if not os.path.lexists(avg_dir):
        return
    if not os.path.isdir(avg_dir):
        raise T2TError(f"--avg_dir {avg_dir} exists and is not a directory.")
    if os.listdir(avg_dir) and not os.path.exists(os.path.join(avg_dir, AVERAGE_FILE)):
        raise T2TError(f"--avg_dir {avg_dir} exists and was not written by t2t-avg-checkpoints "
                       f"(no {AVERAGE_FILE}): choose a new directory, or delete it.")
