"""Closed-loop HTTP load on t2t-server: sentences/s, latency and every answer checked.

    # the numbers model (sentences: a seeded draw of number words, as the problem makes them)
    .venv/bin/python bench/http_load.py --output_dir=t2t_model \\
        --decode_hparams=beam_size=4 [--clients=1,8,64] [--seconds=30] [--report=r.json]
    # any other model: the first --count lines of a file
    .venv/bin/python bench/http_load.py --output_dir=m30k/avg --decode_hparams=beam_size=4 \\
        --sentences=../shared/data/multi30k/test_2016_flickr.en --count=1000

1. `t2t-decoder` (its own process, the same --decode_hparams and
   --checkpoint_average, with write_beam_scores) translates the sentence set
   once: each sentence's line and score. For the CTranslate2 configurations,
   `t2t-decoder --engine=ctranslate2 [--quantization=int8]` does too: that
   engine's own reference.
2. For each of `--configs` (CONFIGS: batching off, batching on, CTranslate2
   float32 and int8), `t2t-server --port=0` starts as its own process (its
   stderr into a log file; the port read from its start line; /readyz polled
   until 200). Then `--warmup_seconds` of load with the most clients (answers
   checked, not timed), and for each of `--clients` that many closed-loop
   clients (asyncio coroutines sharing one aiohttp session: each sends
   `POST /v1/translate` with one sentence of its own seeded draw, waits for
   the answer, sends the next) for `--seconds`. Every answer is judged:
     ok             t2t-decoder's line for its sentence;
     wrong_request  not one output and one score, or another sentence's line
                    with that sentence's score (within SCORE_TOLERANCE), in
                    either reference, and not its own sentence's line in
                    either: an answer that belongs to another request (exit 1);
     mismatch       anything else: float rounding of a batch's composition,
                    or CTranslate2's search differing from t2t-lite's ("vs
                    engine" counts the answers that differ from the served
                    engine's own t2t-decoder line too);
     error          no 200 answer.
   Figures: sentences/s (answers / time until the last answer), p50 and p99
   latency, mismatches, the client's CPU time (this process, which shares the
   machine), the server's CPU time (/proc), and its batches (the
   `t2t_server_batch_sentences` histogram of /metrics, read before and after).
   Then SIGTERM.
3. The ceiling, for each CTranslate2 configuration run: CTranslate2 in this
   process (`CT2Engine`, which t2t-server's --engine=ctranslate2 uses: the
   cached conversion, the same `translate_batch` arguments and extra_length
   cap, as many batches at once as the server's workers) on the same
   sentences, drawn as the clients draw them; each window of `clients`
   sentences (what the server's queue holds at most) sorted by length and cut
   into batches of the mean size the server's batches had at that client
   count; as many batches at once as the server's workers, but no more than
   `clients` sentences in flight fill; for `--seconds`. This imports t2t_lite
   and TensorFlow, after every server has stopped.

--decode_hparams with return_beams, write_beam_scores or alignments is refused
(the answers are compared with plain lines; a TAB inside a translation, which
t2t-decoder writes as a space beside a score, would count as a mismatch).

Prints the host's CPU (model, AVX-512 and AMX flags, cores), the load average
before and after, one table per configuration and the ratios the issue asks
for; `--report` writes all figures as JSON. Exit status: 1 if any answer went
to the wrong request, 2 if the benchmark could not run (one line on stderr).
"""

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from typing import List, Optional

# bench/load/: this script's parts (bench/ is sys.path[0] when it runs)
from load.ceiling import CEILING_OF, ceiling
from load.client import run_clients, summarize
from load.programs import BenchError
from load.references import Reference, check_decode_hparams, decoder_reference, sentence_set
from load.report import HEADER, host_info, print_mismatches, print_run, ratios
from load.server_process import ServerProcess, batch_histogram, histogram_delta

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CONFIGS = {  # name -> (engine flags: t2t-server's and t2t-decoder's, batching flags)
    "batching_off": ((), ("--max_batch_sentences=1",)),
    "batching_on": ((), ()),
    "ct2_float32": (("--engine=ctranslate2",), ()),
    "ct2_int8": (("--engine=ctranslate2", "--quantization=int8"), ()),
}


def bench_config(name: str, args, sentences, decoder: Reference, engine: Reference,
                 log_dir: str) -> dict:
    """One configuration: a server, a warm-up, then each client count; the server stopped."""
    flags = [*CONFIGS[name][0], *CONFIGS[name][1], *shlex.split(args.server_flags)]
    server = ServerProcess(args.output_dir, args.decode_hparams, args.checkpoint_average,
                           flags, os.path.join(log_dir, f"{name}.log"))
    try:
        server.wait_ready()
        warm_up = summarize(run_clients(server.url, sentences, decoder, engine,
                                        max(args.clients), args.warmup_seconds, args.seed + 1))
        runs = {}
        for clients in args.clients:
            before, cpu = batch_histogram(server.url), server.cpu_seconds()
            summary = summarize(run_clients(server.url, sentences, decoder, engine, clients,
                                            args.seconds, args.seed))
            summary["server_cpu_s"] = server.cpu_seconds() - cpu
            runs[clients] = {**summary,
                             **histogram_delta(before, batch_histogram(server.url))}
            print_run(name, clients, runs[clients])
    finally:
        code = server.stop()
    return {"flags": flags, "batch_workers": server.workers, "exit_code": code,
            "warm_up": warm_up, "runs": runs, "log": server.log_path}


# -- the program -------------------------------------------------------------------------

def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True, help="the model directory served")
    p.add_argument("--decode_hparams", default="", help="t2t-decoder's and t2t-server's")
    p.add_argument("--checkpoint_average", type=int, default=1)
    p.add_argument("--sentences", help="a file of sentences (default for the numbers "
                                       "model: number words)")
    p.add_argument("--count", type=int, default=1000, help="sentences in the set")
    p.add_argument("--clients", default="1,8,64", help="client counts, comma-separated")
    p.add_argument("--seconds", type=float, default=30, help="of load per client count")
    p.add_argument("--warmup_seconds", type=float, default=3)
    p.add_argument("--configs", default=",".join(CONFIGS), help="of " + ", ".join(CONFIGS))
    p.add_argument("--server_flags", default="", help="more t2t-server flags, for every config")
    p.add_argument("--no_ceiling", action="store_true", help="skip in-process CTranslate2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log_dir", help="keep the servers' logs here (default: a temporary "
                                     "directory, removed)")
    p.add_argument("--report", help="write every figure as JSON to this file")
    args = p.parse_args(argv)
    try:
        args.clients = [int(c) for c in args.clients.split(",")]
    except ValueError:
        p.error(f"--clients must be integers separated by commas, got {args.clients!r}")
    args.configs = args.configs.split(",")
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown or min(args.clients) < 1 or args.count < 1 or args.seconds <= 0:
        p.error(f"unknown --configs {unknown} (known: {', '.join(CONFIGS)})" if unknown else
                "--clients, --count and --seconds must be positive")
    return args


def run(args, workdir: str) -> dict:
    host = host_info()
    print(f"host: {host['cpu']}, {host['usable_cores']} of {host['cores']} cores usable, "
          f"flags {' '.join(host['flags']) or 'none'}; load average "
          + " ".join(f"{x:.2f}" for x in host["load_average"]) + "; " +
          ", ".join(f"{k} {v}" for k, v in host["versions"].items()), flush=True)
    check_decode_hparams(args.decode_hparams)
    sentences = sentence_set(args.output_dir, args.sentences, args.count, args.seed)
    references = {}  # engine flags -> t2t-decoder's reference with that engine
    for name in args.configs:
        engine_flags = CONFIGS[name][0]
        if engine_flags not in references:
            began = time.perf_counter()
            references[engine_flags] = decoder_reference(args, engine_flags, sentences, workdir)
            print(f"t2t-decoder {' '.join(engine_flags) or '(TensorFlow)'}: "
                  f"{len(set(references[engine_flags].lines))} distinct lines, "
                  f"{time.perf_counter() - began:.1f} s", flush=True)
    decoder = references.get((), None) or decoder_reference(args, (), sentences, workdir)
    print(f"{len(sentences)} sentences ({len(set(sentences))} distinct), decode_hparams "
          f"{args.decode_hparams!r}, {args.seconds:g} s per client count", flush=True)
    report = {"host": host, "settings": dict(vars(args)), "sentences": len(sentences),
              "distinct_decoder_lines": len(set(decoder.lines)), "configs": {}, "ceiling": {}}
    print(HEADER, flush=True)
    for name in args.configs:
        report["configs"][name] = bench_config(name, args, sentences, decoder,
                                               references[CONFIGS[name][0]],
                                               args.log_dir or workdir)
    for name, quantization in CEILING_OF.items():
        if name in report["configs"] and not args.no_ceiling:
            config = report["configs"][name]
            report["ceiling"][quantization] = ceiling(
                args, quantization, config["batch_workers"], sentences, decoder,
                references[CONFIGS[name][0]],
                {c: run["mean_batch"] for c, run in config["runs"].items()})
    report = json.loads(json.dumps(report))  # client counts become strings, as in the file
    report["ratios"] = ratios(report)
    report["load_average_after"] = os.getloadavg()
    return report


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="http_load_") as workdir:
            report = run(args, workdir)
    except BenchError as e:
        print(f"http_load: error: {e}", file=sys.stderr)
        return 2
    print_mismatches(report)
    for name, value in report["ratios"].items():
        print(f"{name} at {max(args.clients)} clients: {value:.2f}x")
    print("load average after: " + " ".join(f"{x:.2f}" for x in report["load_average_after"]))
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)
    wrong = sum(config["warm_up"]["wrong_request"] +
                sum(run["wrong_request"] for run in config["runs"].values())
                for config in report["configs"].values())
    if wrong:
        print(f"http_load: {wrong} answer(s) went to the wrong request", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
