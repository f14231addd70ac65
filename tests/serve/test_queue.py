"""Readiness, a full queue, clients that go away and deadlines in the queue.

One server for the module with one batch worker and room for 4 queued
sentences; the engine's test hooks hold its warm-up and a batch until the test
lets them go, so each state is reached by events, not by timing.
"""

import concurrent.futures
import json
import socket
import threading
from collections import Counter

import pytest

from serving import (BLOCK, MODEL_NAME, RunningServer, ScriptedEngine, decoder_lines, http,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from t2t_lite.serve.batcher import Observer
from t2t_lite.serve.config import ServerConfig

CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=2, batch_timeout_ms=0,
                      batch_workers=1, max_queue_sentences=4)
LINES = number_sentences(8)[1:]


class WatchingObserver(Observer):
    """Forwards the batcher's reports to the metrics and lets a test wait for them."""

    def __init__(self, inner: Observer):
        self.inner = inner
        self.depth = 0
        self.dropped_counts = Counter()
        self.changed = threading.Condition()

    def queue_depth(self, sentences):
        self.inner.queue_depth(sentences)
        with self.changed:
            self.depth = sentences
            self.changed.notify_all()

    def batch(self, sentences, tokens, compute_s):
        self.inner.batch(sentences, tokens, compute_s)

    def queue_wait(self, seconds):
        self.inner.queue_wait(seconds)

    def dropped(self, reason, sentences):
        self.inner.dropped(reason, sentences)
        with self.changed:
            self.dropped_counts[reason] += sentences
            self.changed.notify_all()

    def wait(self, predicate, timeout: float = 60) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout), (self.depth, self.dropped_counts)


@pytest.fixture(scope="module")
def server(engine):
    running = RunningServer(ScriptedEngine(engine, gate_warm_up=True), CONFIG)
    running.state.batcher.observer = WatchingObserver(running.state.metrics)
    running.start(wait_ready=False)
    yield running
    running.state.engine.release.set()
    running.state.engine.warm_up_gate.set()
    running.stop()


@pytest.fixture(scope="module")
def ready_server(server):
    server.state.engine.warm_up_gate.set()
    server.wait_ready()
    return server


def translate(server, inputs, **fields):
    return http(server.url + "/v1/translate", {"inputs": inputs, **fields})


def test_not_ready_until_warmed_up(server, engine):
    assert not server.state.ready, "this test runs first, before the others warm it up"
    status, headers, body = http(server.url + "/readyz")
    assert (status, headers.get("Retry-After")) == (503, "1")
    assert body["error"] == {"code": "not_ready", "message": "The server is not ready: warming "
                                                            "up: the first sentence is being "
                                                            "translated."}
    status, headers, body = translate(server, ["one"])
    assert (status, body["error"]["code"], headers.get("Retry-After")) == (503, "not_ready", "1")
    assert http(server.url + f"/v1/models/{MODEL_NAME}")[2]["model_version_status"][0][
        "state"] == "LOADING"
    assert http(server.url + "/healthz")[0] == 200
    server.state.engine.warm_up_gate.set()
    server.wait_ready()
    assert http(server.url + "/readyz")[0] == 200
    assert translate(server, ["one"])[2]["outputs"] == decoder_lines(engine, ["one"])


def send_and_hang_up_later(port: int, inputs) -> socket.socket:
    """A client that sends a request and will close the connection without reading."""
    body = json.dumps({"inputs": inputs}).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    return sock


def test_full_queue_gone_client_and_deadline(ready_server, engine):
    server, hooks = ready_server, ready_server.state.engine
    watch = server.state.batcher.observer
    cancelled_before = watch.dropped_counts["cancelled"]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        blocking = pool.submit(translate, server, [BLOCK])
        assert hooks.blocked.wait(60)                  # the one worker is busy
        waiting = pool.submit(translate, server, LINES[:3])
        watch.wait(lambda: watch.depth == 3)           # ...so these 3 stay queued

        status, headers, body = translate(server, LINES[3:5])  # 3 + 2 > 4
        assert (status, headers.get("Retry-After")) == (503, "1")
        assert body["error"] == {"code": "queue_full", "message": "The server is busy: the "
                                 "queue holds 3 sentences; 2 more would pass its 4."}

        gone = send_and_hang_up_later(server.port, ["gone for good"])
        watch.wait(lambda: watch.depth == 4)
        gone.close()                                   # its sentence leaves the queue
        watch.wait(lambda: watch.dropped_counts["cancelled"] == cancelled_before + 1
                   and watch.depth == 3)

        status, _, body = translate(server, ["too late"], deadline_ms=200)
        assert (status, body["error"]["code"]) == (504, "deadline_exceeded")
        assert body["error"]["message"] == ("Not translated within 200 ms (the request's "
                                            "deadline_ms, at most --request_timeout_s).")
        assert watch.depth == 3

        hooks.release.set()
        assert blocking.result()[2]["outputs"] == decoder_lines(engine, [BLOCK])
        assert waiting.result()[2]["outputs"] == decoder_lines(engine, LINES[:3])
    translated = hooks.translated()
    assert "gone for good" not in translated and "too late" not in translated
    assert watch.depth == 0
    assert translate(server, LINES[3:5])[2]["outputs"] == decoder_lines(engine, LINES[3:5])
