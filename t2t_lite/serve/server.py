"""Running a server: listen, warm up, serve until told to stop, drain, exit.

    stop = asyncio.Event()   # set by SIGTERM/SIGINT in t2t-server
    await serve(ServerState.create(engine, config), "127.0.0.1", 8501, stop)

/healthz answers as soon as the port is open; /readyz (and translation) only
once a warm-up sentence has been translated. On `stop`: /readyz and new
requests get 503, the listening socket closes, requests already received are
answered as their batches finish (queued sentences go into batches at once),
for at most `drain_timeout_s`; whatever is left then is cancelled.

With a `watch.Watcher` (t2t-server --watch), once ready the server also
switches to the highest version of its model as it appears (`watch.watch`).
`stop` starts the draining at once, even while a version loads: that load is
awaited within the same `drain_timeout_s`, then abandoned (`watch.stop_watching`).
"""

import asyncio
import logging
from typing import Callable, Optional

from aiohttp import web

from t2t_lite.errors import T2TError
from t2t_lite.serve.app import ServerState, make_app
from t2t_lite.serve.watch import Watcher, stop_watching, watch

LOG = logging.getLogger("t2t_lite.serve")
# One line per request: client, request line, status, bytes, seconds.
ACCESS_LOG_FORMAT = '%a "%r" %s %b %Tf'


async def serve(state: ServerState, host: str, port: int, stop: asyncio.Event,
                on_listening: Optional[Callable[[int], None]] = None,
                watcher: Optional[Watcher] = None) -> int:
    """Serves `state` on host:port until `stop` is set; returns the exit code
    (0; 1 if the warm-up translation failed).

    Args:
      port: 0 picks a free port.
      on_listening: called with the port once it accepts connections.
      watcher: switches to newer versions once ready (None: the loaded one only).
    Raises:
      T2TError: the address cannot be listened on.
    """
    runner = web.AppRunner(make_app(state), handler_cancellation=True,
                           shutdown_timeout=state.config.drain_timeout_s,
                           access_log_format=ACCESS_LOG_FORMAT)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as e:
        await runner.cleanup()
        raise T2TError(f"Cannot listen on {host}:{port}: {e.strerror}.") from None
    state.batcher.start()
    if on_listening is not None:
        on_listening(runner.addresses[0][1])
    code = 0
    try:
        warm_up = asyncio.get_running_loop().run_in_executor(None, state.engine.warm_up)
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait([warm_up, stopped], return_when=asyncio.FIRST_COMPLETED)
        if warm_up.done() and warm_up.exception() is not None:
            error = warm_up.exception()
            LOG.error("the warm-up translation failed: %s: %s", type(error).__name__, error)
            state.not_ready, code = f"the warm-up translation failed ({error})", 1
        elif warm_up.done():
            state.ready = True
            LOG.info("ready: model %r version %s", state.config.model_name,
                     state.engine.version)
            if watcher is not None:
                await watch(state, watcher, stop)
            await stopped
        stopped.cancel()
    finally:
        await shutdown(state, runner, watcher)
    return code


async def shutdown(state: ServerState, runner: web.AppRunner,
                   watcher: Optional[Watcher] = None) -> None:
    """Stops accepting, answers what was received within drain_timeout_s (and waits as
    long for a version `watcher` is loading), stops the workers."""
    state.draining = True
    state.batcher.flush()
    LOG.info("draining: up to %.0f s for %d queued sentences", state.config.drain_timeout_s,
             state.batcher.depth())
    # runner.cleanup closes the socket, waits for the handlers, cancels the late ones.
    waits = [runner.cleanup()]
    if watcher is not None:
        waits.append(stop_watching(watcher, state.config.drain_timeout_s))
    await asyncio.gather(*waits)
    await asyncio.get_running_loop().run_in_executor(None, state.batcher.stop)
    LOG.info("stopped")
