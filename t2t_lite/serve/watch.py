"""t2t-server --watch: serve a newer version once it is complete, loaded and warmed up.

    watcher = Watcher(checkpoint_source("runs/ende", average=5), load_engine, "ende",
                      interval_s=5.0)
    await watch(state, watcher, stop)   # until `stop` is set (server.serve does this)

Every `interval_s` the watcher asks its source for the newest complete version:

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

A version larger than the one served is loaded and warmed up (one sentence
translated) on a thread of its own, off the request path, while the old one
serves; only then does `ServerState.switch` make it the engine of the requests
received from then on. Requests received before finish on the old engine, and
their answers say its version. A version that fails to load or warm up is
logged in one line and not tried again until its files change; the old one
keeps serving.
"""

import asyncio
import dataclasses
import logging
import os
from typing import Callable, Tuple

import tensorflow as tf

from t2t_lite import checkpoints
from t2t_lite.serve import saved_model_engine

LOG = logging.getLogger("t2t_lite.serve")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """The newest complete version a source offers."""

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
    """Finds, loads and warms up newer versions (blocking; `watch` runs it on a thread).

    Args:
      newest: the source: () -> the newest complete `Candidate` (raises T2TError when
        there is none).
      load: () -> the engine of the newest version, not yet warmed up (its `version`
        may be newer than the candidate's: a trainer saved again meanwhile).
      model_name: for the log lines.
      interval_s: seconds between two looks at the source.
    """

    def __init__(self, newest: Callable[[], Candidate], load: Callable[[], object],
                 model_name: str, interval_s: float = 5.0):
        self.newest = newest
        self.load = load
        self.model_name = model_name
        self.interval_s = interval_s
        self._failed = set()        # candidates that did not load (or were not newer):
                                    # not tried again
        self._last_problem = None   # the last source error logged (each logged once)

    def check(self, served: int):
        """The warmed-up engine of a version newer than `served`, or None (no newer
        complete version, or it failed: logged in one line)."""
        try:
            candidate = self.newest()
        except Exception as e:  # pylint: disable=broad-except
            if _first_line(e) != self._last_problem:
                self._last_problem = _first_line(e)
                LOG.warning("watch: no version to check (%s); still serving version %s",
                            self._last_problem, served)
            return None
        self._last_problem = None
        if candidate.version <= served or candidate in self._failed:
            return None
        LOG.info("watch: loading version %s of model %r", candidate.version, self.model_name)
        try:
            engine = self.load()
            engine.warm_up()
        except Exception as e:  # pylint: disable=broad-except
            self._failed.add(candidate)
            LOG.error("watch: version %s of model %r failed to load (%s); still serving "
                      "version %s", candidate.version, self.model_name, _first_line(e), served)
            return None
        if engine.version <= served:  # its files were replaced by older ones meanwhile
            self._failed.add(candidate)
            return None
        return engine


async def watch(state, watcher: Watcher, stop: asyncio.Event) -> None:
    """Every `watcher.interval_s` until `stop`: switches `state` (`app.ServerState`) to
    a newer version that `watcher` loaded and warmed up."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            await asyncio.wait_for(stop.wait(), watcher.interval_s)
            return
        except asyncio.TimeoutError:
            pass
        served = state.engine.version
        engine = await loop.run_in_executor(None, watcher.check, served)
        if engine is not None and not stop.is_set():
            state.switch(engine)  # on the loop's thread, between two requests' starts
            LOG.info("watch: serving version %s of model %r (was %s)", engine.version,
                     state.config.model_name, served)
