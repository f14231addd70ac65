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
import json
import os
import shutil
from typing import Dict, List, Optional

# bench/datagen/: this script's parts (bench/ is sys.path[0] when it runs)
from datagen.code_tree import INSTALLED_ROOT, git_info, prepare_code_root
from datagen.corpus import PROBLEM, build_corpus
from datagen.datagen_process import run_datagen
from datagen.figures import gaps, metadata_examples, parse_phases, shard_sizes
from datagen.pipeline_process import run_pipeline
from datagen.report import host, print_table


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
