"""The closed-loop clients: asyncio coroutines sharing one aiohttp session, each
sending one sentence, waiting for its answer, sending the next; and their figures."""

import asyncio
import random
import time
from typing import Optional, Sequence

from .judge import Tally, classify
from .references import Reference


async def _client(session, url: str, sentences, decoder: Reference, engine: Reference,
                  rng: random.Random, deadline: float, tally: Tally) -> None:
    """One client: a sentence, its answer, the next, until `deadline` (perf_counter)."""
    while time.perf_counter() < deadline:
        index = rng.randrange(len(sentences))
        begin = time.perf_counter()
        try:
            async with session.post(url, json={"inputs": [sentences[index]]}) as response:
                status = response.status
                body = await response.json(content_type=None)
        except Exception as error:  # noqa: BLE001  any failure is an error answer
            status, body = None, repr(error)
        latency = time.perf_counter() - begin
        verdict = classify(index, body, decoder, engine) if status == 200 else "error"
        outputs = body.get("outputs") if isinstance(body, dict) else None
        tally.add(verdict, latency, {"sentence": sentences[index],
                                     "expected": decoder.lines[index], "status": status,
                                     "got": body},
                  engine_line=outputs == [engine.lines[index]])


async def closed_loop(url: str, sentences: Sequence[str], decoder: Reference,
                      engine: Optional[Reference], clients: int, seconds: float,
                      seed: int) -> dict:
    """`run_clients` as a coroutine (client c draws its sentences with
    `random.Random(seed * 1000 + c)`)."""
    import aiohttp

    tally = Tally()
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=120)) as session:
        cpu, began = time.process_time(), time.perf_counter()
        deadline = began + seconds
        await asyncio.gather(*(
            _client(session, url + "/v1/translate", sentences, decoder, engine or decoder,
                    random.Random(seed * 1000 + c), deadline, tally) for c in range(clients)))
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {"tally": tally, "seconds": wall, "client_cpu_s": cpu}


def run_clients(url: str, sentences: Sequence[str], decoder: Reference,
                engine: Optional[Reference], clients: int, seconds: float,
                seed: int = 0) -> dict:
    """`clients` closed-loop clients of the server at `url` for `seconds`, each answer
    judged by `classify` (`engine`: t2t-decoder's reference with the served engine;
    None: `decoder`'s engine).

    Returns {"tally": Tally, "seconds": until the last answer, "client_cpu_s":
    this process's CPU time meanwhile (all threads)}.
    """
    return asyncio.run(closed_loop(url, sentences, decoder, engine, clients, seconds, seed))


def percentile(sorted_values: Sequence[float], p: float) -> Optional[float]:
    """The nearest-rank `p`th percentile of ascending values (None if empty)."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, max(0, -(-len(sorted_values) * p // 100) - 1))]


def summarize(load: dict) -> dict:
    """sentences/s, p50/p99 latency (ms), verdict counts and CPU figures of `run_clients`."""
    tally, seconds = load["tally"], load["seconds"]
    answered = len(tally.latencies)
    latencies = sorted(1000 * x for x in tally.latencies)
    translated = tally.counts["ok"] + tally.counts["mismatch"] + tally.counts["wrong_request"]
    return {"answers": answered, "seconds": seconds,
            "sentences_per_s": translated / seconds,
            "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99),
            **tally.counts,
            "mismatch_pct": 100.0 * tally.counts["mismatch"] / max(1, answered),
            "engine_mismatch": tally.engine_mismatch,
            "client_cpu_s": load["client_cpu_s"],
            "client_cpu_pct": 100.0 * load["client_cpu_s"] / seconds,
            "examples": tally.examples}
