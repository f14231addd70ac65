"""The aiohttp application: routes, limits and errors over an engine and a batcher.

    POST /v1/translate                              t2t-server's API (`payloads`)
    POST /v1/models/NAME[/versions/V]:predict       TF Serving's REST predict API
    GET  /v1/models/NAME[/versions/V]               TF Serving's model status
    GET  /healthz                                   200 while the process serves HTTP
    GET  /readyz                                    200 once warmed up, 503 otherwise
    GET  /metrics                                   Prometheus (`metrics`)
    GET  /                                          a page to translate in a browser
                                                    (static/index.html, over the API)

Every answer other than 200 has a JSON body {"error": {"code", "message"}}:
400 malformed JSON, wrong types or a sentence the model's vocabulary refuses,
404 unknown route, model or version, 413 a body over max_body_bytes, 422 too
many or too long sentences, 503 (with Retry-After) a full queue, warming up or
shutting down, 504 a deadline passed, 500 a sentence whose translation failed
(only its own request).

Each request is answered by the engine (model version) served when it is
received: `ServerState.switch` (t2t-server --watch) changes the engine for
the requests received after it, while the sentences of those received before
are still translated, in batches of their own, by the engine they began with.
"""

import asyncio
import dataclasses
import functools
import json
import logging
import pathlib
import time
from typing import List, Optional

from aiohttp import web

from t2t_lite.errors import T2TError
from t2t_lite.serve import payloads
from t2t_lite.serve.batcher import (BatchFailed, Batcher, DeadlineExceeded, QueueFull,
                                    ShuttingDown)
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.metrics import ServerMetrics
from t2t_lite.serve.payloads import ApiError

LOG = logging.getLogger("t2t_lite.serve")
_NAME = r"{name:[^/:]+}"
_VERSION = r"{version:[^/:]+}"
PAGE = pathlib.Path(__file__).parent / "static" / "index.html"
# The page loads nothing from elsewhere and talks only to this server; its one inline
# script and style are all it runs.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'unsafe-inline'; "
                               "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@dataclasses.dataclass
class ServerState:
    """What the handlers share: the engine, its batcher and metrics, readiness."""

    engine: object            # `engine.TFEngine` or anything with its methods (the one
                              # new requests get; `switch` replaces it)
    config: ServerConfig
    batcher: Batcher
    metrics: ServerMetrics
    ready: bool = False
    not_ready: str = "warming up: the first sentence is being translated"
    draining: bool = False

    @classmethod
    def create(cls, engine, config: ServerConfig) -> "ServerState":
        """A state with a new (not yet started) batcher and metrics for `engine`."""
        metrics = ServerMetrics(config.model_name, engine.version)
        batcher = Batcher(engine.translate, config.max_batch_sentences, config.max_batch_tokens,
                          config.batch_timeout_ms / 1000.0, config.batch_workers,
                          config.max_queue_sentences, metrics)
        return cls(engine, config, batcher, metrics)

    def model(self, engine=None) -> dict:
        """{"name", "version"} of `engine` (default: the one served now)."""
        return {"name": self.config.model_name, "version": (engine or self.engine).version}

    def switch(self, engine) -> None:
        """Serves the (loaded, warmed-up) `engine` to the requests received from now on;
        call it on the event loop's thread, where the handlers take their engine.

        The old engine is no longer referenced here, nor as the batcher's default
        `translate`: it is freed once the last batch and request using it finish."""
        self.engine = engine
        self.batcher.translate = engine.translate
        self.metrics.version.set(engine.version)

    def check_ready(self, draining_too: bool = True) -> None:
        """Raises a 503 while warming up or (unless `draining_too` is False: a request
        received before SIGTERM is still answered) shutting down."""
        if self.draining and draining_too:
            raise ApiError(503, "shutting_down", "The server is shutting down.",
                           self.config.retry_after_s)
        if not self.ready:
            raise ApiError(503, "not_ready", f"The server is not ready: {self.not_ready}.",
                           self.config.retry_after_s)


STATE = web.AppKey("state", ServerState)


def error_response(error: ApiError) -> web.Response:
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after else None
    return json_response(error.body(), status=error.status, headers=headers)


json_response = functools.partial(web.json_response,
                                  dumps=functools.partial(json.dumps, ensure_ascii=False))


async def translate(state: ServerState, engine, texts: List[str],
                    deadline_ms: Optional[float]):
    """Each text's `Translation` by `engine` (the one the request began with), in
    order, through the shared queue.

    Raises:
      ApiError: 503 (not ready, queue full, shutting down), 504 (deadline), 500 (failed).
    """
    state.check_ready(draining_too=False)  # once draining, no new connection gets here
    timeout = state.config.deadline_seconds(deadline_ms)
    deadline = time.monotonic() + timeout
    results = [engine.blank()] * len(texts)
    todo = [i for i, text in enumerate(texts) if text.strip()]
    if not todo:
        return results
    sentences = [texts[i] for i in todo]
    try:
        lengths = await asyncio.get_running_loop().run_in_executor(
            None, engine.token_lengths, sentences)
    except T2TError as e:  # a sentence the vocabulary refuses (a multilingual Marian
        raise ApiError(400, "bad_request", str(e)) from None  # model's, without >>xxx<<)
    retry = state.config.retry_after_s
    try:
        futures = state.batcher.submit(sentences, lengths, deadline, engine.translate)
    except QueueFull as e:
        raise ApiError(503, "queue_full", f"The server is busy: {e}.", retry) from None
    except ShuttingDown:
        raise ApiError(503, "shutting_down", "The server is shutting down.", retry) from None
    try:
        done = await asyncio.wait_for(asyncio.gather(*map(asyncio.wrap_future, futures)),
                                      deadline - time.monotonic())
    except (asyncio.TimeoutError, DeadlineExceeded):
        raise ApiError(504, "deadline_exceeded",
                       f"Not translated within {timeout * 1000:.0f} ms (the request's "
                       "deadline_ms, at most --request_timeout_s).") from None
    except BatchFailed as e:
        raise ApiError(500, "translation_failed",
                       f"Translating a sentence of this request failed: {e}") from None
    except ShuttingDown:
        raise ApiError(503, "shutting_down", "The server stopped before translating this "
                                             "request.", retry) from None
    finally:  # a client gone, a deadline or a failure: its queued sentences go too
        state.batcher.cancel(futures)
    for i, result in zip(todo, done):
        results[i] = result
    state.metrics.sentences.inc(len(todo))
    return results


async def _body(request: web.Request):
    return payloads.parse_json(await request.read())


async def handle_translate(request: web.Request) -> web.Response:
    state: ServerState = request.app[STATE]
    engine = state.engine  # this request's version, whatever a switch does meanwhile
    parsed = payloads.parse_translate(await _body(request), state.config)
    results = await translate(state, engine, parsed.inputs, parsed.deadline_ms)
    return json_response(payloads.translate_response(results, parsed, state.model(engine)))


def _check_model(state: ServerState, request: web.Request, engine) -> None:
    """Raises a 404 unless the path names this server's model (and `engine`'s version)."""
    name = request.match_info["name"]
    if name != state.config.model_name:
        raise ApiError(404, "not_found", f"Model {name!r} not found; this server serves "
                                         f"{state.config.model_name!r}.")
    version = request.match_info.get("version")
    if version is not None and version != str(engine.version):
        raise ApiError(404, "not_found", f"Version {version!r} of model {name!r} not found; "
                                         f"this server serves version {engine.version}.")


async def handle_predict(request: web.Request) -> web.Response:
    state: ServerState = request.app[STATE]
    engine = state.engine
    _check_model(state, request, engine)
    parsed = payloads.parse_predict(await _body(request), state.config)
    results = await translate(state, engine, parsed.inputs, parsed.deadline_ms)
    return json_response(payloads.predict_response(results, parsed))


async def handle_model_status(request: web.Request) -> web.Response:
    state: ServerState = request.app[STATE]
    engine = state.engine
    _check_model(state, request, engine)
    phase = "UNLOADING" if state.draining else "AVAILABLE" if state.ready else "LOADING"
    return json_response({"model_version_status": [{
        "version": str(engine.version), "state": phase,
        "status": {"error_code": "OK", "error_message": ""}}]})


async def handle_healthz(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def handle_readyz(request: web.Request) -> web.Response:
    state: ServerState = request.app[STATE]
    state.check_ready()
    return json_response({"status": "ready", "model": state.model()})


def page_handler():
    """The handler of GET /: the page, read once here (a missing file fails at start-up)."""
    body = PAGE.read_bytes()

    async def handle_page(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html", charset="utf-8",
                            headers=PAGE_HEADERS)
    return handle_page


async def handle_metrics(request: web.Request) -> web.Response:
    state: ServerState = request.app[STATE]
    return web.Response(body=state.metrics.exposition(),
                        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def _as_api_error(error: web.HTTPException, config: ServerConfig) -> ApiError:
    if error.status == 413:
        return ApiError(413, "too_large", f"The request body is larger than "
                                          f"{config.max_body_bytes:,} bytes (--max_body_bytes).")
    if error.status == 404:
        return ApiError(404, "not_found", "No such route; see GET /, /v1/models/NAME, "
                                          "POST /v1/translate, /healthz, /readyz, /metrics.")
    if error.status == 405:
        return ApiError(405, "method_not_allowed", f"{error.reason}.")
    return ApiError(error.status, "http_error", error.reason)


@web.middleware
async def errors_and_metrics(request: web.Request, handler) -> web.StreamResponse:
    """JSON errors for every failure, and the request metrics."""
    state: ServerState = request.app[STATE]
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    start = time.monotonic()
    try:
        with state.metrics.in_progress.labels(route).track_inprogress():
            response = await handler(request)
    except ApiError as e:
        response = error_response(e)
    except web.HTTPException as e:
        response = error_response(_as_api_error(e, state.config))
    except asyncio.CancelledError:
        state.metrics.rejections.labels("client_gone").inc()
        raise
    except Exception:  # pylint: disable=broad-except
        LOG.exception("unexpected error answering %s %s", request.method, request.path)
        response = error_response(ApiError(500, "internal", "Internal server error."))
    if response.status != 200 and route != "/metrics":
        code = json.loads(response.body)["error"]["code"] if response.body else "unknown"
        state.metrics.rejections.labels(code).inc()
    state.metrics.requests.labels(route, str(response.status)).inc()
    state.metrics.latency.labels(route).observe(time.monotonic() - start)
    return response


def make_app(state: ServerState) -> web.Application:
    """The application over `state` (bodies limited to max_body_bytes)."""
    app = web.Application(middlewares=[errors_and_metrics],
                          client_max_size=state.config.max_body_bytes)
    app[STATE] = state
    app.router.add_post("/v1/translate", handle_translate)
    app.router.add_post(f"/v1/models/{_NAME}:predict", handle_predict)
    app.router.add_post(f"/v1/models/{_NAME}/versions/{_VERSION}:predict", handle_predict)
    app.router.add_get(f"/v1/models/{_NAME}", handle_model_status)
    app.router.add_get(f"/v1/models/{_NAME}/versions/{_VERSION}", handle_model_status)
    app.router.add_get("/healthz", handle_healthz)
    app.router.add_get("/readyz", handle_readyz)
    app.router.add_get("/metrics", handle_metrics)
    app.router.add_get("/", page_handler())
    return app
