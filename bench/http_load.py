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
import asyncio
import dataclasses
import importlib.metadata
import itertools
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Dict, List, Optional, Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CONFIGS = {  # name -> (engine flags: t2t-server's and t2t-decoder's, batching flags)
    "batching_off": ((), ("--max_batch_sentences=1",)),
    "batching_on": ((), ()),
    "ct2_float32": (("--engine=ctranslate2",), ()),
    "ct2_int8": (("--engine=ctranslate2", "--quantization=int8"), ()),
}
# Options that change a written line's shape: not benchmarked.
SHAPING = ("return_beams", "write_beam_scores", "alignments")
# t2t-decoder writes scores with 4 decimals; a batch's composition moves them by ~1e-5.
SCORE_TOLERANCE = 1e-3
CEILING_OF = {"ct2_float32": "float32", "ct2_int8": "int8"}  # config -> quantization
NUMBERS_PROBLEM = "translate_ende_numbers"
SHOWN_MISMATCHES = 5
START_TIMEOUT_S = 600  # a first CTranslate2 conversion included
LISTENING = re.compile(r"on (http://\S+:\d+) \((\d+) batch worker")


class BenchError(Exception):
    """The benchmark cannot run (bad flags, a program failed); told in one line."""


# -- the sentences and what t2t-decoder makes of them ---------------------------------

def number_sentences(count: int, seed: int) -> List[str]:
    """`count` English number words as translate_ende_numbers writes them (num2words),
    of 1 to 6 digits in equal shares, drawn with `random.Random(seed)`."""
    from num2words import num2words

    rng = random.Random(seed)
    numbers = []
    for _ in range(count):
        digits = rng.randint(1, 6)
        numbers.append(rng.randrange(0 if digits == 1 else 10 ** (digits - 1), 10 ** digits))
    return [num2words(n, lang="en") for n in numbers]


def model_problem(output_dir: str) -> str:
    """The problem name in the model directory's problem.json."""
    try:
        with open(os.path.join(output_dir, "problem.json"), encoding="utf-8") as f:
            return json.load(f)["problem"]
    except (OSError, ValueError, KeyError) as e:
        raise BenchError(f"{output_dir!r} is not a model directory ({e})") from None


def sentence_set(output_dir: str, path: Optional[str], count: int, seed: int) -> List[str]:
    """The first `count` lines of `path`, or without it number words for the numbers model."""
    if path is None:
        if model_problem(output_dir) != NUMBERS_PROBLEM:
            raise BenchError(f"give --sentences: only {NUMBERS_PROBLEM} has default sentences")
        return number_sentences(count, seed)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")[:count]
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"cannot read --sentences {path!r}: {e}") from None
    lines = [line.rstrip("\r") for line in lines if line.strip()]  # blank lines aren't searched
    if not lines:
        raise BenchError(f"--sentences {path!r} holds no non-blank line")
    return lines


def program(name: str) -> List[str]:
    """The command that runs a t2t-lite program with this interpreter."""
    return [sys.executable, "-m", f"t2t_lite.bin.{name}"]


@dataclasses.dataclass
class Reference:
    """t2t-decoder's line and score for each sentence, with one engine."""

    lines: List[str]
    scores: List[float]

    def __post_init__(self):
        self.owners: Dict[str, List[int]] = {}  # line -> the sentences translated into it
        for i, line in enumerate(self.lines):
            self.owners.setdefault(line, []).append(i)


def check_decode_hparams(decode_hparams: str) -> None:
    """Refuses the options that change a written line's shape (the answers are compared
    with t2t-decoder's lines, read with their scores)."""
    for item in filter(None, decode_hparams.split(",")):
        key, _, value = item.partition("=")
        if key.strip() in SHAPING and value.strip().lower() not in ("false", "0"):
            raise BenchError(f"--decode_hparams {key.strip()} is not benchmarked: the "
                             "answers are compared with t2t-decoder's plain lines")


def decoder_reference(args, engine_flags: Sequence[str], sentences: Sequence[str],
                      workdir: str) -> Reference:
    """t2t-decoder's line and score for each sentence: its own process, its default
    batching, `engine_flags` (none: TensorFlow), `write_beam_scores` added."""
    source = os.path.join(workdir, "sentences.txt")
    target = os.path.join(workdir, "decoded-" + "-".join(engine_flags).replace("=", "_") + ".txt")
    with open(source, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in sentences))
    hparams = ",".join(filter(None, [args.decode_hparams, "write_beam_scores=true"]))
    result = subprocess.run(program("t2t_decoder") + [
        f"--output_dir={args.output_dir}", f"--decode_hparams={hparams}",
        f"--checkpoint_average={args.checkpoint_average}", f"--decode_from_file={source}",
        f"--decode_to_file={target}", *engine_flags], capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError("t2t-decoder failed: " + (result.stderr.strip().splitlines() or ["?"])[-1])
    with open(target, encoding="utf-8", newline="") as f:
        rows = [line.rsplit("\t", 1) for line in f.read().split("\n")[:-1]]
    if len(rows) != len(sentences) or any(len(row) != 2 for row in rows):
        raise BenchError(f"t2t-decoder wrote {len(rows)} lines 'translation<TAB>score' for "
                         f"{len(sentences)} sentences")
    return Reference([line for line, _ in rows], [float(score) for _, score in rows])


# -- checking one answer ----------------------------------------------------------------

def classify(index: int, body, decoder: Reference, engine: Reference) -> str:
    """"ok", "wrong_request" or "mismatch" for a 200 answer `body` to sentence `index`
    (see the module docstring): `decoder` is t2t-decoder's reference, `engine` its
    reference with the served engine (the same object for TensorFlow)."""
    outputs = body.get("outputs") if isinstance(body, dict) else None
    scores = body.get("scores") if isinstance(body, dict) else None
    if not (isinstance(outputs, list) and isinstance(scores, list) and len(outputs) == 1
            and len(scores) == 1 and isinstance(scores[0], (int, float))):
        return "wrong_request"
    output, score = outputs[0], scores[0]
    if output == decoder.lines[index]:
        return "ok"
    if output == engine.lines[index]:
        return "mismatch"
    for reference in (decoder, engine):
        if any(abs(score - reference.scores[j]) <= SCORE_TOLERANCE
               for j in reference.owners.get(output, ()) if j != index):
            return "wrong_request"
    return "mismatch"


class Tally:
    """What one load run saw: latencies, each answer's verdict, and how many answers
    differ from t2t-decoder's line with the served engine."""

    def __init__(self):
        self.latencies: List[float] = []
        self.counts = {"ok": 0, "mismatch": 0, "wrong_request": 0, "error": 0}
        self.engine_mismatch = 0
        self.examples: Dict[str, List[dict]] = {"mismatch": [], "wrong_request": [], "error": []}

    def add(self, verdict: str, latency: float, example: dict, engine_line: bool) -> None:
        self.latencies.append(latency)
        self.counts[verdict] += 1
        self.engine_mismatch += verdict in ("mismatch", "wrong_request") and not engine_line
        if verdict != "ok" and len(self.examples[verdict]) < SHOWN_MISMATCHES:
            self.examples[verdict].append(example)


# -- the closed-loop clients --------------------------------------------------------------

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


# -- t2t-server as a process ---------------------------------------------------------------

def batch_histogram(url: str) -> Dict[str, float]:
    """The `t2t_server_batch_sentences` histogram of the server's /metrics:
    {"count", "sum", "le=<bound>": cumulative count, ...}."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode("utf-8")
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name == "t2t_server_batch_sentences":
            for sample in family.samples:
                key = sample.name.rsplit("_", 1)[1]
                found[f"le={sample.labels['le']}" if key == "bucket" else key] = sample.value
    return found


def histogram_delta(before: Dict[str, float], after: Dict[str, float]) -> dict:
    """Batches, their mean size and per-bucket counts (not cumulative) between two reads."""
    count = after.get("count", 0) - before.get("count", 0)
    buckets, below = {}, 0.0
    for key in (k for k in after if k.startswith("le=")):
        cumulative = after[key] - before.get(key, 0)
        if cumulative > below:
            buckets[key[3:]] = cumulative - below
        below = cumulative
    return {"batches": count,
            "mean_batch": (after.get("sum", 0) - before.get("sum", 0)) / count if count else None,
            "batch_sizes": buckets}


class ServerProcess:
    """`t2t-server --port=0` with `flags`, its stderr in `log_path` (not read while
    the load runs: the client's CPU time stays its own)."""

    def __init__(self, output_dir: str, decode_hparams: str, checkpoint_average: int,
                 flags: Sequence[str], log_path: str):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.process = subprocess.Popen(
                program("t2t_server") + [f"--output_dir={output_dir}", "--model_name=bench",
                                         f"--decode_hparams={decode_hparams}",
                                         f"--checkpoint_average={checkpoint_average}",
                                         "--port=0", *flags],
                stdout=subprocess.DEVNULL, stderr=log)
        self.url: Optional[str] = None
        self.workers = 0

    def log_tail(self, lines: int = 5) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return " | ".join(f.read().strip().splitlines()[-lines:])

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Waits for the start line (URL, batch workers), then for /readyz 200."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"t2t-server exited with {self.process.returncode}: "
                                 + self.log_tail())
            if self.url is None:
                with open(self.log_path, encoding="utf-8", errors="replace") as f:
                    found = LISTENING.search(f.read())
                if found:
                    self.url, self.workers = found.group(1), int(found.group(2))
            elif self._ready():
                return
            time.sleep(0.2)
        raise BenchError(f"t2t-server not ready after {timeout_s:.0f} s: " + self.log_tail())

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (/proc/PID/stat)."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, then its exit code (killed if it has not exited by `timeout_s`)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


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


# -- the ceiling: CTranslate2 in this process -----------------------------------------------

def ceiling_batches(lengths: Sequence[int], window: int, batch_size: int, seed: int,
                    count: int) -> List[List[int]]:
    """Batches of sentence indices: `count` seeded draws, each `window` of them sorted by
    `lengths` and cut into batches of at most `batch_size`."""
    rng = random.Random(seed)
    draws = [rng.randrange(len(lengths)) for _ in range(count)]
    batches = []
    for start in range(0, count, window):
        part = sorted(draws[start:start + window], key=lambda i: lengths[i])
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    return batches


def drive(translate, batches: List[List[int]], workers: int, seconds: float) -> dict:
    """`workers` threads calling `translate(batch)` on `batches` in turn (cycling) for
    `seconds`; {"sentences", "seconds", "outputs": {index: the last output}}."""
    turn, lock, outputs = itertools.count(), threading.Lock(), {}
    done = []
    deadline = time.perf_counter() + seconds

    def work():
        while time.perf_counter() < deadline:
            batch = batches[next(turn) % len(batches)]  # next() is atomic under the GIL
            lines = translate(batch)
            with lock:
                done.append(len(batch))
                outputs.update(zip(batch, lines))

    began = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"sentences": sum(done), "seconds": time.perf_counter() - began, "outputs": outputs}


def ceiling(args, quantization: str, workers: int, sentences, decoder: Reference,
            engine_reference: Reference, batch_sizes: Dict[int, float]) -> dict:
    """{clients: figures} of CTranslate2 in-process in batches of the server's mean size."""
    from t2t_lite.bin.cli import filtered_native_stderr
    from t2t_lite.errors import T2TError

    with filtered_native_stderr():  # TensorFlow's start-up notes (CT2Engine reads the model)
        from t2t_lite.serve.ctranslate2_engine import CT2Engine

        try:
            engine = CT2Engine.load(args.output_dir, args.decode_hparams,
                                    args.checkpoint_average, quantization=quantization,
                                    workers=workers)
        except T2TError as e:
            raise BenchError(f"the in-process CTranslate2 engine: {e}") from None
    engine.warm_up()
    lengths = engine.token_lengths(sentences)

    def translate(batch):
        return [t.line for t in engine.translate([sentences[i] for i in batch])]

    results = {}
    for clients, mean in batch_sizes.items():
        size = max(1, round(mean or 1))
        batches = ceiling_batches(lengths, clients, size, args.seed, 4 * len(sentences))
        # No more batches at once than the clients' sentences in flight fill.
        threads = min(workers, max(1, round(clients / size)))
        load = drive(translate, batches, threads, args.seconds)
        outputs = load["outputs"].items()
        same = sum(line == decoder.lines[i] for i, line in outputs)
        same_engine = sum(line == engine_reference.lines[i] for i, line in outputs)
        results[clients] = {"batch_size": size, "threads": threads,
                            "sentences": load["sentences"],
                            "seconds": load["seconds"],
                            "sentences_per_s": load["sentences"] / load["seconds"],
                            "identical_pct": 100.0 * same / max(1, len(outputs)),
                            "identical_to_engine_pct": 100.0 * same_engine / max(1, len(outputs))}
        print(f"ceiling: CTranslate2 {quantization} in-process, batches of {size} "
              f"({clients} clients' mean), {threads} at once: "
              f"{results[clients]['sentences_per_s']:.1f} sentences/s; of the "
              f"sentences, {results[clients]['identical_pct']:.1f}% identical to t2t-decoder's "
              f"line, {results[clients]['identical_to_engine_pct']:.1f}% to t2t-decoder "
              "--engine=ctranslate2's", flush=True)
    return results


# -- the host and the printed tables -------------------------------------------------------

def host_info() -> dict:
    """CPU model, AVX-512/AMX flags, cores, load average and the packages' versions."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    model = re.search(r"model name\s*:\s*(.*)", text)
    versions = {}
    for package in ("ctranslate2", "tensorflow", "aiohttp"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {"cpu": model.group(1).strip() if model else "unknown",
            "flags": sorted(set(re.findall(r"\b(avx512\w*|amx_\w+)", text))),
            "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg(), "versions": versions}


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0f}"


def print_run(name: str, clients: int, run: dict) -> None:
    """One row: a configuration at one client count."""
    mean = "-" if run["mean_batch"] is None else f"{run['mean_batch']:.1f}"
    print(f"{name:<13} {clients:>7} {run['sentences_per_s']:>11.1f} {_ms(run['p50_ms']):>7} "
          f"{_ms(run['p99_ms']):>7} {run['mismatch']:>6} ({run['mismatch_pct']:4.1f}%) "
          f"{run['engine_mismatch']:>9} {run['wrong_request']:>5} {run['error']:>6} {mean:>10} "
          f"{run['client_cpu_s']:>6.1f} ({run['client_cpu_pct']:3.0f}%) "
          f"{run['server_cpu_s']:>7.1f}", flush=True)


HEADER = (f"{'config':<13} {'clients':>7} {'sentences/s':>11} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'mismatches':>14} {'vs engine':>9} {'wrong':>5} {'errors':>6} {'mean batch':>10} "
          f"{'client CPU s':>13} {'server CPU s':>7}")


def ratios(report: dict) -> Dict[str, float]:
    """The comparisons of the issue at the most clients, where both sides ran."""
    most = str(max(report["settings"]["clients"]))
    results, found = report["configs"], {}

    def rate(config):
        return results.get(config, {}).get("runs", {}).get(most, {}).get("sentences_per_s")

    if rate("batching_on") and rate("batching_off"):
        found["batching_on / batching_off"] = rate("batching_on") / rate("batching_off")
    for config, quantization in CEILING_OF.items():
        top = report["ceiling"].get(quantization, {}).get(most, {}).get("sentences_per_s")
        if rate(config) and top:
            found[f"{config} / in-process ceiling"] = rate(config) / top
    return found


def shown_answer(example: dict) -> str:
    """An example's answer, short: the output line of a 200, else status and body."""
    got = example["got"]
    if example["status"] == 200 and isinstance(got, dict) and len(got.get("outputs") or []) == 1:
        return repr(got["outputs"][0])
    return f"{example['status']} {got!r}"


def print_mismatches(report: dict) -> None:
    """Each configuration's examples of answers not equal to t2t-decoder's line, each
    (sentence, answer) once, at most SHOWN_MISMATCHES of each kind."""
    for name, config in report["configs"].items():
        shown = {}
        for run in [config["warm_up"], *config["runs"].values()]:
            for verdict, examples in run["examples"].items():
                for e in examples:
                    key = (verdict, e["sentence"], shown_answer(e))
                    if sum(k[0] == verdict for k in shown) < SHOWN_MISMATCHES:
                        shown.setdefault(key, e)
        for verdict, sentence, answer in shown:
            print(f"  {verdict.upper()} {name}: {sentence!r}: t2t-decoder "
                  f"{shown[verdict, sentence, answer]['expected']!r}, server {answer}")


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
