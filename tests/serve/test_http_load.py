"""bench/http_load.py's client (bench/load/): each answer judged against its own sentence's line.

Against a scripted aiohttp server that deliberately answers some requests with
another sentence's line, garbles some and refuses some (the counts it keeps are
the expected ones), and once against t2t-server on the suite's small model. No
assertion here is about speed.
"""

import asyncio
import itertools

import pytest
from aiohttp import web

from serving import (MODEL_NAME, RunningServer,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from paths import bench_part
from t2t_lite.serve.config import ServerConfig

ceiling = bench_part("load.ceiling")  # bench/load/ceiling.py
client = bench_part("load.client")
judge = bench_part("load.judge")
references = bench_part("load.references")
server_process = bench_part("load.server_process")

SENTENCES = ["one", "two", "three", "four", "five"]
LINES = ["eins", "zwei", "drei", "vier", "fünf"]
SCORES = [-1.0, -2.0, -3.0, -4.0, -5.0]
DECODER = references.Reference(LINES, SCORES)


class MixUpServer:
    """Answers /v1/translate in turn: right, another sentence's line, garbled, right,
    a 503; counting what it sent."""

    def __init__(self):
        self.turn = itertools.count()
        self.sent = {"ok": 0, "wrong_request": 0, "mismatch": 0, "error": 0}

    async def translate(self, request: web.Request) -> web.Response:
        text = (await request.json())["inputs"][0]
        own = SENTENCES.index(text)
        kind = ("ok", "wrong_request", "mismatch", "ok", "error")[next(self.turn) % 5]
        self.sent[kind] += 1
        if kind == "error":
            return web.json_response({"error": {"code": "queue_full", "message": "."}},
                                     status=503)
        answer = {"ok": own, "wrong_request": (own + 1) % len(LINES), "mismatch": own}[kind]
        line = LINES[answer] + ("?" if kind == "mismatch" else "")
        return web.json_response({"outputs": [line], "scores": [SCORES[answer]]})


def test_each_answer_is_judged_against_its_own_sentence():
    mixer = MixUpServer()

    async def main():
        app = web.Application()
        app.router.add_post("/v1/translate", mixer.translate)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            return await client.closed_loop(url, SENTENCES, DECODER, None, clients=3,
                                            seconds=0.5, seed=0)
        finally:
            await runner.cleanup()

    load = asyncio.run(main())
    summary = client.summarize(load)
    assert sum(mixer.sent.values()) >= 10
    assert load["tally"].counts == mixer.sent
    assert summary["answers"] == sum(mixer.sent.values())
    assert summary["wrong_request"] == mixer.sent["wrong_request"] > 0
    wrong = summary["examples"]["wrong_request"][0]
    assert wrong["got"]["outputs"][0] != wrong["expected"]
    assert wrong["got"]["outputs"][0] in LINES
    assert summary["examples"]["error"][0]["status"] == 503
    assert summary["mismatch_pct"] == 100.0 * mixer.sent["mismatch"] / summary["answers"]
    assert summary["engine_mismatch"] == mixer.sent["mismatch"] + mixer.sent["wrong_request"]


def test_another_sentences_line_is_a_wrong_request_only_with_its_score():
    # CTranslate2's own reference: sentence 2 -> "vier" (sentence 3's t2t-decoder line).
    engine = references.Reference(["eins", "zwei", "vier", "vier", "fünf"],
                                  [-1.5, -2.5, -3.5, -4.5, -5.5])

    def verdict(outputs, scores, engine=DECODER):
        return judge.classify(2, {"outputs": outputs, "scores": scores}, DECODER, engine)

    assert verdict(["drei"], [-3.0]) == "ok"
    assert verdict(["drei"], [-9.0]) == "ok"  # t2t-decoder's line: scores aren't compared
    assert verdict(["dreii"], [-3.0]) == "mismatch"
    assert verdict(["vier"], [-4.0]) == "wrong_request"       # sentence 3's line and score
    assert verdict(["vier"], [-4.0009]) == "wrong_request"    # within 4-decimal rounding
    assert verdict(["vier"], [-3.9]) == "mismatch"            # its line, not its score
    assert verdict(["vier"], [-4.5], engine) == "mismatch"    # the engine's own line: 2's
    assert verdict(["fünf"], [-5.5], engine) == "wrong_request"  # the engine's, of 4
    assert verdict(["drei", "vier"], [-3.0, -4.0]) == "wrong_request"
    assert verdict([], []) == "wrong_request"
    assert verdict(["drei"], []) == "wrong_request"
    assert judge.classify(2, "not JSON", DECODER, DECODER) == "wrong_request"


def test_percentiles_histograms_and_ceiling_batches():
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert client.percentile(values, 50) == 50.0
    assert client.percentile(values, 99) == 99.0
    assert client.percentile([7.0], 99) == 7.0 and client.percentile([], 50) is None
    # Cumulative buckets before and after a run: 3 batches of 1 and 2 of 4-8 sentences.
    before = {"count": 10, "sum": 40, "le=1.0": 4, "le=2.0": 5, "le=4.0": 8, "le=8.0": 10,
              "le=+Inf": 10}
    after = {"count": 15, "sum": 55, "le=1.0": 7, "le=2.0": 8, "le=4.0": 11, "le=8.0": 15,
             "le=+Inf": 15}
    assert server_process.histogram_delta(before, after) == {
        "batches": 5, "mean_batch": 3.0, "batch_sizes": {"1.0": 3, "8.0": 2}}
    # Windows of 4 draws, each sorted by length and cut into batches of at most 3.
    lengths = [5, 1, 3, 2, 4]
    draws = [2, 1, 3, 0, 0, 4, 0]  # random.Random(7)'s first 7 randrange(5)
    batches = ceiling.ceiling_batches(lengths, window=4, batch_size=3, seed=7, count=7)
    assert batches == [[1, 3, 2], [0], [4, 0, 0]]
    assert sorted(i for b in batches for i in b) == sorted(draws)


def test_against_t2t_server_no_answer_goes_astray(engine):  # noqa: F811
    words = " ".join(number_sentences(40)).split()
    # 1 to 24 words: a random-weight model's line differs with the input's length.
    candidates = [" ".join(words[:k]) for k in range(1, 25)]
    translations = engine.translate(candidates)  # one batch: each line and score
    lines = [t.line for t in translations]
    # Only sentences whose line no other has: every mix-up would show.
    unique = [i for i, line in enumerate(lines) if lines.count(line) == 1]
    assert len(unique) >= 12, lines
    sentences = [candidates[i] for i in unique]
    decoder = references.Reference([lines[i] for i in unique],
                                   [translations[i].scores[0] for i in unique])
    config = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=4, batch_workers=2)
    server = RunningServer(engine, config).start()
    try:
        before = server_process.batch_histogram(server.url)
        summary = client.summarize(
            client.run_clients(server.url, sentences, decoder, None, clients=6, seconds=1.0))
        delta = server_process.histogram_delta(before, server_process.batch_histogram(server.url))
    finally:
        server.stop()
    assert summary["answers"] > 6
    assert summary["wrong_request"] == 0 and summary["error"] == 0
    assert summary["ok"] + summary["mismatch"] == summary["answers"]
    assert summary["p50_ms"] <= summary["p99_ms"]
    assert delta["batches"] == sum(delta["batch_sizes"].values()) > 0
    assert 1 <= delta["mean_batch"] <= 4
    assert delta["mean_batch"] * delta["batches"] == pytest.approx(summary["answers"])
