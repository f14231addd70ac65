"""The t2t-lite commands the Multi30k recipe runs, as a user would type them: training,
averaging, dev losses, the search tuned on val, decoding and BLEU."""

import json
import os
import re
import subprocess
import sys
from typing import Dict, List, Optional

from multi30k.layout import DEV_STEM, TEST_STEM


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
