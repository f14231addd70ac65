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
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

from t2t_lite.bin.t2t_datagen import add_subword_sampling_flags

PROBLEM = "translate_ende_multi30k"
PREPARED_PROBLEM = "translate_ende_multi30k_lc_norm_tok"
PREPARED_DIR = "prepared"  # under --work_dir
SPLIT_STEMS = ("train", "val", "test_2016_flickr")
DEFAULT_BPE_MERGES = 10000  # what Multi30k papers with subword-nmt BPE use
TEST_STEM = "test_2016_flickr"
DEV_STEM = "val"


# t2t-datagen flags passed through as given (none given: the data keeps its setting).
SUBWORD_FLAGS = ("subword_samples", "subword_nbest", "subword_alpha")


def run_command(args: List[str], log_path: str, stdout: bool = False,
                stream: bool = False) -> str:
    """Runs a t2t-lite command, echoing it; returns its stderr (or, with `stdout`, its
    standard output; with `stream`, both, written to the log line by line as they
    come, for hours-long training). A failure ends the recipe."""
    print("+ " + " ".join(args), flush=True)
    # The console scripts installed beside this interpreter (a venv's bin/), else PATH's.
    local = os.path.join(os.path.dirname(sys.executable), args[0])
    args = [local if os.path.exists(local) else args[0]] + args[1:]
    with open(log_path, "a", encoding="utf-8") as log:
        if stream:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)
            lines = []
            for line in proc.stdout:
                log.write(line)
                log.flush()
                lines.append(line)
            proc.wait()
            proc.stdout = proc.stderr = "".join(lines)
        else:
            proc = subprocess.run(args, stdout=subprocess.PIPE if stdout else log,
                                  stderr=subprocess.PIPE, text=True)
            if stdout:
                log.write(proc.stdout)
            log.write(proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        sys.exit(f"recipe: {args[0]} exited with {proc.returncode} (log: {log_path}):\n{tail}")
    return proc.stdout if stdout or stream else proc.stderr


def checkpoint_times(model_dir: str) -> List[tuple]:
    """(timestamp, prefix) of every checkpoint in the model directory, oldest first
    (prefixes end in -STEP)."""
    with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
        text = f.read()
    paths = re.findall(r'^all_model_checkpoint_paths: "(.*)"$', text, re.M)
    stamps = [float(t) for t in re.findall(r"^all_model_checkpoint_timestamps: (\S+)$", text, re.M)]
    if len(paths) != len(stamps):
        raise SystemExit(f"recipe: {model_dir}/checkpoint lists {len(paths)} checkpoints but "
                         f"{len(stamps)} timestamps.")
    return list(zip(stamps, [os.path.join(model_dir, p) for p in paths]))


def checkpoint_step(prefix: str) -> int:
    return int(prefix.rsplit("-", 1)[1])


def available_at(checkpoints: List[tuple], fraction: float, args) -> List[tuple]:
    """The checkpoints saved by a mark: a fraction of the steps, or of --train_minutes."""
    if args.train_minutes:
        return [c for c in checkpoints if c[0] <= args.start + 60 * fraction * args.train_minutes]
    return [c for c in checkpoints if checkpoint_step(c[1]) <= fraction * args.train_steps]


def minutes_into_run(saved_at: float, args) -> Optional[float]:
    """Minutes from this run's start to a checkpoint's save time; None for a checkpoint
    an earlier run saved (a resumed run's wall clock does not cover it)."""
    return round((saved_at - args.start) / 60, 1) if saved_at >= args.start else None


def decode_bleu(model_dir: str, checkpoint: Optional[str], decode_hparams: str, stem: str,
                args, out_path: str, log_path: str) -> tuple:
    """Translates `stem`.en of the recipe's text (--tmp_dir's, or the prepared files);
    returns the sacreBLEU score and signature t2t-decoder printed, or with
    --preprocess=lc_norm_tok `prepared_bleu`'s."""
    reference = os.path.join(args.text_dir, stem + ".de")
    command = ["t2t-decoder", f"--output_dir={model_dir}", f"--decode_hparams={decode_hparams}",
               f"--decode_from_file={os.path.join(args.text_dir, stem + '.en')}",
               f"--decode_to_file={out_path}", f"--decode_reference={reference}"]
    if checkpoint:
        command.append(f"--checkpoint_path={checkpoint}")
    stderr = run_command(command, log_path)
    if args.preprocess == "lc_norm_tok":
        return prepared_bleu(out_path, reference, log_path)
    match = re.search(r"^BLEU = ([0-9.]+) (\S+)", stderr, re.M)
    if not match:
        raise SystemExit(f"recipe: no BLEU line from t2t-decoder (log: {log_path}).")
    return float(match.group(1)), match.group(2)


def prepared_bleu(out_path: str, reference: str, log_path: str) -> tuple:
    """(BLEU, signature) of a translation of the prepared text against its prepared
    reference, split on whitespace only (t2t-bleu --tokenize=none): the model's output
    is already lowercased and tokenized, and decoding joined its BPE pieces."""
    line = run_command(["t2t-bleu", f"--translation={out_path}", f"--reference={reference}",
                        "--tokenize=none"], log_path, stdout=True)
    match = re.search(r"^BLEU\|(\S+) = ([0-9.]+)", line, re.M)
    if not match:
        raise SystemExit(f"recipe: no BLEU line from t2t-bleu (log: {log_path}).")
    return float(match.group(2)), match.group(1)


def moses_lowercase_bleu(out_path: str, args, log_path: str) -> float:
    """BLEU of the test output lowercased and Moses-tokenized (the convention of papers
    scored with multi-bleu.perl or fairseq), by t2t-bleu."""
    line = run_command(["t2t-bleu", f"--translation={out_path}",
                        f"--reference={os.path.join(args.tmp_dir, TEST_STEM + '.de')}",
                        "--moses_lang=de", "--lowercase", "--score_only"], log_path,
                       stdout=True)
    return float(line.strip())


def average(label: str, available: List[tuple], args, log_path: str) -> tuple:
    """(the averaged model directory, the checkpoints averaged) of those available at a
    mark: the last --average, or with --select=best_dev_loss the --average of lowest
    dev loss among them."""
    avg_dir = os.path.join(args.score_dir, f"avg_{label}")
    command = ["t2t-avg-checkpoints", f"--output_dir={args.model_dir}", f"--avg_dir={avg_dir}",
               f"--num_last_checkpoints={min(args.average, len(available))}"]
    if args.select == "best_dev_loss":
        command += ["--select=best_dev_loss", f"--data_dir={args.data_dir}",
                    "--checkpoints=" + ",".join(p for _, p in available)]
    else:
        command.append("--checkpoints=" + ",".join(p for _, p in available[-args.average:]))
    run_command(command, log_path)
    with open(os.path.join(avg_dir, "average.json"), encoding="utf-8") as f:
        return avg_dir, [os.path.basename(p) for p in json.load(f)["checkpoints"]]


def dev_losses(checkpoints: List[tuple], args, log_path: str) -> Dict[str, float]:
    """The dev loss of every checkpoint (by name), computed by t2t-avg-checkpoints
    --select=best_dev_loss and kept in the model directory's dev_losses.json."""
    run_command(["t2t-avg-checkpoints", f"--output_dir={args.model_dir}",
                 f"--avg_dir={os.path.join(args.score_dir, 'avg_dev_losses')}",
                 "--num_last_checkpoints=1", "--select=best_dev_loss",
                 f"--data_dir={args.data_dir}",
                 "--checkpoints=" + ",".join(p for _, p in checkpoints)], log_path)
    with open(os.path.join(args.model_dir, "dev_losses.json"), encoding="utf-8") as f:
        return json.load(f)["losses"]


def early_stop(checkpoints: List[tuple], losses: Dict[str, float], patience: int) -> List[tuple]:
    """The checkpoints a run stopped early would have written, as fairseq's --patience
    stops one: at the first checkpoint after which `patience` checkpoints in a row had no
    lower dev loss than the best before them (strictly lower counts as better); all of
    them if that never happens."""
    best, bad = float("inf"), 0
    for i, (_, prefix) in enumerate(checkpoints):
        loss = losses[os.path.basename(prefix)]
        if loss < best:
            best, bad = loss, 0
        else:
            bad += 1
            if bad >= patience:
                return checkpoints[:i + 1]
    return checkpoints


def tune_on_dev(avg_dir: str, args, log_path: str) -> str:
    """The --decode_hparams t2t-tune-decoder chooses on val over --tune_grid."""
    stderr_and_out = run_command(
        ["t2t-tune-decoder", f"--output_dir={avg_dir}",
         f"--decode_from_file={os.path.join(args.text_dir, DEV_STEM + '.en')}",
         f"--decode_reference={os.path.join(args.text_dir, DEV_STEM + '.de')}",
         f"--grid={args.tune_grid}", f"--report={os.path.join(args.score_dir, 'tune.json')}"],
        log_path, stdout=True)
    match = re.search(r"--decode_hparams=(\S+)", stderr_and_out.strip().splitlines()[-1])
    if not match:
        raise SystemExit(f"recipe: no best --decode_hparams from t2t-tune-decoder ({log_path}).")
    return match.group(1)


def score_mark(label: str, available: List[tuple], args, decode_hparams: str,
               log_path: str, avg: Optional[tuple] = None) -> Dict[str, object]:
    """The four test scores with the checkpoints available at one time mark (last
    checkpoint or average, greedy or `decode_hparams`), and the average's
    lowercased Moses-tokenized score."""
    from t2t_lite.train import tokens_seen  # TensorFlow: not for --help
    last = available[-1][1]
    avg_dir, averaged = avg or average(label, available, args, log_path)
    row = {"mark": label, "checkpoint": os.path.basename(last), "step": checkpoint_step(last),
           "minutes": minutes_into_run(available[-1][0], args),
           "tokens": tokens_seen.read(last), "averaged": averaged,
           "decode_hparams": decode_hparams}
    for name, model_dir, checkpoint in (("single", args.model_dir, last),
                                        ("avg", avg_dir, None)):
        for search, options in (("beam1", "beam_size=1"), ("beam", decode_hparams)):
            out = os.path.join(args.score_dir, f"test_{label}_{name}_{search}.de")
            row[f"{name}_{search}"], row["signature"] = decode_bleu(
                model_dir, checkpoint, options, TEST_STEM, args, out, log_path)
    if args.preprocess == "raw":  # the prepared text is scored lowercased and tokenized already
        row["avg_beam_lc_moses"] = moses_lowercase_bleu(
            os.path.join(args.score_dir, f"test_{label}_avg_beam.de"), args, log_path)
    return row


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


def train(args, log_path: str) -> List[int]:
    """Runs t2t-trainer (resuming if the model directory has checkpoints); returns the
    steps it resumed at."""
    command = ["t2t-trainer", f"--problem={args.problem}", f"--hparams_set={args.hparams_set}",
               f"--data_dir={args.data_dir}", f"--output_dir={args.model_dir}",
               f"--train_steps={args.train_steps}",
               f"--max_train_minutes={args.train_minutes:g}",
               f"--save_checkpoints_steps={args.save_steps}",
               f"--save_checkpoints_secs={args.save_secs}",
               "--keep_checkpoint_max=0", f"--eval_every={args.eval_every}",
               f"--eval_bleu_sentences={args.eval_bleu_sentences}",
               f"--random_seed={args.random_seed}", f"--precision={args.precision}"]
    if args.hparams:
        command.append(f"--hparams={args.hparams}")
    output = run_command(command, log_path, stream=True)
    return [int(s) for s in re.findall(r"^Resumed from \S+ at step (\d+)\.$", output, re.M)]


def prepare_text(args) -> Tuple[str, int]:
    """Writes the prepared train, val and test files (`lc_norm_tok.prepare_file`) and
    their joint BPE model into args.text_dir, each run anew (the same bytes from the same
    raw files: a changed raw file cannot leave stale data behind); returns the model's
    path and its number of ids."""
    from t2t_lite.data import lc_norm_tok
    from t2t_lite.data.split_writer import write_atomically
    from t2t_lite.errors import T2TError
    start = time.time()
    os.makedirs(args.text_dir, exist_ok=True)
    model = os.path.join(args.text_dir, f"bpe{args.bpe_merges}.model")
    try:
        for stem in SPLIT_STEMS:
            for lang in ("en", "de"):
                prepared = os.path.join(args.text_dir, f"{stem}.{lang}")
                lines, tokens = lc_norm_tok.prepare_file(
                    os.path.join(args.tmp_dir, f"{stem}.{lang}"), prepared, lang)
                print(f"  {prepared}: {lines:,} lines, {tokens:,} tokens", flush=True)
        write_atomically(model, lc_norm_tok.learn_joint_bpe(
            [os.path.join(args.text_dir, f"train.{lang}") for lang in ("en", "de")],
            args.bpe_merges))
    except T2TError as e:
        sys.exit(f"recipe: {e}")
    import sentencepiece
    size = sentencepiece.SentencePieceProcessor(model_file=model).get_piece_size()
    print(f"Prepared text in {args.text_dir} ({time.time() - start:.1f} s): lowercased, "
          f"normalized, tokenized; joint BPE {os.path.basename(model)}, {size:,} ids.",
          flush=True)
    return model, size


def generate_data(args, log_path: str) -> None:
    """t2t-datagen of the raw files, or (--preprocess=lc_norm_tok) of the prepared files
    with their BPE vocabulary, as a problem defined by those files."""
    command = ["t2t-datagen", f"--data_dir={args.data_dir}"]
    command += [f"--{name}={getattr(args, name)}" for name in SUBWORD_FLAGS
                if getattr(args, name) is not None]
    if args.preprocess == "raw":
        run_command(command + [f"--problem={PROBLEM}", f"--tmp_dir={args.tmp_dir}"], log_path)
        return
    model, size = prepare_text(args)
    files = {stem: ",".join(os.path.join(args.text_dir, f"{stem}.{lang}")
                            for lang in ("en", "de")) for stem in SPLIT_STEMS}
    run_command(command + [f"--problem={PREPARED_PROBLEM}", "--source_lang=en",
                           "--target_lang=de", f"--train_files={files['train']}",
                           f"--dev_files={files[DEV_STEM]}", f"--test_files={files[TEST_STEM]}",
                           f"--vocab_size={size}", f"--vocab_from={model}"], log_path)


def tokens_text(tokens: Optional[Dict[str, int]]) -> str:
    from t2t_lite.train import tokens_seen
    return tokens_seen.describe(tokens) if tokens else "tokens not counted"


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


def print_table(rows: List[Dict[str, object]], args, decode_hparams: str) -> None:
    """The scores of every mark, then the final one (the last line)."""
    raw = args.preprocess == "raw"
    how = ("the last" if args.select == "last" else "the lowest dev loss of")
    scored = ("sacreBLEU; lc-tok: lowercased, Moses-tokenized" if raw else
              "BLEU on the lowercased, normalized, tokenized references, tok:none")
    print(f"\n{'mark':>6} {'step':>6} {'greedy':>7} {'beam':>7} {'avg greedy':>11} "
          f"{'avg beam':>9} {'avg beam lc-tok':>16}   (test_2016_flickr {scored}; avg: "
          f"{how} {args.average} checkpoints; beam: {decode_hparams})")
    for r in rows:
        lc_tok = f"{r['avg_beam_lc_moses']:16.2f}" if raw else f"{'-':>16}"
        print(f"{r['mark']:>6} {r['step']:>6} {r['single_beam1']:7.2f} "
              f"{r['single_beam']:7.2f} {r['avg_beam1']:11.2f} {r['avg_beam']:9.2f} "
              f"{lc_tok}   {tokens_text(r['tokens'])}")
    final = rows[-1]
    resumed = (f"; resumed at step {', '.join(map(str, final['resumed_at']))}"
               if final["resumed_at"] else "")
    if final["stopped_at"]:
        resumed += f"; stopped early (--patience={args.patience}) at step {final['stopped_at']}"
    also = (f"; lowercased Moses-tokenized {final['avg_beam_lc_moses']:.2f}" if raw else "")
    print(f"Final: {TEST_STEM} {'sacreBLEU' if raw else 'BLEU (lc.norm.tok, tok:none)'} "
          f"{final['avg_beam']:.2f} (average of "
          f"{len(final['averaged'])} checkpoints, {decode_hparams}; {final['step']} steps of "
          f"batch_size={args.batch_size}: {tokens_text(final['tokens'])}; "
          f"{final['train_minutes']} min of training in this run{resumed}; val "
          f"{final['dev_avg_beam']:.2f}{also}) {final['signature']}")


if __name__ == "__main__":
    sys.exit(main())
