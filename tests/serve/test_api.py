"""t2t-server's API and TF Serving's, against t2t-decoder's library on the same model.

One server for the module (two batch workers, small batches so that requests
are split and share batches); every error case checks its status, its message,
and that the server still answers a good request afterwards.
"""

import concurrent.futures
import logging
import re
import time

import pytest

from serving import (FAIL, MODEL_NAME, REFUSE, RunningServer, ScriptedEngine, decoder_lines,
                     http, metric, engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from paths import REPO_ROOT
from t2t_lite.serve.config import ServerConfig

CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=4, max_batch_tokens=256,
                      batch_timeout_ms=20, batch_workers=2, max_request_sentences=40,
                      max_sentence_chars=10_000, max_body_bytes=32_768)
LINES = number_sentences(30)[1:] + ["", "   ", "zwölf Äpfel – „ok“", "a\ttab", "x" * 10_000]


@pytest.fixture(scope="module")
def server(engine):
    running = RunningServer(ScriptedEngine(engine), CONFIG).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def expected(engine):
    """The decoder library's line and the search's best hypothesis for each of LINES."""
    lines = decoder_lines(engine, LINES)
    assert len(set(lines)) > 10, lines  # the model tells the inputs apart: a real check
    return dict(zip(LINES, lines))


def translate(server, inputs, **fields):
    return http(server.url + "/v1/translate", {"inputs": inputs, **fields})


def assert_still_serving(server, expected):
    status, _, body = translate(server, LINES[:3])
    assert status == 200 and body["outputs"] == [expected[line] for line in LINES[:3]]


def test_outputs_are_the_decoders_lines(server, engine, expected):
    status, _, body = translate(server, LINES)
    assert status == 200
    assert body["outputs"] == [expected[line] for line in LINES]
    assert body["model"] == {"name": MODEL_NAME, "version": 3}
    assert len(body["scores"]) == len(LINES)
    assert body["scores"][LINES.index("")] == 0.0
    single = engine.translate([LINES[0]])[0]  # the search alone on one sentence
    # (a batch of another size rounds differently: 4e-5 seen)
    assert body["scores"][0] == pytest.approx(single.scores[0], abs=1e-4)


def test_nbest(server, engine):
    status, _, body = translate(server, LINES[:2], nbest=True)
    assert status == 200
    assert [len(beams) for beams in body["nbest"]] == [2, 2]  # beam_size=2
    assert [beams[0]["output"] for beams in body["nbest"]] == body["outputs"]
    assert [beams[0]["score"] for beams in body["nbest"]] == body["scores"]


def test_concurrent_requests_get_their_own_translations(server, expected):
    requests = [LINES[i::6] for i in range(6)] * 2  # 12 requests, each of other lines
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda inputs: translate(server, inputs), requests))
    for inputs, (status, _, body) in zip(requests, answers):
        assert status == 200
        assert body["outputs"] == [expected[line] for line in inputs]


def readme_tf_serving_example():
    """(path, JSON body) of the serving docs' curl example for TF Serving."""
    page = (REPO_ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    found = re.search(r"curl -X POST http://localhost:8501(/v1/models/\w+:predict) \\\n"
                      r"\s+-d '([^']*)'", page)
    assert found, "docs/serving.md's TF Serving curl example not found"
    return found.group(1), found.group(2)


def test_readme_tf_serving_example(server, engine):
    path, body = readme_tf_serving_example()
    assert path == f"/v1/models/{MODEL_NAME}:predict"
    status, _, answer = http(server.url + path, raw=body.encode("utf-8"))
    assert status == 200
    best = engine.translate(["Hello world.", "How are you?"])  # what the SavedModel returns
    assert [p["outputs"] for p in answer["predictions"]] == [b.best for b in best]
    assert [p["scores"] for p in answer["predictions"]] == pytest.approx(
        [b.scores[0] for b in best], abs=1e-4)


def test_tf_serving_formats_and_versions(server, engine):
    inputs = [LINES[0], "", LINES[5]]
    best = engine.translate(inputs)
    url = f"{server.url}/v1/models/{MODEL_NAME}"
    status, _, columnar = http(url + "/versions/3:predict", {"inputs": inputs})
    assert status == 200
    assert columnar["outputs"]["outputs"] == [b.best for b in best]
    assert columnar["outputs"]["scores"][1] == 0.0
    status, _, rows = http(url + ":predict", {"instances": [{"inputs": s} for s in inputs],
                                              "signature_name": "nbest"})
    assert status == 200
    assert [p["outputs"] for p in rows["predictions"]] == [b.hypotheses for b in best]
    assert http(url)[2] == http(url + "/versions/3")[2] == {"model_version_status": [
        {"version": "3", "state": "AVAILABLE", "status": {"error_code": "OK",
                                                          "error_message": ""}}]}


def test_health_and_readiness(server):
    assert http(server.url + "/healthz")[:3:2] == (200, {"status": "ok"})
    assert http(server.url + "/readyz")[:3:2] == (
        200, {"status": "ready", "model": {"name": MODEL_NAME, "version": 3}})


ERRORS = [  # (path, raw body, status, code, message pattern)
    ("/v1/translate", b'{"inputs": ["a"', 400, "bad_request", "not JSON: Expecting"),
    ("/v1/translate", b'{"inputs": ["\xff\xfe"]}', 400, "bad_request",
     "not UTF-8: byte 0xff at offset 13"),
    ("/v1/translate", b'{"inputs": "one"}', 400, "bad_request",
     "inputs must be an array of strings, got a string"),
    ("/v1/translate", b'{"inputs": ["a", 2]}', 400, "bad_request",
     r"inputs\[1\] must be a string, got a number"),
    ("/v1/translate", b'{"input": ["a"]}', 400, "bad_request", "Unknown field"),
    ("/v1/translate", b'[1, 2]', 400, "bad_request", "Expected a JSON object, got an array"),
    ("/v1/translate", b'{"inputs": ["ok \\ud800"]}', 400, "bad_request",
     r"inputs\[0\] holds a lone surrogate \(U\+D800\)"),
    ("/v1/translate", b'{"inputs": %s"a"%s}' % (b"[" * 5_000, b"]" * 5_000), 400,
     "bad_request", r"^The request body nests arrays or objects too deeply\.$"),
    ("/v1/translate", b'{"inputs": ["a", "%s"]}' % REFUSE.encode(), 400, "bad_request",
     f"^Refused: '{REFUSE}'\\.$"),
    ("/v1/translate", b'{"inputs": ["a"], "deadline_ms": -5}', 400, "bad_request",
     "deadline_ms must be a positive number"),
    ("/v1/translate", b'{"inputs": ["%s"]}' % (b"x" * 10_001), 422, "too_large",
     r"inputs\[0\] has 10,001 characters; the limit is 10,000"),
    ("/v1/translate", b'{"inputs": [%s]}' % b",".join([b'"a"'] * 41), 422, "too_large",
     "has 41 sentences; the limit is 40 per request"),
    ("/v1/translate", b'{"inputs": ["%s"]}' % (b"y" * 40_000), 413, "too_large",
     "larger than 32,768 bytes"),
    ("/v1/translate", b'{"inputs": ["a"], "deadline_ms": 0.001}', 504, "deadline_exceeded",
     "Not translated within 0 ms"),
    ("/v1/models/fr:predict", b'{"instances": ["a"]}', 404, "not_found",
     "Model 'fr' not found; this server serves 'ende'"),
    ("/v1/models/ende/versions/2:predict", b'{"instances": ["a"]}', 404, "not_found",
     "Version '2' of model 'ende' not found; this server serves version 3"),
    ("/v1/models/ende:predict", b'{"instances": ["a"], "inputs": ["a"]}', 400, "bad_request",
     "exactly one of 'instances'"),
    ("/v1/models/ende:predict", b'{"instances": ["a"], "signature_name": "x"}', 400,
     "bad_request", 'Serving signature name "x" not found'),
    ("/v2/translate", b'{}', 404, "not_found", "No such route"),
]


@pytest.mark.parametrize("path, raw, status, code, message", ERRORS,
                         ids=[f"{e[2]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(server, expected, path, raw, status, code, message):
    got, headers, body = http(server.url + path, raw=raw)
    assert (got, body["error"]["code"]) == (status, code), body
    assert re.search(message, body["error"]["message"]), body["error"]["message"]
    assert "Access-Control-Allow-Origin" not in headers
    assert_still_serving(server, expected)


def test_method_not_allowed(server, expected):
    status, _, body = http(server.url + "/v1/translate", method="GET")
    assert (status, body["error"]["code"]) == (405, "method_not_allowed")
    assert_still_serving(server, expected)


def test_a_failed_batch_fails_only_its_own_request(server, expected):
    good = [LINES[i::3] for i in range(3)]
    bad = [LINES[0], FAIL, LINES[1]]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda inputs: translate(server, inputs), good + [bad]))
    for inputs, (status, _, body) in zip(good, answers[:3]):
        assert status == 200 and body["outputs"] == [expected[line] for line in inputs]
    status, _, body = answers[3]
    assert (status, body["error"]["code"]) == (500, "translation_failed")
    assert body["error"]["message"] == ("Translating a sentence of this request failed: "
                                        "RuntimeError: injected failure")
    assert_still_serving(server, expected)


def test_metrics(server, expected):
    before = http(server.url + "/metrics")[2]
    assert translate(server, LINES[:5] + [""])[0] == 200
    assert translate(server, 7)[0] == 400
    after = http(server.url + "/metrics")[2]

    def delta(name):
        return metric(after, name) - metric(before, name)
    assert delta('t2t_server_requests_total{route="/v1/translate",status="200"}') == 1
    assert delta('t2t_server_requests_total{route="/v1/translate",status="400"}') == 1
    assert delta('t2t_server_rejections_total{reason="bad_request"}') == 1
    assert delta("t2t_server_sentences_total") == 5
    assert delta("t2t_server_queue_wait_seconds_count") == 5
    assert delta("t2t_server_batch_sentences_sum") == 5
    assert delta("t2t_server_compute_seconds_count") == delta("t2t_server_batch_sentences_count")
    assert metric(after, 't2t_server_model_version{model="ende"}') == 3
    assert metric(after, "t2t_server_queue_depth") == 0


@pytest.mark.parametrize("path, raw, message", [
    ("/v1/translate", b"[" * 30_000, "The request body nests arrays or objects too deeply."),
    ("/v1/translate", b'{"inputs": ["a"], "deadline_ms": %s}' % (b"7" * 5_000),
     "The request body holds an integer of more than 4,300 digits."),
    ("/v1/models/ende:predict", b'{"instances": [-%s]}' % (b"1" * 4_301),
     "The request body holds an integer of more than 4,300 digits."),
], ids=["nested", "long-integer", "long-integer-predict"])
def test_json_python_cannot_read_is_a_400_and_one_log_line(server, expected, caplog, path, raw,
                                                           message):
    """Python's JSON parser recurses once per array: 30,000 of them (within the body
    limit) raise RecursionError; an integer of more than 4,300 digits (Python's limit
    for converting a string to int) raises ValueError. Both are the client's mistake,
    not the server's."""
    with caplog.at_level(logging.INFO):
        status, _, body = http(server.url + path, raw=raw)
        assert wait_for_log(caplog, f'"POST {path} HTTP/1.1"')
    assert (status, body) == (400, {"error": {"code": "bad_request", "message": message}})
    lines = caplog.records  # this request's alone: nothing else runs meanwhile
    assert [(r.name, r.exc_info) for r in lines] == [("aiohttp.access", None)]
    assert "\n" not in lines[0].getMessage()
    assert_still_serving(server, expected)


def wait_for_log(caplog, text: str, timeout_s: float = 30) -> bool:
    """Waits for a log line holding `text` (the access log's comes after the answer)."""
    deadline = time.monotonic() + timeout_s
    while not any(text in r.getMessage() for r in caplog.records):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
