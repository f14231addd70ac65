"""t2t-server as a program: SIGTERM while requests are in flight answers them all,
then the process exits 0 and the port is closed."""

import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from serving import (DECODE, decoder_lines, http, metric,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences

REQUESTS = [number_sentences(120)[i::3] for i in range(3)]  # 3 requests of 40 sentences


class ServerProcess:
    """`t2t-server --port=0` in a subprocess; its stderr read on a thread."""

    def __init__(self, model_path: str):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "t2t_lite.bin.t2t_server", f"--output_dir={model_path}",
             "--model_name=ende", f"--decode_hparams={DECODE}", "--port=0",
             "--max_batch_sentences=4", "--drain_timeout_s=60"],
            stderr=subprocess.PIPE, text=True, env=env)
        self.lines, self.url = [], None
        self.listening, self.ready = threading.Event(), threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line)
            found = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
            if found:
                self.url = found.group(1)
                self.listening.set()
            if "t2t_lite.serve: ready:" in line:
                self.ready.set()

    def stderr(self) -> str:
        return "".join(self.lines)


@pytest.fixture(scope="module")
def server_process(model_path):
    server = ServerProcess(model_path)
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait(30)


def test_sigterm_drains_in_flight_requests(server_process, engine):
    server = server_process
    assert server.ready.wait(120), server.stderr()
    with concurrent.futures.ThreadPoolExecutor(len(REQUESTS)) as pool:
        answers = [pool.submit(http, server.url + "/v1/translate", {"inputs": inputs})
                   for inputs in REQUESTS]
        deadline = time.monotonic() + 60  # until all three are received (a bounded poll)
        while metric(http(server.url + "/metrics")[2],
                     't2t_server_requests_in_progress{route="/v1/translate"}') < 3:
            assert time.monotonic() < deadline and not any(a.done() for a in answers)
            time.sleep(0.01)
        server.process.send_signal(signal.SIGTERM)
        results = [a.result() for a in answers]
    assert server.process.wait(60) == 0, server.stderr()
    for inputs, (status, _, body) in zip(REQUESTS, results):
        assert status == 200
        assert body["outputs"] == decoder_lines(engine, inputs)
    assert "draining" in server.stderr() and "stopped" in server.stderr()
    assert server.stderr().count('"POST /v1/translate HTTP/1.1" 200') == 3  # the access log
    with pytest.raises(OSError):
        http(server.url + "/healthz", timeout=5)


def test_help_and_user_mistakes(model_path, capsys):
    from t2t_lite.bin import t2t_server
    with pytest.raises(SystemExit) as exited:
        t2t_server.main(["--help"])
    assert exited.value.code == 0 and "--max_batch_tokens" in capsys.readouterr().out
    assert t2t_server.main([f"--output_dir={model_path}", "--max_batch_tokens=0"]) == 1
    assert t2t_server.main([f"--output_dir={model_path}",
                            "--decode_hparams=alignments=true"]) == 1
    assert t2t_server.main([f"--output_dir={model_path}", "--decode_hparams=beam=2"]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert errors[0] == "t2t-server: error: max_batch_tokens must be > 0, got 0."
    assert errors[1] == ("t2t-server: error: alignments=true is not served: t2t-server writes "
                         "translations (and scores) only.")
    assert errors[2].startswith("t2t-server: error: Unknown decode hparam 'beam'.")
    assert len(errors) == 3  # one line each, no traceback
