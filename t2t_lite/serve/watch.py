"""t2t-server --watch: serve the highest complete version once it is loaded and warmed up.

    watcher = Watcher(checkpoint_source("runs/ende", average=5), load_engine, "ende",
                      interval_s=5.0)
    await watch(state, watcher, stop)   # until `stop` is set (server.serve does this)
    await stop_watching(watcher, 30.0)  # a load in progress: awaited, or abandoned

Every `interval_s` the watcher asks its source for the highest complete version:

  - a model directory (`checkpoint_source`): the newest checkpoint its
    `checkpoint` state file lists with an index (the trainer's TensorFlow
    writes the data files, then the index, then the state file, so a listed
    checkpoint is complete: `t2t_lite.checkpoints`); the version is its step
    (with --checkpoint_average=K, the newest K are averaged). A `best/` is
    replaced as a whole (`atomic.write_dir`), and read through
    `atomic.readable_dir` meanwhile, so a newer `best/` is a newer checkpoint;
  - an export directory (`export_source`): the largest integer-named version
    holding a saved_model.pb (t2t-exporter renames a version into place
    complete).

The rule is TF Serving's: the highest available version is served. A version
other than the one served is loaded and warmed up (one sentence translated)
on a thread of its own, off the request path, while the old one serves; only
then does `ServerState.switch` make it the engine of the requests received
from then on. Usually it is higher (a newer checkpoint or export); a lower one
means the served version is gone (its export directory deleted, or its model
directory retrained from scratch), and the server rolls back to it. Requests
received before a switch finish on the old engine, and their answers say its
version. A version is its number: files rewritten under the served number are
not loaded again. A version that fails to load or warm up is not tried again
until its files change; the old one keeps serving, as it does when the source
offers no version at all. Each of these decisions is one log line.

A load in progress when the server is told to stop does not hold up draining:
`watch` returns at once, the load skips its warm-up, and `stop_watching` waits
for it at most the drain timeout; after that it is abandoned (its thread is a
daemon: the process exits without it).
"""

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import threading
from typing import Callable, Optional, Tuple

import tensorflow as tf

from t2t_lite import checkpoints
from t2t_lite.serve import saved_model_engine

LOG = logging.getLogger("t2t_lite.serve")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """The highest complete version a source offers."""

    version: int
    files: Tuple  # (path, size, mtime) of each of its files: a changed file is a new candidate


def _files(paths) -> Tuple:
    found = []
    for path in sorted(paths):
        try:
            stat = os.stat(path)
        except OSError:
            continue  # deleted meanwhile: the load will tell
        found.append((path, stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def checkpoint_source(model_dir: str, average: int = 1) -> Callable[[], Candidate]:
    """The newest checkpoint(s) of `model_dir` (`checkpoints.select_checkpoints`)."""
    def newest() -> Candidate:
        used = checkpoints.select_checkpoints(model_dir, "", average)
        paths = [f for prefix in used for f in tf.io.gfile.glob(prefix + ".*")]
        return Candidate(max(map(checkpoints.checkpoint_step, used)), _files(paths))
    return newest


def export_source(export_dir: str) -> Callable[[], Candidate]:
    """The newest version of `export_dir` (`saved_model_engine.newest_version`)."""
    def newest() -> Candidate:
        version, path = saved_model_engine.newest_version(export_dir)
        paths = [os.path.join(root, name) for root, _, names in os.walk(path) for name in names]
        return Candidate(version, _files(paths))
    return newest


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


class Watcher:
    """Finds, loads and warms up the highest version when it is not the one served
    (blocking; `watch` runs `check` on a thread of its own).

    Args:
      newest: the source: () -> the highest complete `Candidate` (raises T2TError when
        there is none).
      load: () -> the engine of the highest version, not yet warmed up (its `version`
        may differ from the candidate's: a trainer saved again meanwhile).
      model_name: for the log lines.
      interval_s: seconds between two looks at the source.
    """

    def __init__(self, newest: Callable[[], Candidate], load: Callable[[], object],
                 model_name: str, interval_s: float = 5.0):
        self.newest = newest
        self.load = load
        self.model_name = model_name
        self.interval_s = interval_s
        self.loading: Optional[int] = None  # the version being loaded, for the log lines
        self.checking: Optional[concurrent.futures.Future] = None  # the last `start_check`
        self._failed = set()        # candidates that did not load (or loaded as the served
                                    # version): not tried again
        self._last_problem = None   # the last source error logged (each logged once)
        self._stopping = threading.Event()

    def check(self, served: int):
        """The warmed-up engine of the highest version when it is not `served`, or None
        (the served one is the highest, none is offered, it failed, or `stop` was
        called; each decision logged in one line)."""
        candidate = self._candidate(served)
        if candidate is None:
            return None
        self._announce(candidate.version, served)
        self.loading = candidate.version
        try:
            engine = self._load_and_warm_up(candidate, served)
        finally:
            self.loading = None
        if engine is not None and engine.version == served:
            self._failed.add(candidate)  # files rewritten to the served version meanwhile
            LOG.warning("watch: version %s of model %r loaded as version %s, the one served; "
                        "still serving it", candidate.version, self.model_name, served)
            return None
        return engine

    def start_check(self, served: int) -> concurrent.futures.Future:
        """`check(served)` on a daemon thread of its own: a server told to stop does not
        wait at exit for a load it gave up on. Returns (and keeps, as `checking`) the
        future of its result."""
        future = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # cancelled before it began: the server is stopping
            try:
                future.set_result(self.check(served))
            except BaseException as e:  # pylint: disable=broad-except
                future.set_exception(e)
        self.checking = future
        threading.Thread(target=run, name=f"t2t-watch-{self.model_name}", daemon=True).start()
        return future

    def stop(self) -> None:
        """No more looks; a load in progress skips its warm-up and serves nothing."""
        self._stopping.set()

    def _candidate(self, served: int) -> Optional[Candidate]:
        """The source's highest version if it is to be loaded, else None."""
        if self._stopping.is_set():
            return None
        try:
            candidate = self.newest()
        except Exception as e:  # pylint: disable=broad-except
            if _first_line(e) != self._last_problem:
                self._last_problem = _first_line(e)
                LOG.warning("watch: no version to check (%s); still serving version %s",
                            self._last_problem, served)
            return None
        self._last_problem = None
        if candidate.version == served or candidate in self._failed:
            return None
        return candidate

    def _announce(self, version: int, served: int) -> None:
        if version > served:
            LOG.info("watch: loading version %s of model %r (serving %s)", version,
                     self.model_name, served)
        else:
            LOG.info("watch: version %s of model %r is no longer available; loading version "
                     "%s, the highest available", served, self.model_name, version)

    def _load_and_warm_up(self, candidate: Candidate, served: int):
        """The candidate's warmed-up engine, or None (failed, logged; or stopping)."""
        try:
            engine = self.load()
            if self._stopping.is_set():
                return None  # `watch` logged the stop
            engine.warm_up()
            return engine
        except Exception as e:  # pylint: disable=broad-except
            self._failed.add(candidate)
            LOG.error("watch: version %s of model %r failed to load (%s); still serving "
                      "version %s", candidate.version, self.model_name, _first_line(e), served)
            return None


async def watch(state, watcher: Watcher, stop: asyncio.Event) -> None:
    """Every `watcher.interval_s` until `stop`: switches `state` (`app.ServerState`) to
    the version `watcher` loaded and warmed up. Returns as soon as `stop` is set, even
    while a version loads (`stop_watching` then waits for it)."""
    while not await _stopped_within(stop, watcher.interval_s):
        served = state.engine.version
        looking = asyncio.wrap_future(watcher.start_check(served))
        if await _stopped_before(stop, looking):
            looking.cancel()  # the result, if it ever comes, is dropped
            if watcher.loading is not None:
                LOG.info("watch: stopping while version %s of model %r loads; it will not "
                         "be served", watcher.loading, watcher.model_name)
            break
        engine = looking.result()
        if engine is not None:
            state.switch(engine)  # on the loop's thread, between two requests' starts
            LOG.info("watch: serving version %s of model %r (was %s)", engine.version,
                     state.config.model_name, served)
    watcher.stop()


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
        return True
    except asyncio.TimeoutError:
        return False


async def _stopped_before(stop: asyncio.Event, work: asyncio.Future) -> bool:
    """Waits for `work` or `stop`, whichever comes first; True if `stop` is set."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([work, stopping], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    return stop.is_set()


async def stop_watching(watcher: Watcher, timeout_s: float) -> None:
    """Stops `watcher` and waits at most `timeout_s` for a load in progress, which is
    abandoned after that (logged in one line)."""
    watcher.stop()
    checking = watcher.checking
    if checking is None or checking.done():
        return
    done, _ = await asyncio.wait([asyncio.wrap_future(checking)], timeout=timeout_s)
    if not done:
        what = "a look for a new version" if watcher.loading is None else \
            f"the load of version {watcher.loading}"
        LOG.warning("watch: %s of model %r still running after %.0f s (--drain_timeout_s); "
                    "exiting without it", what, watcher.model_name, timeout_s)
