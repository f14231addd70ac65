"""t2t-server --watch around its versions' lives: SIGTERM during a slow load drains at
once; the highest available version is served, a lower one when the served one is
gone (a rollback); an engine switched away from is freed once no batch uses it.

Engines here have no model (`FakeEngine`: "v<version>: <text>"), and a load or a
batch waits for an event the test sets, so each state is reached by events, not
by timing.
"""

import asyncio
import gc
import logging
import os
import shutil
import signal
import socket
import threading
import time
import weakref

import pytest

from serving import BLOCK, MODEL_NAME, RunningServer, http
from t2t_lite.bin import t2t_server
from t2t_lite.serve.app import ServerState
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import Translation
from t2t_lite.serve.payloads import ApiError
from t2t_lite.serve.saved_model_engine import SAVED_MODEL_FILE, newest_version
from t2t_lite.serve.watch import Candidate, Watcher, export_source

POLL_S = 0.05
CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=4, batch_timeout_ms=1,
                      batch_workers=2)


class FakeEngine:
    """An engine without a model: "v<version>: <text>" for each text (an answer tells
    which version translated it); a batch holding BLOCK waits for `release`."""

    def __init__(self, version: int):
        self.version = version
        self.warmed_up = False
        self.blocked, self.release = threading.Event(), threading.Event()

    def token_lengths(self, texts):
        return [len(text.split()) + 1 for text in texts]

    def blank(self) -> Translation:
        return Translation.blank(1)

    def warm_up(self) -> None:
        self.warmed_up = True

    def translate(self, texts):
        if BLOCK in texts:
            self.blocked.set()
            assert self.release.wait(60)
        return [Translation(f"v{self.version}: {t}", [f"v{self.version}: {t}"], [-1.0])
                for t in texts]


class SlowLoad:
    """A watcher's `load`: a `FakeEngine` of `version`, returned once `release` is set."""

    def __init__(self, version: int):
        self.version = version
        self.started, self.release, self.returned = (threading.Event(), threading.Event(),
                                                     threading.Event())
        self.engines = []

    def __call__(self) -> FakeEngine:
        self.started.set()
        assert self.release.wait(60)
        self.engines.append(FakeEngine(self.version))
        self.returned.set()
        return self.engines[-1]


def wait_for(condition, timeout_s: float = 30) -> bool:
    """Polls `condition` until true (True) or `timeout_s` (False)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def refused(url: str) -> bool:
    """True once nothing listens at `url` any more."""
    try:
        http(url, timeout=5)
    except OSError:
        return True
    return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def messages(caplog, logger: str = "t2t_lite.serve"):
    return [r.getMessage() for r in caplog.records if r.name == logger]


# -- SIGTERM while a version loads ------------------------------------------------------

def test_sigterm_during_a_slow_load_drains_at_once_and_awaits_the_load(caplog):
    """t2t-server's own signal handling (`_serve`, on this main thread): SIGTERM while
    --watch loads version 2. The listening socket closes and readiness turns 503 while
    the load is still held; the load is then awaited (within --drain_timeout_s=60),
    not warmed up, not served, and the server exits 0."""
    assert threading.current_thread() is threading.main_thread()  # signal handlers need it
    load = SlowLoad(2)
    state = ServerState.create(FakeEngine(1), ServerConfig(
        model_name=MODEL_NAME, drain_timeout_s=60))
    watcher = Watcher(lambda: Candidate(2, ()), load, MODEL_NAME, POLL_S)
    url = f"http://127.0.0.1:{free_port()}"
    seen = {}

    def terminate_during_the_load():
        try:
            assert load.started.wait(60)
            seen["ready before"] = http(url + "/readyz")[0]
            os.kill(os.getpid(), signal.SIGTERM)
            seen["refused while loading"] = (wait_for(lambda: refused(url + "/readyz"), 20)
                                             and not load.returned.is_set())
            try:
                state.check_ready()  # what /readyz answers
            except ApiError as e:
                seen["readiness"] = (e.status, e.code)
        finally:
            load.release.set()
    helper = threading.Thread(target=terminate_during_the_load)
    previous = signal.getsignal(signal.SIGTERM)
    with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
        helper.start()
        try:
            code = asyncio.run(t2t_server._serve(  # pylint: disable=protected-access
                state, "127.0.0.1", int(url.rsplit(":", 1)[1]), watcher))
        finally:
            signal.signal(signal.SIGTERM, previous)
            load.release.set()
            helper.join(60)
    assert seen == {"ready before": 200, "refused while loading": True,
                    "readiness": (503, "shutting_down")}
    assert code == 0
    assert [e.warmed_up for e in load.engines] == [False] and state.engine.version == 1
    lines = messages(caplog)
    assert "watch: loading version 2 of model 'ende' (serving 1)" in lines
    assert lines[-3:] == ["watch: stopping while version 2 of model 'ende' loads; it will "
                          "not be served", "draining: up to 60 s for 0 queued sentences",
                          "stopped"]


def test_a_load_longer_than_the_drain_timeout_is_abandoned(caplog):
    load = SlowLoad(2)
    config = ServerConfig(model_name=MODEL_NAME, drain_timeout_s=1)
    server = RunningServer(FakeEngine(1), config,
                           Watcher(lambda: Candidate(2, ()), load, MODEL_NAME, POLL_S))
    try:
        with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
            server.start()
            assert load.started.wait(60)
            server.request_stop()
            assert server.join(30), "the server waited for the load beyond the drain timeout"
        assert server.code == 0 and not load.returned.is_set()
        assert messages(caplog)[-3:] == [
            "draining: up to 1 s for 0 queued sentences",
            "watch: the load of version 2 of model 'ende' still running after 1 s "
            "(--drain_timeout_s); exiting without it", "stopped"]
    finally:
        load.release.set()  # the abandoned load's thread ends; nothing waits for it
        if not server.join(60):
            pytest.fail("the server did not stop")


# -- Which version is served ------------------------------------------------------------

def write_versions(export_dir, *versions) -> None:
    """Version directories as the export source sees them (a saved_model.pb each)."""
    for version in versions:
        os.makedirs(export_dir / str(version))
        (export_dir / str(version) / SAVED_MODEL_FILE).write_bytes(b"")


def translate(server, text: str):
    status, _, body = http(server.url + "/v1/translate", {"inputs": [text]})
    assert status == 200, body
    return body["model"]["version"], body["outputs"][0]


def test_an_export_rolled_back_serves_the_highest_version_left(tmp_path, caplog):
    """Versions 1-3; 3 deleted: 2 is served. 4 written: 4. All deleted: 4 keeps serving,
    told once. Each decision is one log line."""
    export_dir = tmp_path / "ende"
    write_versions(export_dir, 1, 2, 3)
    looks = []

    def source():
        looks.append(1)
        return export_source(str(export_dir))()

    def load():
        return FakeEngine(newest_version(str(export_dir))[0])
    server = RunningServer(load(), CONFIG, Watcher(source, load, MODEL_NAME, POLL_S))
    with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
        server.start()
        try:
            assert translate(server, "eins") == (3, "v3: eins")
            shutil.rmtree(export_dir / "3")
            assert wait_for(lambda: server.state.engine.version == 2, 20), "not rolled back"
            assert translate(server, "zwei") == (2, "v2: zwei")
            write_versions(export_dir, 4)
            assert wait_for(lambda: server.state.engine.version == 4, 20)
            for version in (1, 2, 4):
                shutil.rmtree(export_dir / str(version))
            seen = len(looks)
            assert wait_for(lambda: len(looks) >= seen + 3)
            assert translate(server, "drei") == (4, "v4: drei")
        finally:
            server.stop()
    watched = [m for m in messages(caplog) if m.startswith("watch:")]
    assert watched == [
        "watch: version 3 of model 'ende' is no longer available; loading version 2, the "
        "highest available",
        "watch: serving version 2 of model 'ende' (was 3)",
        "watch: loading version 4 of model 'ende' (serving 2)",
        "watch: serving version 4 of model 'ende' (was 2)",
        f"watch: no version to check (T2TError: No SavedModel version in '{export_dir}' (a "
        f"subdirectory named by an integer, holding {SAVED_MODEL_FILE}); write one with "
        f"t2t-exporter --export_dir={export_dir}.); still serving version 4"]


def test_a_model_retrained_from_scratch_is_served_and_each_decision_logged(caplog):
    """A model directory's newest checkpoint goes from step 5000 to 1000 (retrained
    from scratch): 1000 is served. The served version again: nothing loaded. A load
    that turns out to be the served version: one line, not tried again."""
    offered = [Candidate(1000, (("ckpt-1000.index", 1, 1),))]
    loads = []

    def load():
        loads.append(FakeEngine(offered[0].version if len(loads) != 1 else 1000))
        return loads[-1]
    watcher = Watcher(lambda: offered[0], load, MODEL_NAME)
    with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
        engine = watcher.check(5000)
        assert engine is not None, "the lower version was not loaded"
        assert (engine.version, engine.warmed_up) == (1000, True)
        assert watcher.check(1000) is None  # the served version: nothing to do
        offered[0] = Candidate(2000, (("ckpt-2000.index", 1, 1),))
        assert watcher.check(1000) is None  # its files were rewritten as 1000 meanwhile
        assert watcher.check(1000) is None  # not loaded again
    assert len(loads) == 2
    assert messages(caplog) == [
        "watch: version 5000 of model 'ende' is no longer available; loading version 1000, "
        "the highest available",
        "watch: loading version 2000 of model 'ende' (serving 1000)",
        "watch: version 2000 of model 'ende' loaded as version 1000, the one served; "
        "still serving it"]


# -- The engine switched away from is freed ----------------------------------------------

def test_the_first_engine_is_freed_once_no_batch_uses_it():
    """Version 1 translates a request, then holds a batch while the server switches to
    version 2: it stays while that batch runs, and is freed once it is answered."""
    first = FakeEngine(1)
    freed = weakref.ref(first)
    offered = [1]
    server = RunningServer(first, CONFIG, Watcher(lambda: Candidate(offered[0], ()),
                                                  lambda: FakeEngine(offered[0]), MODEL_NAME,
                                                  POLL_S))
    release, blocked = first.release, first.blocked
    del first
    server.start()
    try:
        assert translate(server, "eins") == (1, "v1: eins")  # a worker's last batch, then
        held_answer = []                                     # a worker holding one
        held = threading.Thread(target=lambda: held_answer.append(translate(server, BLOCK)))
        held.start()
        assert blocked.wait(30)
        offered[0] = 2
        assert wait_for(lambda: server.state.engine.version == 2)
        gc.collect()
        assert freed() is not None  # its batch still runs
        release.set()
        held.join(30)
        assert held_answer == [(1, f"v1: {BLOCK}")]
        # The answer may come before its worker thread leaves the batch: a bounded poll.
        assert wait_for(lambda: gc.collect() >= 0 and freed() is None, 20), \
            "version 1's engine is still referenced"
        assert translate(server, "zwei") == (2, "v2: zwei")
    finally:
        release.set()
        server.stop()


def test_the_program_keeps_no_reference_to_its_first_engine(tmp_path, monkeypatch):
    """t2t-server's `run` hands the first engine to the server's state alone: once the
    state switched to another, the first is freed."""
    write_versions(tmp_path, 1)
    freed, kept = [], []

    def loader(args, workers, opened):
        def load():
            engine = FakeEngine(1)
            freed.append(weakref.ref(engine))
            return engine
        return load

    async def serve(state, host, port, watcher=None):
        state.switch(FakeEngine(2))
        gc.collect()
        kept.append(freed[0]() is not None)
        return 0
    monkeypatch.setattr(t2t_server, "_loader", loader)
    monkeypatch.setattr(t2t_server, "_serve", serve)
    assert t2t_server.run(t2t_server.parse_args([f"--export_dir={tmp_path}"])) == 0
    assert kept == [False], "run() still references the first engine"
