"""One trainer per model directory: `with TrainingLock(model_dir): ...`.

The lock is the kernel's: an exclusive `flock` on the file `trainer.lock`,
held for as long as the trainer runs and released by the kernel when the
process ends in any way (SIGKILL included). So taking the lock is one atomic
step, and there is no stale lock to race over: of several trainers starting
at the same moment, or taking over a lock left by a killed one, exactly one
gets it. The file also holds {"host", "pid"} of the holder, for the refusal
message. Written with the standard library only (no TensorFlow), because a
trainer takes it before anything else.

A record of another host in a file whose `flock` is free cannot be checked
(the directory may be shared by machines whose locks this kernel does not
see): that is refused, with the advice to delete the file if that trainer
is gone. Multi-worker training takes the lock on the chief only (the
workers share the directory).
"""

import fcntl
import json
import os
import socket
import time

from t2t_lite.errors import T2TError

LOCK_FILE = "trainer.lock"


class TrainingLock:
    """The exclusive right to train in one model directory (a context manager)."""

    def __init__(self, model_dir: str, log=print):
        self.path = os.path.join(model_dir, LOCK_FILE)
        self.log = log
        self.owner = {"host": socket.gethostname(), "pid": os.getpid()}
        self._fd = None

    def __enter__(self) -> "TrainingLock":
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_record(fd, wait_seconds=1.0)  # the holder may be writing it
                os.close(fd)
                raise T2TError(f"Another t2t-trainer ({_describe(holder)}) is training in "
                               f"{os.path.dirname(self.path)}; wait for it or stop it.") from None
            if not _still_at(fd, self.path):
                os.close(fd)  # a releasing holder removed the file we opened: try again
                continue
            try:
                self._take(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return self
        raise T2TError(f"Could not take the lock {self.path}; other trainers keep starting.")

    def _take(self, fd: int) -> None:
        """With the flock held: checks the previous record, then writes ours."""
        previous = _read_record(fd)
        if previous and previous.get("host") != self.owner["host"]:
            raise T2TError(
                f"{self.path} names a t2t-trainer of another host ({_describe(previous)}), "
                "which cannot be checked from here; if it is gone, delete the file.")
        if previous is not None:  # left by a trainer that ended without releasing it
            self.log(f"Taking over the lock {self.path} of a trainer that is gone "
                     f"({previous or 'unreadable'}).")
        record = json.dumps(self.owner).encode("utf-8")
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        os.fsync(fd)

    def __exit__(self, *exc) -> None:
        if self._fd is None:
            return
        # Removed while still held, so a trainer that opened this file meanwhile
        # finds it no longer at the path once it gets the flock, and tries again.
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        os.close(self._fd)
        self._fd = None


def _read_record(fd: int, wait_seconds: float = 0.0):
    """The holder record in the lock file: a dict, {} if unreadable, None if empty
    (after waiting up to `wait_seconds` for it to be written)."""
    deadline = time.monotonic() + wait_seconds
    raw = os.pread(fd, 4096, 0)
    while not raw.strip() and time.monotonic() < deadline:
        time.sleep(0.01)
        raw = os.pread(fd, 4096, 0)
    if not raw.strip():
        return None
    try:
        record = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _still_at(fd: int, path: str) -> bool:
    """Whether the open file `fd` is still the file named `path`."""
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _describe(holder) -> str:
    if not holder:
        return "starting"
    return f"pid {holder.get('pid')} on {holder.get('host')}"
