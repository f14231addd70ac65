"""TF_CONFIG for MultiWorkerMirroredStrategy: one JSON value per worker.

    tf_configs(["host1:2222", "host2:2222"])
    # -> ['{"cluster": {"worker": ["host1:2222", "host2:2222"]}, "task": {"type": "worker", "index": 0}}', ...]

Worker 0 is the chief (it writes checkpoints, summaries and `best/`), as in
tensor2tensor's t2t-make-tf-configs without parameter servers: synchronous
all-reduce training has only workers.
"""

import json
import re
from typing import List, Sequence

from t2t_lite.errors import T2TError

_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def parse_workers(text: str) -> List[str]:
    """"host1:2222,host2:2222" -> ["host1:2222", "host2:2222"].

    Raises:
      T2TError: an empty list, an address without a valid port, or a duplicate.
    """
    workers = [w.strip() for w in text.split(",") if w.strip()]
    if not workers:
        raise T2TError("--workers is empty: give host:port of each worker, comma-separated.")
    for worker in workers:
        match = _ADDRESS.match(worker)
        if not match or not 0 < int(match.group(2)) < 65536:
            raise T2TError(f"Worker address {worker!r} is not host:port (port 1-65535).")
    duplicates = sorted({w for w in workers if workers.count(w) > 1})
    if duplicates:
        raise T2TError(f"Worker address {duplicates[0]!r} is listed twice.")
    return workers


def tf_configs(workers: Sequence[str]) -> List[str]:
    """The TF_CONFIG value of each worker, in order (compact JSON, one line each)."""
    cluster = {"worker": list(workers)}
    return [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}},
                       separators=(",", ":")) for i in range(len(workers))]
