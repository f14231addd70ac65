"""t2t-datagen at WMT scale: a 4.5M-pair corpus, timed, with memory and progress gaps.

    python bench/datagen_scale.py --work_dir=DIR [--pairs=4500000] [--code_root=TREE]
        [--label=NAME] [--report=FILE.json] [--keep] [--data=../shared/data]
        [--pipeline_batches=200] [--pipeline_warmup=20] [--batch_size=4096]

1. Builds `DIR/corpus/` (not timed as datagen; reused while it has `--pairs`
   pairs): the WMT news test sets 2008-2012 en-de of `--data` (every
   `wmt_newstest_2008_2012/*.en-de.en` with its `.de`, in name order, 13,573
   pairs) repeated until `--pairs`, repetition r with each line's words rotated
   left by r (modulo the line's word count), as `synthnews.en-de.{en,de}`, the
   train split of `translate_ende`; dev and test are symlinks to
   `wmt14/newstest2013` and `wmt14/newstest2014-full`.
2. Runs the user's command, `t2t-datagen --problem=translate_ende
   --data_dir=DIR/data-LABEL --tmp_dir=DIR/corpus`, as its own process, into a
   fresh data dir, with the code of `--code_root` (default: this checkout; e.g.
   a `git worktree` of an older commit for the baseline) and this Python. The
   package installs `problems/`, `hparams/` and `bin/` as `t2t_lite.problems`,
   `.hparams` and `.bin`; for a tree other than the installed one, the missing
   `t2t_lite/{problems,hparams,bin}` symlinks are created in it (said so), and
   the child refuses to run if any of those modules comes from elsewhere.
   Measured: wall time, CPU time (user + sys from `os.wait4`), the process
   tree's peak summed RSS (sampled every 0.2 s, every process and thread
   included) and the kernel's max RSS, the phase times datagen prints (the
   vocabulary's, and each split's with its pairs/s; the train split covers
   encoding and, in newer code, shuffling the shards), the last encoding rate
   of datagen's progress lines, the longest gap between two consecutive lines
   datagen printed (each line timestamped as it arrives, the child unbuffered
   as on a terminal), the shard sizes, and the training pipeline's examples/s
   (`make_dataset(training=True)` on the train shards, `--pipeline_batches`
   batches of `--batch_size` tokens after `--pipeline_warmup`, in another
   process so that its memory is not datagen's).
3. Prints a table, the host (CPU model, AVX-512/AMX flags, cores) and the load
   average before and after; `--report` writes every figure as JSON; datagen's
   timestamped lines go to `DIR/datagen-LABEL.log`. The data dir is deleted at
   the end unless `--keep`.

To compare two commits, run it twice on one idle host with the same
`--work_dir` (the corpus is built once), e.g. for the baseline
`git worktree add /tmp/base COMMIT` and `--code_root=/tmp/base --label=base`.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

PROBLEM = "translate_ende"
STEM = "synthnews.en-de"
CORPUS_VERSION = 1  # the stamp's format and the rotation rule
HERE = os.path.dirname(os.path.abspath(__file__))
INSTALLED_ROOT = os.path.dirname(HERE)  # this checkout: the tree the venv's editable install maps
MAPPED_PACKAGES = ("problems", "hparams", "bin")  # setup.py's package_dir: t2t_lite.<name>
SAMPLE_SECONDS = 0.2
GAP_LIMIT_S = 10.0  # issue 42: a progress line every 10 s or less ...
GAP_SLACK_S = 0.5  # ... counted late beyond this (a heartbeat thread wakes ms late when busy)

# The child programs, run with `python -c CODE ROOT ARGS...` and PYTHONPATH=ROOT.
_CHECK_ORIGIN = """
import os, sys, importlib.util
root = os.path.realpath(sys.argv[1])
for name in {modules!r}:  # found, not imported: t2t-datagen sets TF's log level first
    origin = os.path.realpath(importlib.util.find_spec(name).origin)
    if not origin.startswith(root + os.sep):
        sys.exit(f"datagen_scale: {{name}} comes from {{origin}}, not from {{root}}")
"""
_DATAGEN = _CHECK_ORIGIN.format(modules=["t2t_lite.data.datagen", "t2t_lite.problems",
                                         "t2t_lite.hparams", "t2t_lite.bin.t2t_datagen"]) + """
from t2t_lite.bin.t2t_datagen import main
sys.argv = ["t2t-datagen"] + sys.argv[2:]
sys.exit(main())
"""
_PIPELINE = _CHECK_ORIGIN.format(modules=["t2t_lite.data.pipeline"]) + """
import json, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from t2t_lite.data.pipeline import make_dataset
data_dir, problem, batch_size, max_length, warmup, batches = sys.argv[2:8]
start = time.perf_counter()
iterator = iter(make_dataset(data_dir, problem, "train", int(batch_size), int(max_length),
                             training=True, seed=1))
for _ in range(int(warmup)):
    next(iterator)
warm = time.perf_counter()
examples = tokens = 0
for _ in range(int(batches)):
    batch = next(iterator)
    examples += int(batch["targets"].shape[0])
    tokens += int((batch["targets"].numpy() != 0).sum())
end = time.perf_counter()
print(json.dumps({"examples_per_s": examples / (end - warm), "target_tokens_per_s":
                  tokens / (end - warm), "examples": examples, "batches": int(batches),
                  "warmup_batches": int(warmup), "warmup_s": warm - start,
                  "timed_s": end - warm}))
"""


# --- The corpus ---------------------------------------------------------------------------

def rotate(line: str, r: int) -> str:
    """`line`'s words rotated left by r modulo its word count (r = 0: the line as is)."""
    words = line.split()
    if r == 0 or not words:
        return line
    k = r % len(words)
    return " ".join(words[k:] + words[:k])


def _read_lines(path: str) -> List[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") or not text else lines


def base_pairs(data: str) -> Tuple[List[str], List[str], List[str]]:
    """The news sets' (English lines, German lines, file stems), files in name order."""
    folder = os.path.join(data, "wmt_newstest_2008_2012")
    stems = sorted(os.path.basename(p)[:-len(".en")]
                   for p in glob.glob(os.path.join(folder, "*.en-de.en")))
    english, german = [], []
    for stem in stems:
        en, de = (_read_lines(os.path.join(folder, f"{stem}.{lang}")) for lang in ("en", "de"))
        if len(en) != len(de):
            sys.exit(f"datagen_scale: {stem}.en and .de differ in length ({len(en)}, {len(de)})")
        english += en
        german += de
    if not english:
        sys.exit(f"datagen_scale: no *.en-de.en files in {folder}")
    return english, german, stems


def build_corpus(data: str, corpus_dir: str, pairs: int) -> Dict:
    """Writes (or reuses) the synthetic corpus and dev/test links; returns its stamp."""
    os.makedirs(corpus_dir, exist_ok=True)
    stamp_path = os.path.join(corpus_dir, STEM + ".json")
    paths = {lang: os.path.join(corpus_dir, f"{STEM}.{lang}") for lang in ("en", "de")}
    english, german, stems = base_pairs(data)
    want = {"version": CORPUS_VERSION, "pairs": pairs, "base_pairs": len(english),
            "base_files": stems}
    try:
        with open(stamp_path, encoding="utf-8") as f:
            stamp = json.load(f)
        if ({k: stamp.get(k) for k in want} == want
                and all(os.path.getsize(paths[lang]) == stamp["bytes"][lang] for lang in paths)):
            print(f"corpus: reusing {corpus_dir} ({pairs:,} pairs)")
            _link_dev_test(data, corpus_dir)
            return stamp
    except (OSError, ValueError, KeyError):
        pass
    start = time.perf_counter()
    sizes = {}
    for lang, lines in (("en", english), ("de", german)):
        tmp = paths[lang] + ".incomplete"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            left, r = pairs, 0
            while left > 0:
                part = lines[:left]
                f.write("".join(rotate(line, r) + "\n" for line in part))
                left, r = left - len(part), r + 1
        os.replace(tmp, paths[lang])
        sizes[lang] = os.path.getsize(paths[lang])
    stamp = dict(want, bytes=sizes, build_s=round(time.perf_counter() - start, 1))
    with open(stamp_path, "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=2)
    print(f"corpus: wrote {pairs:,} pairs ({sum(sizes.values()) / 1e9:.2f} GB) to {corpus_dir} "
          f"in {stamp['build_s']} s")
    _link_dev_test(data, corpus_dir)
    return stamp


def _link_dev_test(data: str, corpus_dir: str) -> None:
    for stem in ("newstest2013.en-de", "newstest2014-full.en-de"):
        for lang in ("en", "de"):
            target = os.path.abspath(os.path.join(data, "wmt14", f"{stem}.{lang}"))
            link = os.path.join(corpus_dir, f"{stem}.{lang}")
            if not os.path.isfile(target):
                sys.exit(f"datagen_scale: missing {target}")
            if not os.path.lexists(link):
                os.symlink(target, link)


# --- The code tree ------------------------------------------------------------------------

def installed_root() -> str:
    """The tree whose `t2t_lite` this Python imports without PYTHONPATH (the
    editable install's), which may not be the tree this script is in."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import importlib.util, os; print(os.path."
                           "dirname(os.path.dirname(importlib.util.find_spec('t2t_lite').origin)))"],
                          capture_output=True, text=True, env=env, cwd="/")
    return done.stdout.strip() if done.returncode == 0 else INSTALLED_ROOT


def prepare_code_root(code_root: str) -> None:
    """Links `t2t_lite/{problems,hparams,bin}` in a tree other than the installed one."""
    if os.path.realpath(code_root) == os.path.realpath(installed_root()):
        return  # the editable install maps them
    for name in MAPPED_PACKAGES:
        link = os.path.join(code_root, "t2t_lite", name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", name), link)
            print(f"code: linked {link} -> ../{name} (as setup.py's package_dir installs it)")


def git_info(code_root: str) -> Dict:
    """The tree's commit and how many tracked files differ from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", code_root, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    changed = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD") or None,
            "subject": git("log", "-1", "--format=%s")[:100] or None,
            "changed_tracked_files": len(changed.splitlines()) if changed else 0}


def child_env(code_root: str) -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.path.abspath(code_root), PYTHONUNBUFFERED="1")


# --- Running and measuring datagen --------------------------------------------------------

def tree_usage(pid: int) -> Tuple[int, float]:
    """(summed resident bytes, summed user + sys CPU seconds) of `pid` and its
    descendants, threads included ((0, 0.0) once it is gone)."""
    try:
        import psutil
    except ImportError:
        return _proc_tree_usage(pid)
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0, 0.0
    rss, cpu = 0, 0.0
    for proc in procs:
        try:
            with proc.oneshot():
                rss += proc.memory_info().rss
                times = proc.cpu_times()
                cpu += times.user + times.system
        except psutil.Error:
            pass
    return rss, cpu


def _proc_tree_usage(pid: int) -> Tuple[int, float]:
    """`tree_usage` from /proc (without psutil)."""
    parents, usage = {}, {}
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # [state, ppid, ...]
            with open(f"/proc/{entry}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        parents[int(entry)] = int(fields[1])
        usage[int(entry)] = (rss, (int(fields[11]) + int(fields[12])) / tick)  # utime, stime
    tree, frontier = set(), {pid}
    while frontier:
        tree |= frontier
        frontier = {p for p, parent in parents.items() if parent in frontier} - tree
    found = [usage[p] for p in tree if p in usage]
    return sum(r for r, _ in found), sum(c for _, c in found)


# A line a child printed: (seconds since the start, the child's CPU seconds then, text).
Line = Tuple[float, float, str]


class Lines:
    """Reads a child's stream on a thread, each line stamped on arrival with the
    time and the child's CPU seconds at the last sample (`cpu`, kept by the caller)."""

    def __init__(self, stream, start: float, echo: str):
        self.lines: List[Line] = []
        self.cpu = 0.0
        self.stream, self.start, self.echo = stream, start, echo
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for raw in self.stream:
            line = raw.rstrip("\n")
            at = time.perf_counter() - self.start
            self.lines.append((at, self.cpu, line))
            print(f"  [{at:7.1f} s]{self.echo} {line}", flush=True)


def run_datagen(code_root: str, data_dir: str, tmp_dir: str) -> Dict:
    """Runs t2t-datagen as its own process; returns wall/CPU time, memory and its lines."""
    command = [sys.executable, "-c", _DATAGEN, code_root, f"--problem={PROBLEM}",
               f"--data_dir={data_dir}", f"--tmp_dir={tmp_dir}"]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=child_env(code_root), cwd=tmp_dir)
    out, err = Lines(child.stdout, start, ""), Lines(child.stderr, start, " (stderr)")
    peak, peak_at, samples = 0, 0.0, 0
    while True:
        finished, status, usage = os.wait4(child.pid, os.WNOHANG)
        if finished:
            break
        rss, cpu = tree_usage(child.pid)
        out.cpu = err.cpu = max(out.cpu, cpu)
        samples += 1
        if rss > peak:
            peak, peak_at = rss, time.perf_counter() - start
        time.sleep(SAMPLE_SECONDS)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    out.thread.join()
    err.thread.join()
    return {"exit_code": child.returncode, "wall_s": wall,
            "cpu_user_s": usage.ru_utime, "cpu_sys_s": usage.ru_stime,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_tree_rss_mb": peak / 1e6, "peak_tree_rss_at_s": peak_at,
            "rss_samples": samples, "kernel_max_rss_mb": usage.ru_maxrss * 1024 / 1e6,
            "stdout": out.lines, "stderr": err.lines}


_NUMBER = r"([\d,]+)"


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_phases(lines: List[Line]) -> Dict:
    """Datagen's own figures from its lines: the vocabulary's time, each split's
    time and pairs/s, the last encoding rate printed; and each phase's CPU seconds
    (the child's CPU at its summary line minus at the previous phase's, 0.2 s samples)."""
    phases: Dict = {"splits": {}}
    before = 0.0  # CPU seconds at the end of the previous phase
    for _, cpu, line in lines:
        if line.startswith("t2t-datagen:"):
            before = cpu  # imports done
        vocab = re.search(r"vocabulary: learned .* in ([\d.]+) s(?: \(learning ([\d.]+) s\))?",
                          line)
        if vocab:
            phases["vocab_s"] = float(vocab.group(1))
            if vocab.group(2):
                phases["vocab_learning_s"] = float(vocab.group(2))
            phases["vocab_cpu_s"], before = cpu - before, cpu
        split = re.search(rf"^\s*(\w+): {_NUMBER} examples in (\d+) shard.*dropped {_NUMBER}"
                          r".*\[([\d.]+) s\]$", line)
        if split:
            examples, dropped = _int(split.group(2)), _int(split.group(4))
            seconds = float(split.group(5))
            phases["splits"][split.group(1)] = {
                "examples": examples, "dropped": dropped, "shards": int(split.group(3)),
                "seconds": seconds, "pairs_per_s": (examples + dropped) / max(seconds, 1e-9),
                "cpu_s": cpu - before}
            before = cpu
        rate = re.search(rf"train: encoding .* {_NUMBER} pairs/s", line)
        if rate:
            phases["train_encoding_pairs_per_s_last_line"] = _int(rate.group(1))
    return phases


def gaps(lines: List[Line], wall: float) -> Dict:
    """The longest silence between consecutive lines, and before the first / after the last."""
    between = [(b - a, a, line) for (a, _, line), (b, _, _) in zip(lines, lines[1:])]
    longest = max(between, default=(0.0, 0.0, ""))
    return {"lines": len(lines), "longest_gap_s": longest[0], "longest_gap_after_s": longest[1],
            "longest_gap_after_line": longest[2].strip(),
            "gaps_late": sum(gap > GAP_LIMIT_S + GAP_SLACK_S for gap, _, _ in between),
            "first_line_s": lines[0][0] if lines else None,
            "after_last_line_s": wall - lines[-1][0] if lines else None}


def shard_sizes(data_dir: str) -> Dict:
    """Count, min/median/max and total MB of each split's shards."""
    sizes: Dict = {}
    for split in ("train", "dev", "test"):
        found = [os.path.getsize(p) / 1e6
                 for p in glob.glob(os.path.join(data_dir, f"{PROBLEM}-{split}-*-of-*"))]
        if found:
            sizes[split] = {"count": len(found), "min_mb": min(found),
                            "median_mb": statistics.median(found), "max_mb": max(found),
                            "total_mb": sum(found)}
    return sizes


def metadata_examples(data_dir: str) -> Dict[str, int]:
    """Examples per split as datagen's metadata records them."""
    try:
        with open(os.path.join(data_dir, f"{PROBLEM}.datagen.json"), encoding="utf-8") as f:
            return {s: v["examples"] for s, v in json.load(f)["splits"].items()}
    except (OSError, ValueError, KeyError):
        return {}


def run_pipeline(code_root: str, data_dir: str, args: argparse.Namespace) -> Dict:
    """The training pipeline's examples/s on the train shards, in its own process."""
    command = [sys.executable, "-c", _PIPELINE, code_root, data_dir, PROBLEM,
               str(args.batch_size), str(args.max_length), str(args.pipeline_warmup),
               str(args.pipeline_batches)]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(code_root),
                          cwd=data_dir)
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- The host and the report --------------------------------------------------------------

def host() -> Dict:
    """CPU model, AVX-512/AMX flags, cores, kernel."""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        cpuinfo = f.read()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    return {"cpu_model": model.group(1) if model else None,
            "cpu_flags": sorted(set(re.findall(r"\b(?:avx512\w*|amx\w*)", cpuinfo))),
            "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "kernel": os.uname().release, "hostname": os.uname().nodename}


def print_table(report: Dict) -> None:
    d, p, g = report["datagen"], report["phases"], report["gaps"]
    rows = [("total wall time", f"{d['wall_s']:.1f} s"),
            ("CPU time (user + sys)", f"{d['cpu_s']:.1f} s ({d['cpu_user_s']:.1f} + "
                                      f"{d['cpu_sys_s']:.1f}), {d['cpu_s'] / d['wall_s']:.2f} "
                                      "cores busy on average"),
            ("peak RSS, process tree (0.2 s samples)",
             f"{d['peak_tree_rss_mb']:,.0f} MB at {d['peak_tree_rss_at_s']:.0f} s"),
            ("max RSS, kernel (largest process)", f"{d['kernel_max_rss_mb']:,.0f} MB")]
    if "vocab_s" in p:
        learning = (f" (learning {p['vocab_learning_s']:.1f} s)"
                    if "vocab_learning_s" in p else "")
        rows.append(("vocabulary", f"{p['vocab_s']:.1f} s{learning}, "
                                   f"{p['vocab_cpu_s']:.1f} CPU s"))
    for split, s in p["splits"].items():
        rows.append((f"{split} split", f"{s['seconds']:.1f} s, {s['pairs_per_s']:,.0f} pairs/s, "
                                        f"{s['cpu_s']:.1f} CPU s, {s['examples']:,} examples, "
                                        f"dropped {s['dropped']:,}"))
    if "train_encoding_pairs_per_s_last_line" in p:
        rows.append(("train encoding (last progress line)",
                     f"{p['train_encoding_pairs_per_s_last_line']:,} pairs/s"))
    rows.append(("longest gap between lines",
                 f"{g['longest_gap_s']:.1f} s after the line at {g['longest_gap_after_s']:.0f} s"
                 f" ({g['gaps_late']} gap(s) over {GAP_LIMIT_S + GAP_SLACK_S:g} s in {g['lines']}"
                 " lines; "
                 f"first line at {g['first_line_s'] or 0:.1f} s, exit "
                 f"{g['after_last_line_s'] or 0:.1f} s after the last)"))
    rows.append(("  the line before it", g["longest_gap_after_line"][:70]))
    for split, s in report["shards"].items():
        rows.append((f"{split} shards", f"{s['count']} x {s['min_mb']:.2f} / "
                                        f"{s['median_mb']:.2f} / {s['max_mb']:.2f} MB "
                                        f"(min/median/max), {s['total_mb']:,.1f} MB in all"))
    pipe = report["pipeline"]
    rows.append(("training pipeline (train shards)",
                 pipe.get("error") or f"{pipe['examples_per_s']:,.0f} examples/s, "
                                      f"{pipe['target_tokens_per_s']:,.0f} target tokens/s "
                                      f"({pipe['batches']} batches after {pipe['warmup_batches']};"
                                      f" warm-up {pipe['warmup_s']:.1f} s)"))
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    h = report["host"]
    print(f"\nhost: {h['cpu_model']}, {h['cores']} cores ({h['usable_cores']} usable); "
          f"flags: {' '.join(h['cpu_flags']) or 'no AVX-512'}")
    print(f"load average (1/5/15 min): before {report['load_before']}, "
          f"after {report['load_after']}")
    code = report["code"]
    print(f"code: {report['code_root']} at {(code['commit'] or '?')[:10]}"
          + (f" + {code['changed_tracked_files']} changed file(s)"
             if code["changed_tracked_files"] else ""))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", required=True,
                        help="holds the corpus (reused) and the data dir")
    parser.add_argument("--pairs", type=int, default=4_500_000)
    parser.add_argument("--code_root", default=INSTALLED_ROOT,
                        help="the t2t-lite tree whose t2t-datagen runs (default: this checkout)")
    parser.add_argument("--label", default="",
                        help="names the data dir and log (default: the tree's short commit)")
    parser.add_argument("--data", default=os.path.join(INSTALLED_ROOT, "..", "shared", "data"))
    parser.add_argument("--report", default="", help="write every figure to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the data dir")
    parser.add_argument("--batch_size", type=int, default=4096)
    parser.add_argument("--max_length", type=int, default=256)
    parser.add_argument("--pipeline_batches", type=int, default=200)
    parser.add_argument("--pipeline_warmup", type=int, default=20)
    args = parser.parse_args(argv)
    if args.pairs <= 0:
        parser.error("--pairs must be positive")
    code_root = os.path.abspath(args.code_root)
    if not os.path.isfile(os.path.join(code_root, "t2t_lite", "data", "datagen.py")):
        parser.error(f"--code_root {code_root} holds no t2t_lite/data/datagen.py")
    work_dir = os.path.abspath(args.work_dir)
    code = git_info(code_root)
    label = args.label or (code["commit"] or "tree")[:10]

    corpus_dir = os.path.join(work_dir, "corpus")
    corpus = build_corpus(args.data, corpus_dir, args.pairs)
    prepare_code_root(code_root)
    data_dir = os.path.join(work_dir, f"data-{label}")
    shutil.rmtree(data_dir, ignore_errors=True)

    report: Dict = {"pairs": args.pairs, "corpus": corpus, "code_root": code_root, "code": code,
                    "label": label, "data_dir": data_dir, "host": host(),
                    "load_before": [round(x, 2) for x in os.getloadavg()]}
    print(f"datagen: {PROBLEM}, {args.pairs:,} train pairs, code {code_root} "
          f"({label}), load {report['load_before']}", flush=True)
    datagen = run_datagen(code_root, data_dir, corpus_dir)
    lines = datagen.pop("stdout")
    errors = datagen.pop("stderr")
    log_path = os.path.join(work_dir, f"datagen-{label}.log")
    with open(log_path, "w", encoding="utf-8") as f:
        f.writelines(f"{t:9.2f} s {cpu:9.2f} cpu-s  {line}\n" for t, cpu, line in lines)
        f.writelines(f"{t:9.2f} s {cpu:9.2f} cpu-s  stderr: {line}\n" for t, cpu, line in errors)
    report.update(datagen=datagen, log=log_path, phases=parse_phases(lines),
                  gaps=gaps(lines, datagen["wall_s"]), shards=shard_sizes(data_dir),
                  examples=metadata_examples(data_dir))
    if datagen["exit_code"]:
        print(f"datagen_scale: t2t-datagen exited with {datagen['exit_code']}; see {log_path}")
        report["pipeline"] = {"error": "not run: datagen failed"}
    else:
        print("pipeline: reading the train shards ...", flush=True)
        report["pipeline"] = run_pipeline(code_root, data_dir, args)
    report["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print_table(report)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"report: {args.report}")
    if not args.keep:
        shutil.rmtree(data_dir, ignore_errors=True)
    return datagen["exit_code"]


if __name__ == "__main__":
    raise SystemExit(main())
