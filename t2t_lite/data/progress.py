"""Datagen's progress lines: what is done, how fast, and when it will end.

A long datagen step (reading the vocabulary sample, learning the vocabulary,
encoding a split, writing its shards) reports about every `EVERY_SECONDS`
through the `log` callable of `generate_data`, in the trainer's style::

      train: encoding 1,200,000 of 4,500,000 pairs (27%)  10,234 pairs/s  212.3 MB written
      elapsed 117s  ETA 322s

(one line). The clock is injectable so that tests need no sleeping.

A step's own lines come when it reports its count, so one slow batch, a chunk
written to disk or the step between two phases could stretch the silence past
10 s; `keep_alive` wraps the whole run's log and, from a thread, says that the
run is still working whenever no line has been printed for `KEEP_ALIVE_SECONDS`,
so that no two lines are ever more than 10 seconds apart (bench/datagen_scale.py
measures the longest gap).
"""

import contextlib
import threading
import time
from typing import Callable, Iterator, Optional

Clock = Callable[[], float]

EVERY_SECONDS = 9.0        # a step's own progress lines
KEEP_ALIVE_SECONDS = 9.0   # silence before `keep_alive` speaks (checked every 0.25 s)


class Progress:
    """Time-based progress lines for one step counting `unit`s.

    Args:
      log: receives each line.
      label: what is being done, e.g. "  train: encoding".
      total: the number of units when known (adds the share done and an ETA).
      unit: what is counted, e.g. "pairs".
      clock: seconds, monotonic (`time.monotonic`; a fake one in tests).
      every: seconds between lines.
    """

    def __init__(self, log: Callable[[str], None], label: str, total: Optional[int] = None,
                 unit: str = "pairs", clock: Clock = time.monotonic,
                 every: float = EVERY_SECONDS):
        self.log, self.label, self.total, self.unit = log, label, total, unit
        self.clock, self.every = clock, every
        self.start = self.last = clock()
        self.start_done: Optional[int] = None  # units done before this run (a resume)

    def update(self, done: int, bytes_written: int = 0) -> None:
        """Logs a line if `every` seconds have passed since the last one."""
        if self.start_done is None:
            self.start_done = done
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        rate = (done - self.start_done) / max(elapsed, 1e-9)
        line = f"{self.label} {done:,}"
        if self.total:
            line += f" of {self.total:,} {self.unit} ({100 * done / self.total:.0f}%)"
        else:
            line += f" {self.unit}"
        line += f"  {rate:,.0f} {self.unit}/s"
        if bytes_written:
            line += f"  {bytes_written / 1e6:,.1f} MB written"
        line += f"  elapsed {elapsed:.0f}s"
        if self.total and rate > 0:
            line += f"  ETA {max(self.total - done, 0) / rate:.0f}s"
        self.log(line)


@contextlib.contextmanager
def keep_alive(log: Callable[[str], None],
               every: float = KEEP_ALIVE_SECONDS) -> Iterator[Callable[[str], None]]:
    """Yields a log that passes lines to `log` and remembers when it last did;
    while the block runs, a thread logs `{step}: still working, {n}s elapsed`
    (`step`: the part of the last line before its first colon, e.g. "  train")
    whenever `every` seconds have passed without a line."""
    lock = threading.Lock()
    start = time.monotonic()
    last = {"time": start, "line": ""}
    stop = threading.Event()

    def logged(line: str) -> None:
        with lock:
            last["time"], last["line"] = time.monotonic(), line
        log(line)

    def watch() -> None:
        while not stop.wait(min(0.25, every / 4)):
            with lock:
                silent = time.monotonic() - last["time"] >= every
                step = last["line"].split(":")[0] if ":" in last["line"] else "  datagen"
            if silent:
                logged(f"{step}: still working, {time.monotonic() - start:.0f}s elapsed")

    thread = threading.Thread(target=watch, name="datagen-keep-alive", daemon=True)
    thread.start()
    try:
        yield logged
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def heartbeat(log: Callable[[str], None], label: str,
              every: float = EVERY_SECONDS) -> Iterator[None]:
    """Logs `{label}: {n}s elapsed` every `every` seconds while the block runs,
    from a thread (for one long call, such as SentencePiece's training, that
    reports nothing itself)."""
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            log(f"{label}: {time.monotonic() - start:.0f}s elapsed")

    thread = threading.Thread(target=beat, name="datagen-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
