"""t2t-datagen as its own process: its wall and CPU time, the process tree's
memory (sampled), and its lines, each stamped as it arrives."""

import os
import subprocess
import sys
import threading
import time
from typing import Dict, List, Tuple

from .code_tree import CHECK_ORIGIN, child_env
from .corpus import PROBLEM

SAMPLE_SECONDS = 0.2

# The child: t2t-datagen with the code of the tree given as its first argument.
DATAGEN = CHECK_ORIGIN.format(modules=["t2t_lite.data.datagen", "t2t_lite.problems",
                                        "t2t_lite.hparams", "t2t_lite.bin.t2t_datagen"]) + """
from t2t_lite.bin.t2t_datagen import main
sys.argv = ["t2t-datagen"] + sys.argv[2:]
sys.exit(main())
"""


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
    command = [sys.executable, "-c", DATAGEN, code_root, f"--problem={PROBLEM}",
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
