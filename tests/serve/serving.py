"""What the server tests share: a small random-weight model, an engine wrapper with
test hooks, a server running in a thread, and an HTTP client.

Each test module starts one server (a module-scoped fixture) on a free port of
127.0.0.1 and stops it at the end. Not a conftest.py: the suite's modules import
`conftest` by name (tests/conftest.py), and a second conftest module would take
that name; a test module imports the fixtures it uses from here.
"""

import asyncio
import json
import logging
import threading
import urllib.error
import urllib.request
from typing import Any, List, Optional, Tuple

import pytest

from model_dirs import make_model_dir
from t2t_lite.decode import decoding
from t2t_lite.errors import T2TError
from t2t_lite.model_dir import ModelDir
from t2t_lite.serve.app import ServerState
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import TFEngine
from t2t_lite.serve.server import serve

DECODE = "beam_size=2,extra_length=12"
MODEL_NAME = "ende"
FAIL = "FAIL THIS SENTENCE"    # ScriptedEngine raises for a batch holding it
BLOCK = "BLOCK THIS SENTENCE"  # ScriptedEngine waits for `release` in a batch holding it
REFUSE = "REFUSE THIS SENTENCE"  # ScriptedEngine's token_lengths refuses it (as a vocabulary)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    """A random-weight model directory (checkpoints 1 and 3: version 3)."""
    return make_model_dir(str(tmp_path_factory.mktemp("serve") / "model"), steps=(1, 3))


@pytest.fixture(scope="module")
def engine(model_path) -> TFEngine:
    """The engine t2t-server makes of `model_path` with --decode_hparams=DECODE."""
    return TFEngine.load(ModelDir.open(model_path), DECODE)


def decoder_lines(engine: TFEngine, lines: List[str]) -> List[str]:
    """What t2t-decoder's library writes for `lines` with the engine's model and options."""
    return decoding.decode_lines(engine.translator, lines, engine.options,
                                 postprocess=engine.problem.postprocess)


class ScriptedEngine:
    """An engine with test hooks: records every batch it is given, raises for a
    batch holding FAIL, blocks a batch holding BLOCK until `release` is set, and
    (with `gate_warm_up`) warms up only once `warm_up_gate` is set."""

    def __init__(self, inner: TFEngine, gate_warm_up: bool = False):
        self.inner = inner
        self.version = inner.version
        self.batches: List[List[str]] = []
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.warm_up_gate = threading.Event()
        if not gate_warm_up:
            self.warm_up_gate.set()
        self._lock = threading.Lock()

    def token_lengths(self, texts):
        if REFUSE in texts:  # as a multilingual Marian vocabulary refuses a line
            raise T2TError(f"Refused: {REFUSE!r}.")
        return self.inner.token_lengths(texts)

    def blank(self):
        return self.inner.blank()

    def warm_up(self) -> None:
        assert self.warm_up_gate.wait(60)
        self.inner.warm_up()

    def translate(self, texts):
        with self._lock:
            self.batches.append(list(texts))
        if FAIL in texts:
            raise RuntimeError("injected failure")
        if BLOCK in texts:
            self.blocked.set()
            assert self.release.wait(60)
        return self.inner.translate(texts)

    def translated(self) -> List[str]:
        with self._lock:
            return [text for batch in self.batches for text in batch]


class _ReadyLog(logging.Handler):
    """Sets `ready` when the server logs that it is ready (after /readyz turns 200)."""

    def __init__(self):
        super().__init__()
        self.ready = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("ready:"):
            self.ready.set()


class RunningServer:
    """`serve()` on its own event loop in a thread, on a free port of 127.0.0.1
    (with a `watch.Watcher`: switching to newer versions, as t2t-server --watch)."""

    def __init__(self, engine, config: ServerConfig, watcher=None):
        self.state = ServerState.create(engine, config)
        self.watcher = watcher
        self.port: Optional[int] = None
        self.code: Optional[int] = None
        self._listening = threading.Event()
        self._ready_log = _ReadyLog()
        self._loop = self._stop = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self.code = await serve(self.state, "127.0.0.1", 0, self._stop, self._on_listening,
                                self.watcher)

    def _on_listening(self, port: int) -> None:
        self.port = port
        self._listening.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_ready: bool = True) -> "RunningServer":
        logger = logging.getLogger("t2t_lite.serve")
        logger.setLevel(logging.INFO)
        logger.addHandler(self._ready_log)
        self._thread.start()
        assert self._listening.wait(60), "the server did not start listening"
        if wait_ready:
            self.wait_ready()
        return self

    def wait_ready(self) -> None:
        assert self._ready_log.ready.wait(120), "the server did not become ready"

    def stop(self) -> None:
        self.request_stop()
        assert self.join(60), "the server did not stop"

    def request_stop(self) -> None:
        """Sets the server's `stop` (as t2t-server's SIGTERM handler does); returns at once."""
        self._loop.call_soon_threadsafe(self._stop.set)

    def join(self, timeout_s: float) -> bool:
        """Waits up to `timeout_s` for `serve` to return; True if it did."""
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return False
        logging.getLogger("t2t_lite.serve").removeHandler(self._ready_log)
        return True


def http(url: str, body: Any = None, method: Optional[str] = None,
         raw: Optional[bytes] = None, timeout: float = 60) -> Tuple[int, dict, Any]:
    """(status, headers, JSON body or text) of one request; `body` is sent as JSON,
    `raw` as is."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, headers, payload = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        status, headers, payload = e.code, dict(e.headers), e.read()
    if headers.get("Content-Type", "").startswith("application/json"):
        return status, headers, json.loads(payload)
    return status, headers, payload.decode("utf-8")


def metric(text: str, name: str) -> float:
    """The value of sample `name` (with its labels, as written) in a /metrics page; 0 if absent."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
