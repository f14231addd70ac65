"""The Multi30k English->German recipe: datagen, training, averaging, decoding, sacreBLEU.

    python recipes/multi30k_ende.py --tmp_dir=../shared/data/multi30k --work_dir=m30k

runs, as a user would type them, the commands of docs/recipes/multi30k.md:

    t2t-datagen --problem=translate_ende_multi30k ...
    t2t-trainer --hparams_set=transformer_multi30k --train_steps=... ...
    t2t-avg-checkpoints --checkpoints=<the last 5 saved by each mark> ...
        (--select=best_dev_loss: the 5 of lowest dev loss among them)
    t2t-tune-decoder --grid=... on val (with --tune_grid; else --decode_hparams)
    t2t-decoder --decode_hparams=beam_size=4,alpha=0.6 --decode_reference=... ...
    t2t-bleu --moses_lang=de --lowercase ...

The budget is stated the way published results state theirs: optimizer steps
(`--train_steps`, default the hparams set's) of batches of `--batch_size`
tokens (default the set's; like fairseq's --max-tokens, padded max(source,
target) tokens per batch). `--train_minutes` adds a wall-clock limit; with it,
the marks are fractions of those minutes instead.

It then scores test_2016_flickr at each mark (`--marks`, fractions of the
budget: the checkpoints saved by that step, or by that minute counted from the
trainer's start) and at the end, with the four combinations of {last
checkpoint, average of `--average` checkpoints} x {greedy, the search of
--decode_hparams or chosen on val}, and the average's search output also
lowercased and Moses-tokenized (the convention of papers scored with
multi-bleu.perl or fairseq). The final average is also scored on val. Each row
gives the steps and the tokens trained on by its last checkpoint (padded, and
real target tokens; `t2t_lite.train.tokens_seen`). It prints one table and
writes it to WORK_DIR/results.json (or --score_dir's); the last line is the final
score.

With `--preprocess=lc_norm_tok` it trains and scores on the data preparation of the
published Multi30k results instead of the raw text: train, val and test lowercased,
punctuation-normalized and Moses-tokenized as Multi30k's `tok/*.lc.norm.tok.*` files
(`t2t_lite.data.lc_norm_tok`, written to WORK_DIR/prepared), one joint BPE vocabulary
of `--bpe_merges` merges over both sides, a problem defined by those files
(`translate_ende_multi30k_lc_norm_tok`), and every BLEU computed on the prepared
references with no further tokenization (`t2t-bleu --tokenize=none`: fairseq's
`--remove-bpe` output scored as multi-bleu.perl scores it).

With `--patience=N` everything is scored as if training had stopped early the
way fairseq's --patience stops it: at the first checkpoint after which N in a
row had no lower dev loss (every checkpoint's dev loss is computed after
training; saving once an epoch, N counts epochs as fairseq's does).

Checkpoints are saved every `--save_steps` steps (or `--save_secs` seconds) and
all kept. Running the recipe again resumes training where its last checkpoint
was written (t2t-trainer's exact resume) and says so in results.json.
"""

import argparse
import json
import os
import re
import sys
import time
from typing import List, Optional

from t2t_lite.bin.t2t_datagen import add_subword_sampling_flags

# recipes/multi30k/: this script's parts (recipes/ is sys.path[0] when it runs)
from multi30k.commands import average, decode_bleu, dev_losses, train, tune_on_dev
from multi30k.commands import run_command  # noqa: F401 (recipes/news_finetune.py imports it)
from multi30k.layout import (DEFAULT_BPE_MERGES, DEV_STEM, PREPARED_DIR, PREPARED_PROBLEM,
                             PROBLEM)
from multi30k.marks import available_at, checkpoint_step, checkpoint_times, early_stop
from multi30k.preparation import generate_data
from multi30k.results import print_table, score_mark


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tmp_dir", required=True, help="Multi30k task-1 raw files (train/val/test)")
    p.add_argument("--work_dir", required=True, help="data/, model/, averages and outputs go here")
    p.add_argument("--score_dir", default="",
                   help="averages, outputs, recipe.log and results.json go here instead (default "
                        "--work_dir): to score a trained model another way, e.g. with "
                        "--select=best_dev_loss, without replacing the first results")
    p.add_argument("--hparams_set", default="transformer_multi30k")
    p.add_argument("--hparams", default="")
    p.add_argument("--preprocess", default="raw", choices=["raw", "lc_norm_tok"],
                   help="raw: the files of --tmp_dir as written; lc_norm_tok: lowercased, "
                        "normalized and tokenized as Multi30k's tok/*.lc.norm.tok.* files, "
                        "with a joint BPE vocabulary, scored on the prepared references")
    p.add_argument("--bpe_merges", type=int, default=None,
                   help="with --preprocess=lc_norm_tok: the BPE merges of the joint vocabulary "
                        f"(default {DEFAULT_BPE_MERGES:,})")
    add_subword_sampling_flags(p)  # passed to t2t-datagen as given
    p.add_argument("--random_seed", type=int, default=1)
    p.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"],
                   help="t2t-trainer's --precision (decoding is float32 either way)")
    p.add_argument("--train_steps", type=int, default=0,
                   help="the budget's optimizer steps; 0: the hparams set's train_steps")
    p.add_argument("--batch_size", type=int, default=0,
                   help="the budget's tokens per batch (padded max(source, target), like "
                        "fairseq's --max-tokens); 0: the hparams set's batch_size")
    p.add_argument("--train_minutes", type=float, default=0,
                   help="also stop after this many minutes of training; the marks are then "
                        "fractions of these minutes (0: no time limit). Per run: a resumed "
                        "run trains up to this many minutes more, its marks from its start")
    p.add_argument("--marks", default="0.25,0.5",
                   help="fractions of the budget (steps, or --train_minutes) at which to "
                        "score as well")
    p.add_argument("--save_steps", type=int, default=250,
                   help="steps between checkpoints (all kept); 0: by --save_secs")
    p.add_argument("--save_secs", type=int, default=0, help="seconds between checkpoints")
    p.add_argument("--average", type=int, default=5, help="checkpoints averaged")
    p.add_argument("--patience", type=int, default=0,
                   help="score as if training had stopped once this many checkpoints in a "
                        "row had no lower dev loss (fairseq's --patience, checked after "
                        "training on every checkpoint's dev loss); 0: no early stop")
    p.add_argument("--select", default="last", choices=["last", "best_dev_loss"],
                   help="the checkpoints averaged: the last --average, or the --average of "
                        "lowest dev loss (t2t-avg-checkpoints --select)")
    p.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6",
                   help="the search of the 'beam' columns (unless --tune_grid)")
    p.add_argument("--tune_grid", default="",
                   help="choose the search on val instead: t2t-tune-decoder's --grid over the "
                        "final average, e.g. 'beam_size=4,5;alpha=0.6,0.8,1.0'")
    p.add_argument("--eval_every", type=int, default=500)
    p.add_argument("--eval_bleu_sentences", type=int, default=1014)
    args = p.parse_args(argv)
    try:
        args.marks = [float(m) for m in args.marks.split(",") if m.strip()]
    except ValueError:
        p.error(f"--marks: fractions of the budget, e.g. 0.25,0.5; got {args.marks!r}")
    if any(not 0 < m < 1 for m in args.marks):
        p.error(f"--marks: fractions between 0 and 1 (the end is always scored); "
                f"got {args.marks}")
    if args.patience < 0:
        p.error(f"--patience must be >= 0, got {args.patience}")
    if not (args.save_steps or args.save_secs):
        p.error("--save_steps or --save_secs: checkpoints are needed to average")
    if args.bpe_merges is not None and args.preprocess != "lc_norm_tok":
        p.error("--bpe_merges: only with --preprocess=lc_norm_tok (the raw text's vocabulary is "
                "the problem's)")
    if args.preprocess == "lc_norm_tok" and args.subword_samples:
        p.error("--subword_samples: the BPE vocabulary of --preprocess=lc_norm_tok has no "
                "n-best segmentations to sample from")
    if args.bpe_merges is not None and args.bpe_merges < 1:
        p.error(f"--bpe_merges must be >= 1, got {args.bpe_merges}")
    args.bpe_merges = args.bpe_merges or DEFAULT_BPE_MERGES
    args.score_dir = args.score_dir or args.work_dir
    args.model_dir = os.path.join(args.work_dir, "model")
    args.data_dir = os.path.join(args.work_dir, "data")
    prepared = args.preprocess == "lc_norm_tok"
    args.problem = PREPARED_PROBLEM if prepared else PROBLEM
    args.text_dir = os.path.join(args.work_dir, PREPARED_DIR) if prepared else args.tmp_dir
    return args


def resolve_budget(args) -> None:
    """Fills in --train_steps and --batch_size from the hparams set (and --hparams)."""
    from t2t_lite import registry
    if args.batch_size:
        if re.search(r"(^|,)\s*batch_size\s*=", args.hparams):
            sys.exit("recipe: batch_size given twice (--batch_size and --hparams); give one.")
        args.hparams = ",".join(x for x in (args.hparams, f"batch_size={args.batch_size}") if x)
    hp = registry.hparams(args.hparams_set).parse(args.hparams)
    args.train_steps = args.train_steps or hp.train_steps
    args.batch_size = hp.batch_size


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    resolve_budget(args)
    os.makedirs(args.score_dir, exist_ok=True)
    log_path = os.path.join(args.score_dir, "recipe.log")
    generate_data(args, log_path)
    args.start = time.time()
    resumed_at = train(args, log_path)
    train_minutes = (time.time() - args.start) / 60
    checkpoints = checkpoint_times(args.model_dir)
    stopped_at = None
    if args.patience:
        kept = early_stop(checkpoints, dev_losses(checkpoints, args, log_path), args.patience)
        if len(kept) < len(checkpoints):
            stopped_at = checkpoint_step(kept[-1][1])
            print(f"Early stop (--patience={args.patience}) at step {stopped_at}: scoring the "
                  f"{len(kept)} checkpoints up to it.", flush=True)
        checkpoints = kept

    # The final average first: the search chosen on val for it is used at every mark.
    final_average = average("final", checkpoints, args, log_path)
    decode_hparams = (tune_on_dev(final_average[0], args, log_path) if args.tune_grid
                      else args.decode_hparams)
    dev_bleu, _ = decode_bleu(final_average[0], None, decode_hparams, DEV_STEM, args,
                              os.path.join(args.score_dir, f"{DEV_STEM}_final_avg_beam.de"),
                              log_path)
    rows = []
    for mark in args.marks:
        available = available_at(checkpoints, mark, args)
        if available and available[-1] != checkpoints[-1]:
            rows.append(score_mark(f"{mark:g}", available, args, decode_hparams, log_path))
    rows.append(score_mark("final", checkpoints, args, decode_hparams, log_path, final_average))
    rows[-1].update(train_minutes=round(train_minutes, 1), dev_avg_beam=dev_bleu,
                    budget={"train_steps": args.train_steps, "batch_size": args.batch_size,
                            "train_minutes": args.train_minutes},
                    resumed_at=resumed_at, patience=args.patience, stopped_at=stopped_at,
                    preprocess=args.preprocess)
    with open(os.path.join(args.score_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    print_table(rows, args, decode_hparams)
    return 0


if __name__ == "__main__":
    sys.exit(main())
