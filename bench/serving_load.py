"""Concurrent load on an exported model: throughput, latency, and every request's own answer.

    # an export written by t2t-exporter (its base directory: the newest version; or a version)
    .venv/bin/t2t-trainer --problem=translate_ende_numbers --hparams_set=transformer_tiny \\
        --generate_data --data_dir=/tmp/load_data --tmp_dir=/tmp/load_tmp \\
        --output_dir=/tmp/load_model
    .venv/bin/t2t-exporter --output_dir=/tmp/load_model --export_dir=/tmp/load_export
    .venv/bin/python bench/serving_load.py --export_dir=/tmp/load_export \\
        [--threads=8] [--seconds=60] [--requests=32] [--seed=0] [--report=report.json]

    # or let it export a model directory first (t2t-exporter in its own process,
    # into a temporary directory removed afterwards)
    .venv/bin/python bench/serving_load.py --output_dir=/tmp/load_model \\
        [--decode_hparams=beam_size=4]

The process that loads and calls the SavedModel imports only tensorflow and
tensorflow_text, as a client or TF Serving would (it checks that t2t_lite is
not in `sys.modules`).

1. A fixed request set is drawn from `--seed`: `--requests` batches of 1 to 64
   sentences (one of 1, one of 64) mixing empty and whitespace-only inputs,
   short number phrases, non-ASCII text and inputs longer than the model's
   `max_length` subwords (the export truncates them).
2. One thread calls `serving_default` on every batch of the set: the expected
   outputs and scores of each batch.
3. `--threads` threads each draw batches from the set (their own seeded
   order) and call `serving_default` for `--seconds`; every answer is
   compared with the single-threaded answer for that exact batch: outputs
   equal, scores within `SCORE_TOLERANCE`.

Printed: requests/s, sentences/s, p50/p99 latency of a request, requests per
thread, and each mismatch (request, sentence, expected, got). The exit status
is 1 when any request got an answer that is not its own. `--report` writes all
figures as JSON (what tests/export/test_serving_load.py reads).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# Outputs must be equal; scores may differ by float rounding only (none was seen).
SCORE_TOLERANCE = 1e-5
MAX_BATCH = 64
KINDS = ("blank", "short", "non_ascii", "long")
KIND_WEIGHTS = (0.1, 0.67, 0.2, 0.03)
LONG_WORDS = 400  # number words: well beyond max_length (256) subwords
NON_ASCII = ("fünf — 東京 ✓ naïve", "zweiundvierzig Grüße", "Ünïcödé ½ €",
             "😀 twenty-one", "三百四十二", "Привет, мир", "dreißig „Zitat“",
             "café\u00a0crème")
BLANKS = ("", " ", "   ", "\t", "\u3000\t", "\n")

Answer = Tuple[List[str], List[float]]  # outputs, scores of one batch


# -- the request set ------------------------------------------------------------

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
         "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> str:
    """English words of 0 <= n < 1,000,000, as translate_ende_numbers writes them."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")
    if n < 1000:
        rest = " and " + number_words(n % 100) if n % 100 else ""
        return _ONES[n // 100] + " hundred" + rest
    rest = ", " + number_words(n % 1000) if n % 1000 else ""
    return number_words(n // 1000) + " thousand" + rest


def make_sentence(kind: str, rng: random.Random) -> str:
    """One input of `kind` (see KINDS)."""
    if kind == "blank":
        return rng.choice(BLANKS)
    if kind == "short":
        return number_words(rng.randrange(1_000_000))
    if kind == "non_ascii":
        return rng.choice(NON_ASCII) + " " + number_words(rng.randrange(1000))
    if kind == "long":
        return " ".join(number_words(rng.randrange(100)) for _ in range(LONG_WORDS))
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def make_requests(count: int, seed: int) -> List[List[str]]:
    """`count` (>= 2) seeded batches of 1 to 64 sentences: the first of 1, the second of 64
    holding every kind of input."""
    if count < 2:
        raise ValueError(f"need at least 2 requests (sizes 1 and {MAX_BATCH}), got {count}")
    rng = random.Random(seed)
    sizes = [1, MAX_BATCH] + [rng.randint(1, MAX_BATCH) for _ in range(count - 2)]
    requests = [[make_sentence(k, rng) for k in rng.choices(KINDS, KIND_WEIGHTS, k=size)]
                for size in sizes]
    requests[1][:len(KINDS)] = [make_sentence(kind, rng) for kind in KINDS]
    return requests


def kind_of(sentence: str) -> str:
    """Which of KINDS an input is (by looking at it: blank, long, non-ASCII or short)."""
    if not sentence.strip():
        return "blank"
    if len(sentence.split()) >= LONG_WORDS:
        return "long"
    return "short" if sentence.isascii() else "non_ascii"


def count_kinds(requests: Sequence[Sequence[str]]) -> Dict[str, int]:
    """How many inputs of each kind the request set holds."""
    counts = dict.fromkeys(KINDS, 0)
    for batch in requests:
        for sentence in batch:
            counts[kind_of(sentence)] += 1
    return counts


# -- checking answers under load --------------------------------------------------

def compare(request: int, expected: Answer, got: Answer) -> List[dict]:
    """The sentences of one request whose output or score differs from the expected answer."""
    if len(got[0]) != len(expected[0]) or len(got[1]) != len(expected[1]):
        return [{"request": request, "sentence": None,
                 "expected": f"{len(expected[0])} outputs", "got": f"{len(got[0])} outputs"}]
    return [{"request": request, "sentence": i, "expected": [eo, es], "got": [go, gs]}
            for i, (eo, es, go, gs) in enumerate(zip(*expected, *got))
            if go != eo or abs(gs - es) > SCORE_TOLERANCE * max(1.0, abs(es))]


def score_difference(expected: Answer, got: Answer) -> float:
    """The largest |score - expected score| of one answer (0.0 when the counts differ)."""
    if len(got[1]) != len(expected[1]):
        return 0.0
    return max((abs(g - e) for e, g in zip(expected[1], got[1])), default=0.0)


def _worker(translate, requests, expected, rng, clock, stats) -> None:
    """One client thread: draw a request, time the call, compare, until the deadline."""
    clock["start"].wait()  # every thread starts together, after the deadline is set
    while time.perf_counter() < clock["deadline"]:
        index = rng.randrange(len(requests))
        begin = time.perf_counter()
        try:
            got = translate(requests[index])
        except Exception as error:  # noqa: BLE001  a failed request is a wrong answer
            got = error
        stats["latencies"].append(time.perf_counter() - begin)
        stats["sentences"] += len(requests[index])
        if isinstance(got, Exception):
            stats["mismatches"].append({"request": index, "sentence": None,
                                        "expected": "an answer", "got": repr(got)})
            continue
        stats["mismatches"].extend(compare(index, expected[index], got))
        stats["score_difference"] = max(stats["score_difference"],
                                        score_difference(expected[index], got))


def run_load(translate: Callable[[List[str]], Answer], requests: List[List[str]],
             expected: List[Answer], threads: int, seconds: float, seed: int) -> dict:
    """Calls `translate` from `threads` threads for `seconds`, checking every answer.

    Args:
      translate: batch of sentences -> (outputs, scores); must be safe to call concurrently.
      requests: the request set; `expected[i]` is the single-threaded answer to `requests[i]`.
      threads, seconds: how many client threads, for how long each keeps sending.
      seed: thread t draws its requests from `random.Random(seed * 1000 + t)`.

    Returns:
      {"seconds" (until the last request in flight at the deadline returned),
       "requests_per_thread", "sentences", "latencies" (seconds, all requests),
       "mismatches": [{"request", "sentence", "expected", "got"}, ...],
       "max_score_difference" (largest |score - expected| seen, mismatches included)}.
    """
    stats = [{"latencies": [], "sentences": 0, "mismatches": [], "score_difference": 0.0}
             for _ in range(threads)]
    clock = {"start": threading.Barrier(threads + 1)}
    pool = [threading.Thread(target=_worker, args=(translate, requests, expected,
                                                   random.Random(seed * 1000 + t), clock,
                                                   stats[t]))
            for t in range(threads)]
    for thread in pool:
        thread.start()
    began = time.perf_counter()
    clock["deadline"] = began + seconds
    clock["start"].wait()
    for thread in pool:
        thread.join()
    return {"seconds": time.perf_counter() - began,
            "requests_per_thread": [len(s["latencies"]) for s in stats],
            "sentences": sum(s["sentences"] for s in stats),
            "latencies": [x for s in stats for x in s["latencies"]],
            "mismatches": [m for s in stats for m in s["mismatches"]],
            "max_score_difference": max(s["score_difference"] for s in stats)}


def summarize(load: dict) -> dict:
    """requests/s, sentences/s, p50/p99 latency (ms) and mismatch count of a `run_load` result."""
    latencies = sorted(load["latencies"])

    def percentile(p: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]

    return {"requests": len(latencies),
            "requests_per_s": len(latencies) / load["seconds"],
            "sentences_per_s": load["sentences"] / load["seconds"],
            "p50_ms": percentile(50) if latencies else None,
            "p99_ms": percentile(99) if latencies else None,
            "mismatches": len(load["mismatches"]),
            "max_score_difference": load["max_score_difference"]}


# -- the SavedModel ---------------------------------------------------------------

def resolve_version(export_dir: str) -> str:
    """`export_dir` itself if it holds saved_model.pb, else its highest integer version."""
    if os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    found = [int(n) for n in os.listdir(export_dir) if n.isdigit()] if os.path.isdir(
        export_dir) else []
    if not found:
        raise ValueError(f"{export_dir!r} holds no saved_model.pb and no numbered version")
    return os.path.join(export_dir, str(max(found)))


def export_model(output_dir: str, export_dir: str, decode_hparams: str = "") -> str:
    """Exports `output_dir` with t2t-exporter in a separate process; returns the version path.

    This process must not import t2t_lite: only the exporter's process does.
    """
    command = [sys.executable, "-m", "t2t_lite.bin.t2t_exporter", f"--output_dir={output_dir}",
               f"--export_dir={export_dir}", f"--decode_hparams={decode_hparams}"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"t2t-exporter failed:\n{result.stderr[-2000:]}")
    return result.stdout.strip().splitlines()[-1]


def load_translate(path: str) -> Callable[[List[str]], Answer]:
    """`serving_default` of the SavedModel at `path` as batch -> (outputs, scores)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the SentencePiece ops

    signature = tf.saved_model.load(path).signatures["serving_default"]

    def translate(batch: List[str]) -> Answer:
        result = signature(inputs=tf.constant(batch, dtype=tf.string))
        return ([s.decode("utf-8") for s in result["outputs"].numpy()],
                result["scores"].numpy().tolist())

    return translate


def check(path: str, threads: int = 8, seconds: float = 60, requests: int = 32,
          seed: int = 0) -> dict:
    """The whole check on one SavedModel version: reference pass, then concurrent load.

    Returns `summarize`'s figures (with "max_score_difference") plus
    "requests_per_thread", "kinds" (inputs of each kind in the set),
    "distinct_outputs"/"distinct_scores" (among the expected answers: a mixed-up
    answer is visible only if answers differ), "reference_seconds" (the
    single-threaded pass), "t2t_lite_imported" and "mismatch_list".
    """
    translate = load_translate(path)
    batches = make_requests(requests, seed)
    begin = time.perf_counter()
    expected = [translate(batch) for batch in batches]
    reference_seconds = time.perf_counter() - begin
    load = run_load(translate, batches, expected, threads, seconds, seed)
    return {**summarize(load), "path": path, "threads": threads, "seconds": load["seconds"],
            "seed": seed, "request_set": requests,
            "requests_per_thread": load["requests_per_thread"],
            "kinds": count_kinds(batches),
            "distinct_outputs": len({o for outputs, _ in expected for o in outputs}),
            "distinct_scores": len({s for _, scores in expected for s in scores}),
            "reference_seconds": reference_seconds,
            "t2t_lite_imported": any(m.split(".")[0] == "t2t_lite" for m in sys.modules),
            "mismatch_list": load["mismatches"]}


def print_report(report: dict, out=None) -> None:
    """The figures of `check` as a few lines, then up to 20 mismatches (to `out`: stdout)."""
    out = out or sys.stdout
    kinds = ", ".join(f"{n} {k}" for k, n in report["kinds"].items())
    print(f"{report['path']}: {report['threads']} threads, {report['seconds']:.1f} s, "
          f"{report['request_set']} request batches (seed {report['seed']}; {kinds})", file=out)
    print(f"requests {report['requests']}  requests/s {report['requests_per_s']:.2f}  "
          f"sentences/s {report['sentences_per_s']:.1f}  p50 {report['p50_ms']:.0f} ms  "
          f"p99 {report['p99_ms']:.0f} ms  mismatches {report['mismatches']}  "
          f"max score difference {report['max_score_difference']:.3g}", file=out)
    print(f"requests per thread {report['requests_per_thread']}", file=out)
    for m in report["mismatch_list"][:20]:
        print(f"  MISMATCH request {m['request']} sentence {m['sentence']}: "
              f"expected {m['expected']!r}, got {m['got']!r}", file=out)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", help="a SavedModel version, or the base directory "
                                             "of versions (the newest is used)")
    parser.add_argument("--output_dir", help="without --export_dir: a model directory to "
                                             "export first (t2t-exporter, own process)")
    parser.add_argument("--decode_hparams", default="", help="for the export of --output_dir")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--requests", type=int, default=32, help="request batches in the set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", help="also write the figures as JSON to this file")
    args = parser.parse_args(argv)
    if not args.export_dir and not args.output_dir:
        parser.error("give --export_dir (an export) or --output_dir (a model directory)")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="serving_load_") as tmp:
        if args.export_dir:
            path = resolve_version(args.export_dir)
        else:
            path = export_model(args.output_dir, tmp, args.decode_hparams)
            print(f"exported {args.output_dir} to {path} (removed afterwards)")
        report = check(path, args.threads, args.seconds, args.requests, args.seed)
    print_report(report)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)
    if report["t2t_lite_imported"]:
        print("error: t2t_lite was imported by the loading process", file=sys.stderr)
        return 1
    return 1 if report["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
