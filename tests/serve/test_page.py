"""The page at /, in a real headless browser: Playwright driving Debian's chromium.

One server for the module (its warm-up held until the first test lets it go,
so the badge is seen before and after) and one browser page. The engine
answers MARKUP for MARKUP_LINE, a translation no random-weight model makes,
to see that the page shows what it receives as text, never as HTML.
Expected translations come from the decoder library, scores and error
messages from the server's own /v1/translate answer for the same lines.

Needs /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it when
missing) and the test extra's playwright; `playwright install` is never used.
"""

import os
import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect, sync_playwright

from serving import (MODEL_NAME, RunningServer, ScriptedEngine, decoder_lines, http,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import Translation

CHROMIUM = "/usr/bin/chromium"
CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=8, batch_timeout_ms=0,
                      batch_workers=1, max_request_sentences=4, max_sentence_chars=60)
MARKUP_LINE = "say it in bold"
MARKUP = "<b>bold</b> & <i>not</i> markup <script>document.title='x'</script>"
TRANSLATE_TIMEOUT_MS = 60_000  # the first batches of a shape build TensorFlow functions


class MarkupEngine(ScriptedEngine):
    """The test hooks' engine, except that MARKUP_LINE translates to MARKUP."""

    def translate(self, texts):
        results = super().translate(texts)
        return [Translation(MARKUP, [MARKUP], [-1.25]) if text == MARKUP_LINE else result
                for text, result in zip(texts, results)]


@pytest.fixture(scope="module")
def server(engine):
    running = RunningServer(MarkupEngine(engine, gate_warm_up=True), CONFIG)
    running.start(wait_ready=False)
    yield running
    running.state.draining = False
    running.state.engine.warm_up_gate.set()
    running.stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} not found: apt-get install chromium (.ci/run does).")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"] if os.geteuid() == 0 else [])
        yield launched
        launched.close()


class Page:
    """The browser tab on the server's page, with what it requested and complained of."""

    def __init__(self, browser, url: str):
        self.tab = browser.new_page()
        self.requests, self.errors = [], []
        self.tab.on("request", lambda request: self.requests.append(request.url))
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        # (a 503 or 422 answer is logged as "Failed to load resource": expected here)
        self.tab.on("console", lambda message: message.type == "error"
                    and not message.text.startswith("Failed to load resource")
                    and self.errors.append(message.text))
        self.tab.goto(url + "/")

    def translate(self, lines, typed: bool = False) -> None:
        """Enters `lines` in the text box (typing them key by key if `typed`), clicks
        Translate and waits for the answer."""
        box = self.tab.locator("#source")
        box.fill("")
        if typed:
            box.press_sequentially("\n".join(lines))
        else:
            box.fill("\n".join(lines))
        self.tab.locator("#translate").click()
        expect(self.tab.locator("#translate")).to_be_enabled(timeout=TRANSLATE_TIMEOUT_MS)

    def column(self, name: str):
        return self.tab.locator(f"#results tbody td.{name}").all_text_contents()


@pytest.fixture(scope="module")
def page(browser, server):
    opened = Page(browser, server.url)
    yield opened
    opened.tab.close()


def readyz_reason(server) -> str:
    status, _, body = http(server.url + "/readyz")
    assert status == 503
    return body["error"]["message"]


def expect_badge(page, text: str, reason: str) -> None:
    expect(page.tab.locator("#badge")).to_have_text(text, timeout=10_000)
    expect(page.tab.locator("#readiness")).to_have_text(reason)


def test_badge_follows_readyz(server, page):
    assert not server.state.ready, "this test runs first, before the warm-up is let go"
    warming = readyz_reason(server)
    assert warming == ("The server is not ready: warming up: the first sentence is being "
                       "translated.")
    expect_badge(page, "not ready", warming)
    expect(page.tab.locator("#model")).to_have_text("model: (unknown)")

    server.state.engine.warm_up_gate.set()
    server.wait_ready()
    assert http(server.url + "/readyz")[0] == 200
    expect_badge(page, "ready", "")
    expect(page.tab.locator("#model")).to_have_text(f"model: {MODEL_NAME}, version 3")

    server.state.draining = True
    try:
        draining = readyz_reason(server)
        assert draining == "The server is shutting down."
        expect_badge(page, "not ready", draining)
    finally:
        server.state.draining = False
    expect_badge(page, "ready", "")

    page.tab.route("**/readyz", lambda route: route.abort())
    try:
        expect_badge(page, "unreachable", "GET /readyz got no answer")
    finally:
        page.tab.unroute("**/readyz")
    expect_badge(page, "ready", "")


def test_shows_the_decoders_translations(server, engine, page):
    lines = number_sentences(4)[1:3] + ["", number_sentences(4)[3]]
    page.translate(lines, typed=True)
    expected = decoder_lines(engine, lines)
    assert len(set(expected)) == 4  # three real translations and "": a real check
    status, _, answer = http(server.url + "/v1/translate", {"inputs": lines})
    assert status == 200 and answer["outputs"] == expected
    assert page.column("output") == expected
    assert page.column("source") == lines
    assert page.column("n") == ["1", "2", "3", "4"]
    assert page.column("score") == [f"{score:.3f}" for score in answer["scores"]]
    assert page.column("score")[2] == "0.000"
    assert re.fullmatch(r"4 sentences in \d+ ms", page.tab.locator("#timing").inner_text())
    expect(page.tab.locator("#error")).to_be_hidden()


def test_translation_with_markup_is_shown_as_text(page):
    page.translate(["<i>one</i>", MARKUP_LINE])
    assert page.column("source")[0] == "<i>one</i>"
    assert page.column("output")[1] == MARKUP
    assert page.column("score")[1] == "-1.250"
    cell = page.tab.locator("#results tbody td.output").nth(1)
    assert cell.inner_html() == ("&lt;b&gt;bold&lt;/b&gt; &amp; &lt;i&gt;not&lt;/i&gt; markup "
                                 "&lt;script&gt;document.title='x'&lt;/script&gt;")
    assert page.tab.locator("#results b, #results i, #results script").count() == 0
    assert page.tab.title() == "t2t-server"


@pytest.mark.parametrize("lines, message", [
    (["one", "two", "three", "four", "five"],
     "inputs has 5 sentences; the limit is 4 per request (--max_request_sentences)."),
    (["one", "x" * 61],
     "inputs[1] has 61 characters; the limit is 60 (--max_sentence_chars)."),
], ids=["sentences", "characters"])
def test_over_limit_input_shows_the_error_in_place(server, page, lines, message):
    page.translate(["one"])
    expect(page.tab.locator("#results")).to_be_visible()
    page.translate(lines)
    status, _, answer = http(server.url + "/v1/translate", {"inputs": lines})
    assert (status, answer["error"]) == (422, {"code": "too_large", "message": message})
    expect(page.tab.locator("#error")).to_have_text(f"422 too_large: {message}")
    expect(page.tab.locator("#results")).to_be_hidden()
    assert re.fullmatch(r"failed after \d+ ms", page.tab.locator("#timing").inner_text())


def test_page_loads_nothing_from_elsewhere(server, page):
    status, headers, body = http(server.url + "/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert "<textarea id=\"source\"" in body
    hosts = {urlsplit(url).netloc for url in page.requests if not url.startswith("data:")}
    assert hosts == {f"127.0.0.1:{server.port}"}
    assert page.errors == []
