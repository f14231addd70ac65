"""t2t-trainer: train a registered problem with a registered hparams set.

    t2t-trainer --problem=translate_ende_numbers --hparams_set=transformer_tiny \\
        --generate_data --data_dir=D --tmp_dir=T --output_dir=M

Killing it (Ctrl-C, SIGTERM) saves a checkpoint; running the same command
again resumes where it stopped. `--warm_start_from=M` fine-tunes model
directory M on --problem's data (encoded with M's vocabulary: t2t-datagen
--vocab_from=M), from M's hparams unless --hparams_set is given.
`--train_mix=europarl-v7.de-en=0.8,news-commentary-v9.de-en=0.2` weighs the
corpora of --problem, or mixes in another problem
(`--train_mix=translate_ende=1,translate_ende_multi30k=1`). With TF_CONFIG
describing a cluster the same command trains on several machines
(MultiWorkerMirroredStrategy).
"""

import argparse
import math
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-trainer", description=__doc__.split("\n")[0])
    p.add_argument("--problem", help="registered problem name (see --registry_help); default: "
                                     "the one problem with data in --data_dir")
    p.add_argument("--hparams_set", help="registered hparams set, e.g. transformer_base")
    p.add_argument("--hparams", default="", help='overrides, e.g. "num_heads=16,relu_dropout=0.1"')
    p.add_argument("--data_dir", help="where t2t-datagen wrote the vocabulary and shards")
    p.add_argument("--tmp_dir", default=None, help="raw data for --generate_data")
    p.add_argument("--output_dir", help="model directory: metadata, checkpoints, summaries")
    p.add_argument("--warm_start_from", default=None, metavar="MODEL_DIR",
                   help="fine-tune: start the weights from this model directory's latest "
                        "checkpoint; optimizer, step, learning-rate schedule and data start "
                        "fresh; its hparams are the base for --hparams")
    p.add_argument("--warm_start_checkpoint_average", type=int, default=1,
                   help="with --warm_start_from: start from the average of its last K checkpoints")
    p.add_argument("--train_mix", default=None, metavar="NAME=WEIGHT[,NAME=WEIGHT...]",
                   help="draw training examples from these corpora of --problem (as t2t-datagen "
                        "listed them), --problem itself, or other problems with data in "
                        "--data_dir and the same vocabulary, by normalised weights; unnamed "
                        "corpora are not drawn (default: every corpus by its share)")
    p.add_argument("--generate_data", action="store_true",
                   help="run t2t-datagen first when the data is missing")
    p.add_argument("--train_steps", type=int, default=0,
                   help="optimizer steps in total (default: the hparams set's train_steps)")
    p.add_argument("--eval_every", type=int, default=1000, help="steps between evaluations")
    p.add_argument("--eval_steps", type=int, default=0, help="dev batches per evaluation (0: all)")
    p.add_argument("--eval_bleu_sentences", type=int, default=100,
                   help="dev sentences decoded greedily for BLEU at each evaluation (0: none)")
    p.add_argument("--save_checkpoints_steps", type=int, default=1000,
                   help="save a checkpoint every this many steps (0: not by steps); a "
                        "checkpoint is also saved at the end and when stopped")
    p.add_argument("--save_checkpoints_secs", type=int, default=600,
                   help="also save one when this many seconds passed since the last "
                        "(0: not by time)")
    p.add_argument("--keep_checkpoint_max", type=int, default=20, help="0: keep all")
    p.add_argument("--max_train_minutes", type=float, default=0,
                   help="stop (save, evaluate) after this much wall-clock time (0: no limit)")
    p.add_argument("--log_every", type=int, default=100, help="steps between progress lines")
    p.add_argument("--random_seed", type=int, default=1,
                   help="seed of the initial weights, dropout and the order of the training "
                        "examples")
    p.add_argument("--early_stopping_patience", type=int, default=0,
                   help="stop after this many evaluations without a better dev loss (0: never)")
    p.add_argument("--strategy", default="auto",
                   choices=["auto", "one_device", "mirrored", "multi_worker"],
                   help="auto: multi_worker when TF_CONFIG names a cluster, mirrored with "
                        "several GPUs, else one_device")
    p.add_argument("--jit_compile", action="store_true", help="compile the step with XLA")
    p.add_argument("--precision", default="float32",
                   choices=["float32", "mixed_bfloat16", "mixed_float16"],
                   help="mixed_bfloat16 on CPUs with AVX512-BF16, mixed_float16 on GPUs")
    p.add_argument("--registry_help", action="store_true",
                   help="list registered problems and hparams sets, then exit")
    problem_flags.add_usr_dir_flag(p)
    problem_flags.add_files_flags(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    if not args.registry_help:
        cli.require(p, args, ["data_dir", "output_dir"] +
                    ([] if args.warm_start_from else ["hparams_set"]))
        if problem_flags.files_given(args) and not args.generate_data:
            p.error("the files flags (--train_files, ...) define data for t2t-datagen: run it "
                    "first, or pass --generate_data")
    return args


def run(args: argparse.Namespace) -> int:
    from t2t_lite import registry
    if args.registry_help:
        problem_flags.import_usr_dir(args)
        print(registry.help_string())
        return 0
    problem = problem_flags.resolve_problem(args)
    warm_start = None
    if args.warm_start_from:
        from t2t_lite.model_dir_writer import existing_run
        from t2t_lite.train.warm_start import WarmStart, base_hparams
        warm_start = WarmStart(args.warm_start_from, args.warm_start_checkpoint_average)
        base = (registry.hparams(args.hparams_set) if args.hparams_set
                else base_hparams(existing_run(args.output_dir), args.warm_start_from))
        hparams_set = args.hparams_set or f"the hparams of {args.warm_start_from}"
    else:
        base, hparams_set = registry.hparams(args.hparams_set), args.hparams_set
    hparams = base.parse(args.hparams)

    import keras
    from t2t_lite.train.experiment import train_problem
    from t2t_lite.train.strategy import make_strategy
    from t2t_lite.train import tokens_seen
    from t2t_lite.train.trainer import TrainOptions

    strategy = make_strategy(args.strategy)  # before any other TensorFlow op
    options = TrainOptions(
        train_steps=args.train_steps, eval_every=args.eval_every, eval_steps=args.eval_steps,
        eval_bleu_sentences=args.eval_bleu_sentences,
        save_checkpoints_steps=args.save_checkpoints_steps,
        save_checkpoints_secs=args.save_checkpoints_secs,
        keep_checkpoint_max=args.keep_checkpoint_max, log_every=args.log_every,
        random_seed=args.random_seed, jit_compile=args.jit_compile,
        early_stopping_patience=args.early_stopping_patience,
        max_train_minutes=args.max_train_minutes)
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy(args.precision)
    try:
        result = train_problem(problem, hparams_set, hparams, args.data_dir,
                               args.output_dir, options, strategy,
                               generate_data=args.generate_data, tmp_dir=args.tmp_dir,
                               warm_start=warm_start, train_mix=args.train_mix)
    finally:  # run in-process (main(argv)), it leaves the caller's policy as it was
        keras.config.set_dtype_policy(previous_policy)
    if result.interrupted:
        return 130
    if math.isfinite(result.loss):
        print(f"Done: step {result.step}, loss {result.loss:.4f}; model in {args.output_dir}.")
    else:  # no step ran: the checkpoint was already at --train_steps
        print(f"Done: step {result.step}, nothing to train (--train_steps={args.train_steps}"
              f" reached already); model in {args.output_dir}.")
    counts = dict(result.tokens, from_step=result.tokens_from)
    print(f"Trained on: {tokens_seen.describe(counts)}.")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-trainer", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
