"""t2t-server as its own process: started, polled until ready, its CPU time and
batch histogram read, stopped."""

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from typing import Dict, Optional, Sequence

from .programs import BenchError, program

START_TIMEOUT_S = 600  # a first CTranslate2 conversion included
LISTENING = re.compile(r"on (http://\S+:\d+) \((\d+) batch worker")


def batch_histogram(url: str) -> Dict[str, float]:
    """The `t2t_server_batch_sentences` histogram of the server's /metrics:
    {"count", "sum", "le=<bound>": cumulative count, ...}."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode("utf-8")
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name == "t2t_server_batch_sentences":
            for sample in family.samples:
                key = sample.name.rsplit("_", 1)[1]
                found[f"le={sample.labels['le']}" if key == "bucket" else key] = sample.value
    return found


def histogram_delta(before: Dict[str, float], after: Dict[str, float]) -> dict:
    """Batches, their mean size and per-bucket counts (not cumulative) between two reads."""
    count = after.get("count", 0) - before.get("count", 0)
    buckets, below = {}, 0.0
    for key in (k for k in after if k.startswith("le=")):
        cumulative = after[key] - before.get(key, 0)
        if cumulative > below:
            buckets[key[3:]] = cumulative - below
        below = cumulative
    return {"batches": count,
            "mean_batch": (after.get("sum", 0) - before.get("sum", 0)) / count if count else None,
            "batch_sizes": buckets}


class ServerProcess:
    """`t2t-server --port=0` with `flags`, its stderr in `log_path` (not read while
    the load runs: the client's CPU time stays its own)."""

    def __init__(self, output_dir: str, decode_hparams: str, checkpoint_average: int,
                 flags: Sequence[str], log_path: str):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                program("t2t_server") + [f"--output_dir={output_dir}", "--model_name=bench",
                                         f"--decode_hparams={decode_hparams}",
                                         f"--checkpoint_average={checkpoint_average}",
                                         "--port=0", *flags],
                stdout=subprocess.DEVNULL, stderr=log)
        self.url: Optional[str] = None
        self.workers = 0

    def log_tail(self, lines: int = 5) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Waits for the start line (URL, batch workers), then for /readyz 200."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"t2t-server exited with {self.process.returncode}: "
                                 + self.log_tail())
            if self.url is None:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    found = LISTENING.search(f.read())
                if found:
                    self.url, self.workers = found.group(1), int(found.group(2))
            elif self._ready():
                return
            time.sleep(0.2)
        raise BenchError(f"t2t-server not ready after {timeout_s:.0f} s: " + self.log_tail())

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (/proc/PID/stat)."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, then its exit code (killed if it has not exited by `timeout_s`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
