"""The Multi30k English->German recipe: datagen, training, averaging, decoding, sacreBLEU.

    python recipes/multi30k_ende.py --tmp_dir=../shared/data/multi30k --work_dir=m30k

runs, as a user would type them, the commands the README lists:

    t2t-datagen --problem=translate_ende_multi30k ...
    t2t-trainer --hparams_set=transformer_multi30k --max_train_minutes=... ...
    t2t-avg-checkpoints --checkpoints=<the last 5 saved by each time mark> ...
    t2t-decoder --decode_hparams=beam_size=4,alpha=0.6 --decode_reference=... ...

and then scores test_2016_flickr at each time mark (`--marks`, minutes of
training wall time counted from the trainer's start, start-up included) and at
the end, with the four combinations of {last checkpoint, average of the last
`--average` checkpoints} x {greedy, beam 4}. It prints one table and writes it
to WORK_DIR/results.json; the last line is the final score.

Checkpoints are saved every `--save_secs` seconds and all kept, so the
checkpoints "available at minute m" are those whose timestamp (in the model
directory's `checkpoint` state file) is at most m minutes after the start.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from typing import Dict, List, Optional

PROBLEM = "translate_ende_multi30k"
TEST_STEM = "test_2016_flickr"


def run_command(args: List[str], log_path: str) -> str:
    """Runs a t2t-lite command, echoing it; returns its stderr. A failure ends the recipe."""
    print("+ " + " ".join(args), flush=True)
    # The console scripts installed beside this interpreter (a venv's bin/), else PATH's.
    local = os.path.join(os.path.dirname(sys.executable), args[0])
    args = [local if os.path.exists(local) else args[0]] + args[1:]
    with open(log_path, "a", encoding="utf-8") as log:
        proc = subprocess.run(args, stdout=log, stderr=subprocess.PIPE, text=True)
        log.write(proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        sys.exit(f"recipe: {args[0]} exited with {proc.returncode} (log: {log_path}):\n{tail}")
    return proc.stderr


def checkpoint_times(model_dir: str) -> List[tuple]:
    """(timestamp, prefix) of every checkpoint in the model directory, oldest first."""
    with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
        text = f.read()
    paths = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.M)
    stamps = [float(t) for t in re.findall(r"^all_model_checkpoint_timestamps: (\S+)$", text, re.M)]
    if len(paths) != len(stamps):
        raise SystemExit(f"recipe: {model_dir}/checkpoint lists {len(paths)} checkpoints but "
                         f"{len(stamps)} timestamps.")
    return list(zip(stamps, [os.path.join(model_dir, p) for p in paths]))


def decode_bleu(model_dir: str, checkpoint: Optional[str], beam_size: int, tmp_dir: str,
                out_path: str, log_path: str) -> tuple:
    """Translates the test set; returns the sacreBLEU score and signature t2t-decoder printed."""
    args = ["t2t-decoder", f"--output_dir={model_dir}",
            f"--decode_hparams=beam_size={beam_size},alpha=0.6",
            f"--decode_from_file={os.path.join(tmp_dir, TEST_STEM + '.en')}",
            f"--decode_to_file={out_path}",
            f"--decode_reference={os.path.join(tmp_dir, TEST_STEM + '.de')}"]
    if checkpoint:
        args.append(f"--checkpoint_path={checkpoint}")
    stderr = run_command(args, log_path)
    match = re.search(r"^BLEU = ([0-9.]+) (\S+)", stderr, re.M)
    if not match:
        raise SystemExit(f"recipe: no BLEU line from t2t-decoder (log: {log_path}).")
    return float(match.group(1)), match.group(2)


def score_mark(label: str, available: List[tuple], args, log_path: str) -> Dict[str, object]:
    """The four scores with the checkpoints available at one time mark."""
    last = available[-1][1]
    to_average = [p for _, p in available[-args.average:]]
    avg_dir = os.path.join(args.work_dir, f"avg_{label}")
    run_command(["t2t-avg-checkpoints", f"--output_dir={args.model_dir}",
                 "--checkpoints=" + ",".join(to_average), f"--avg_dir={avg_dir}"], log_path)
    row = {"mark": label, "checkpoint": os.path.basename(last),
           "averaged": [os.path.basename(p) for p in to_average]}
    for name, model_dir, checkpoint in (("single", args.model_dir, last),
                                        ("avg", avg_dir, None)):
        for beam in (1, 4):
            out = os.path.join(args.work_dir, f"test_{label}_{name}_beam{beam}.de")
            row[f"{name}_beam{beam}"], row["signature"] = decode_bleu(
                model_dir, checkpoint, beam, args.tmp_dir, out, log_path)
    return row


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tmp_dir", required=True, help="Multi30k task-1 raw files (train/val/test)")
    p.add_argument("--work_dir", required=True, help="data/, model/, averages and outputs go here")
    p.add_argument("--hparams_set", default="transformer_multi30k")
    p.add_argument("--hparams", default="")
    p.add_argument("--train_minutes", type=float, default=60)
    p.add_argument("--train_steps", type=int, default=0, help="0: the hparams set's")
    p.add_argument("--marks", default="25,50", help="minutes at which to score as well")
    p.add_argument("--save_secs", type=int, default=120)
    p.add_argument("--average", type=int, default=5, help="checkpoints averaged")
    p.add_argument("--eval_every", type=int, default=500)
    p.add_argument("--eval_bleu_sentences", type=int, default=1014)
    args = p.parse_args(argv)
    args.model_dir = os.path.join(args.work_dir, "model")
    args.data_dir = os.path.join(args.work_dir, "data")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    log_path = os.path.join(args.work_dir, "recipe.log")
    run_command(["t2t-datagen", f"--problem={PROBLEM}", f"--data_dir={args.data_dir}",
                 f"--tmp_dir={args.tmp_dir}"], log_path)
    start = time.time()
    train = ["t2t-trainer", f"--problem={PROBLEM}", f"--hparams_set={args.hparams_set}",
             f"--data_dir={args.data_dir}", f"--output_dir={args.model_dir}",
             f"--max_train_minutes={args.train_minutes:g}", f"--train_steps={args.train_steps}",
             f"--save_checkpoints_secs={args.save_secs}", "--save_checkpoints_steps=0",
             "--keep_checkpoint_max=0", f"--eval_every={args.eval_every}",
             f"--eval_bleu_sentences={args.eval_bleu_sentences}"]
    if args.hparams:
        train.append(f"--hparams={args.hparams}")
    run_command(train, log_path)
    train_minutes = (time.time() - start) / 60
    checkpoints = checkpoint_times(args.model_dir)
    marks = [float(m) for m in args.marks.split(",") if m.strip()]
    rows = []
    for mark in marks:
        available = [c for c in checkpoints if c[0] <= start + 60 * mark]
        if available and mark < train_minutes:
            rows.append(score_mark(f"{mark:g}min", available, args, log_path))
    rows.append(score_mark("final", checkpoints, args, log_path))
    rows[-1]["train_minutes"] = round(train_minutes, 1)
    with open(os.path.join(args.work_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    print(f"\n{'mark':>8} {'checkpoint':>10} {'greedy':>7} {'beam4':>7} "
          f"{'avg greedy':>11} {'avg beam4':>10}   (test_2016_flickr sacreBLEU; avg: the last "
          f"{args.average} checkpoints)")
    for r in rows:
        print(f"{r['mark']:>8} {r['checkpoint']:>10} {r['single_beam1']:7.2f} "
              f"{r['single_beam4']:7.2f} {r['avg_beam1']:11.2f} {r['avg_beam4']:10.2f}")
    final = rows[-1]
    print(f"Final: {TEST_STEM} sacreBLEU {final['avg_beam4']:.2f} (average of "
          f"{len(final['averaged'])} checkpoints, beam 4, {final['train_minutes']} min of "
          f"training, last {final['checkpoint']}) {final['signature']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
