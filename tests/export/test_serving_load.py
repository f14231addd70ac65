"""bench/serving_load.py's check: under concurrent load every request gets its own answer.

The benchmark runs as users run it: its own process, importing only tensorflow
and tensorflow_text, 8 threads calling `serving_default` on one export. No
assertion here is about speed.
"""

import itertools
import json
import os
import subprocess
import sys

import pytest

from t2t_lite.export.exporter import export
from t2t_lite.model_dir import ModelDir

from model_dirs import make_model_dir
from paths import REPO_ROOT, bench_module

BENCH = REPO_ROOT / "bench" / "serving_load.py"
# Cheap decoding: the check is about whose answer comes back, not about quality.
DECODE = "beam_size=2,alpha=0.6,extra_length=4,max_input_length=48"


serving_load = bench_module("serving_load")


@pytest.fixture(scope="module")
def version(tmp_path_factory):
    """The version path of an export of a small random-weight model."""
    model_dir = make_model_dir(str(tmp_path_factory.mktemp("m") / "model"), steps=(1,))
    return export(ModelDir.open(model_dir), str(tmp_path_factory.mktemp("e") / "ende"), DECODE)


def test_eight_threads_each_get_their_own_translations(version, tmp_path):
    report_file = tmp_path / "report.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, str(BENCH), f"--export_dir={os.path.dirname(version)}",
         "--threads=8", "--seconds=3", "--requests=8", "--seed=3", f"--report={report_file}"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(report_file.read_text(encoding="utf-8"))

    assert report["path"] == version  # the newest version of the base directory
    assert not report["t2t_lite_imported"]
    assert report["mismatches"] == 0 and report["mismatch_list"] == []
    assert len(report["requests_per_thread"]) == 8
    assert min(report["requests_per_thread"]) > 0
    assert report["requests"] == sum(report["requests_per_thread"])
    kinds = report["kinds"]
    assert kinds["blank"] > 0 and kinds["long"] > 0 and kinds["non_ascii"] > 0
    assert kinds["short"] > kinds["long"]
    # Answers differ between sentences, so a mixed-up answer could not pass unseen.
    assert report["distinct_scores"] > 0.5 * (sum(kinds.values()) - kinds["blank"])
    assert "mismatches 0" in result.stdout


def test_request_set_is_fixed_by_the_seed_and_mixes_every_kind():
    requests = serving_load.make_requests(8, seed=3)
    assert requests == serving_load.make_requests(8, seed=3)
    assert requests != serving_load.make_requests(8, seed=4)
    assert [len(b) for b in requests[:2]] == [1, 64]
    assert all(1 <= len(b) <= 64 for b in requests)
    assert [serving_load.kind_of(s) for s in requests[1][:4]] == [
        "blank", "short", "non_ascii", "long"]
    assert serving_load.number_words(21506) == "twenty-one thousand, five hundred and six"


class _MixUp:
    """A fake `translate` that answers every third call with the next request's answer."""

    def __init__(self, requests, answers):
        self.answers = {tuple(r): a for r, a in zip(requests, answers)}
        self.others = {tuple(r): answers[(i + 1) % len(answers)]
                       for i, r in enumerate(requests)}
        self.calls = itertools.count(1)  # next() is atomic: threads share the count

    def __call__(self, batch):
        return (self.others if next(self.calls) % 3 == 0 else self.answers)[tuple(batch)]


def test_every_mixed_up_answer_is_counted_with_what_was_expected():
    requests = [["a", "b"], ["c", "d"], ["e", "f"]]
    answers = [(["A", "B"], [-1.0, -2.0]), (["C", "D"], [-3.0, -4.0]), (["E", "F"], [-5.0, -6.0])]
    load = serving_load.run_load(_MixUp(requests, answers), requests, answers,
                                 threads=2, seconds=1.0, seed=0)
    calls = sum(load["requests_per_thread"])
    assert calls >= 3 and min(load["requests_per_thread"]) > 0
    assert serving_load.summarize(load)["mismatches"] == 2 * (calls // 3)  # both sentences
    for m in load["mismatches"]:
        mine, other = answers[m["request"]], answers[(m["request"] + 1) % 3]
        assert m["expected"] == [mine[0][m["sentence"]], mine[1][m["sentence"]]]
        assert m["got"] == [other[0][m["sentence"]], other[1][m["sentence"]]]


def test_a_failed_request_is_a_mismatch_with_its_error():
    def translate(batch):
        if batch == ["boom"]:
            raise ValueError("no answer")
        return [s.upper() for s in batch], [-1.0] * len(batch)

    requests = [["ok"], ["boom"]]
    answers = [(["OK"], [-1.0]), (["BOOM"], [-1.0])]
    load = serving_load.run_load(translate, requests, answers, threads=2, seconds=0.2, seed=0)
    assert load["mismatches"]  # both threads draw from 2 requests for 0.2 s
    assert all(m == {"request": 1, "sentence": None, "expected": "an answer",
                     "got": "ValueError('no answer')"} for m in load["mismatches"])


def test_a_score_off_by_more_than_rounding_is_a_mismatch():
    expected = (["x", "y"], [-1.0, -2.0])
    assert serving_load.compare(7, expected, (["x", "y"], [-1.0, -2.0 * (1 + 1e-6)])) == []
    assert serving_load.compare(7, expected, (["x", "y"], [-1.0, -2.001])) == [
        {"request": 7, "sentence": 1, "expected": ["y", -2.0], "got": ["y", -2.001]}]
    assert serving_load.compare(7, expected, (["x"], [-1.0]))[0]["sentence"] is None


def test_the_program_exits_1_and_prints_each_mismatch(monkeypatch, capsys):
    load = {"seconds": 2.0, "requests_per_thread": [1, 1], "sentences": 3,
            "latencies": [0.1, 0.3], "max_score_difference": 0.5,
            "mismatches": [{"request": 4, "sentence": 0, "expected": ["drei", -1.0],
                            "got": ["vier", -1.5]}]}
    report = {**serving_load.summarize(load), "path": "e/1", "threads": 2, "seconds": 2.0,
              "seed": 0, "request_set": 5, "requests_per_thread": [1, 1],
              "kinds": {"blank": 1, "short": 2, "non_ascii": 0, "long": 0},
              "t2t_lite_imported": False, "mismatch_list": load["mismatches"]}
    monkeypatch.setattr(serving_load, "resolve_version", lambda path: "e/1")
    monkeypatch.setattr(serving_load, "check", lambda *args: report)
    assert serving_load.main(["--export_dir=e"]) == 1
    out = capsys.readouterr().out
    assert ("requests 2  requests/s 1.00  sentences/s 1.5  p50 300 ms  p99 300 ms  "
            "mismatches 1  max score difference 0.5") in out
    assert "MISMATCH request 4 sentence 0: expected ['drei', -1.0], got ['vier', -1.5]" in out
    report.update(mismatches=0, mismatch_list=[])
    assert serving_load.main(["--export_dir=e"]) == 0
