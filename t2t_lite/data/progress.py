"""Datagen's progress lines: what is done, how fast, and when it will end.

A long datagen step (reading the vocabulary sample, learning the vocabulary,
encoding a split, writing its shards) reports at least every `every` seconds
through the `log` callable of `generate_data`, in the trainer's style::

      train: encoding 1,200,000 of 4,500,000 pairs (27%)  10,234 pairs/s  212.3 MB written
      elapsed 117s  ETA 322s

(one line). The clock is injectable so that tests need no sleeping.
"""

import contextlib
import threading
import time
from typing import Callable, Iterator, Optional

Clock = Callable[[], float]

EVERY_SECONDS = 10.0


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
