"""How often t2t-decoder exits with something else than 0: many runs, their exit codes.

    python bench/decoder_exit_codes.py --output_dir=M --decode_from_file=F [--runs 100]
        [--decode_hparams=batch_size=2,beam_size=1] [--cores 16] [--at_once 1]

Runs t2t-decoder `--runs` times, each in a fresh `python -X faulthandler`
process, `--at_once` of them at a time. With `--cores N` each process sees N
CPU cores (its affinity mask is replaced, as in
tests/decode/test_decoder_threads.py), so that as many batches are decoded at
once as on an N-core host. Prints the count of each exit code (-11: killed by
SIGSEGV), how many outputs differ from the first run's, and the last lines of
stderr of every run that failed (faulthandler's report of a crash: every thread's stack). A crash
that comes once in tens of runs shows up more often on a loaded host: run
`python -c 'while 1: pass'` beside it.
"""

import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import tempfile

# t2t-decoder with `cores` CPU cores in its affinity mask (0: the real mask).
DECODER = """
import os, sys
cores = int(sys.argv.pop(1))
if cores:
    os.sched_getaffinity = lambda pid: set(range(cores))
from t2t_lite.bin import t2t_decoder
sys.exit(t2t_decoder.main(sys.argv[1:]))
"""


def run_once(args: argparse.Namespace, output: str) -> subprocess.CompletedProcess:
    """One t2t-decoder process writing `output`; its exit code and stderr."""
    argv = [f"--output_dir={args.output_dir}", f"--decode_from_file={args.decode_from_file}",
            f"--decode_to_file={output}", f"--decode_hparams={args.decode_hparams}"]
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", DECODER, str(args.cores),
                           *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def crash_report(stderr: str) -> str:
    """faulthandler's report in `stderr` (every thread's stack), else its last 15 lines."""
    start = stderr.find("Fatal Python error")
    return stderr[start:] if start >= 0 else "\n".join(stderr.splitlines()[-15:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True, help="a model directory")
    p.add_argument("--decode_from_file", required=True, help="the lines to translate")
    p.add_argument("--decode_hparams", default="batch_size=2,beam_size=1",
                   help="as t2t-decoder's")
    p.add_argument("--runs", type=int, default=100, help="decoder processes in all")
    p.add_argument("--at_once", type=int, default=1, help="decoder processes at a time")
    p.add_argument("--cores", type=int, default=0,
                   help="the CPU cores each process sees (0: the real ones)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.at_once) as pool:
        outputs = [os.path.join(tmp, f"out{i}.txt") for i in range(args.runs)]
        codes, differ, reference = collections.Counter(), 0, None
        for i, proc in enumerate(pool.map(lambda out: run_once(args, out), outputs)):
            codes[proc.returncode] += 1
            if proc.returncode != 0:
                print(f"run {i + 1}: exit {proc.returncode}; stderr:\n{crash_report(proc.stderr)}",
                      flush=True)
                continue
            with open(outputs[i], encoding="utf-8") as f:
                text = f.read()
            reference = text if reference is None else reference
            differ += text != reference
        print(f"{args.runs} runs, exit codes: "
              + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items()))
              + f"; outputs unlike the first run's: {differ}")


if __name__ == "__main__":
    main()
