"""t2t-datagen: build a problem's vocabulary and encoded TFRecord shards.

    t2t-datagen --problem=translate_ende_numbers --data_dir=DATA
    t2t-datagen --problem=translate_ende_multi30k --tmp_dir=../shared/data/multi30k --data_dir=DATA
    t2t-datagen --data_dir=DATA --source_lang=de --target_lang=en --train_files=corpus.tsv.gz

Raw files are looked for in --tmp_dir (each problem documents the names it
reads); see `t2t_lite.data.datagen` for what is written to --data_dir.
"""

import argparse
import os
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def add_subword_sampling_flags(parser: argparse.ArgumentParser) -> None:
    """--subword_samples, --subword_nbest, --subword_alpha (also the Multi30k recipe's,
    which passes them through); none given: the data directory's recorded setting."""
    sampling = parser.add_argument_group(
        "subword regularization (Kudo 2018): the train split written several times, each "
        "sentence segmented by sampling; dev and test keep the best segmentation")
    sampling.add_argument("--subword_samples", type=int, default=None, metavar="K",
                          help="copies of each training pair, each side segmented by its "
                               "own draw; 0: the best segmentation once (default: as the "
                               "data directory records, else 0)")
    sampling.add_argument("--subword_nbest", type=int, default=None, metavar="L",
                          help="draw among the L best segmentations (default 64)")
    sampling.add_argument("--subword_alpha", type=float, default=None,
                          help="draw with probability P(segmentation)^alpha (smaller: "
                               "more uniform; default 0.1)")


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    parser = cli.ArgumentParser(
        prog="t2t-datagen",
        description="Learn a problem's subword vocabulary and write its encoded "
                    "train/dev/test TFRecord shards. Idempotent; safe to interrupt.")
    parser.add_argument("--problem",
                        help="registered problem, e.g. translate_ende_numbers, translate_ende, "
                             "translate_enfr, translate_ende_multi30k; with --train_files, the "
                             "name of your files' problem (default translate_SRCTGT_files)")
    parser.add_argument("--data_dir", required=True, help="output directory")
    parser.add_argument("--tmp_dir", default=None,
                        help="directory searched first for raw parallel text files")
    parser.add_argument("--vocab_from", default=None, metavar="MODEL_DIR",
                        help="encode with the vocabulary of this t2t-lite model directory "
                             "instead of learning one (data to fine-tune that model on), or "
                             "of this vocabulary file (e.g. another problem's in --data_dir, "
                             "to mix the two with t2t-trainer --train_mix)")
    parser.add_argument("--verify", action="store_true",
                        help="only check the shards against the sizes and SHA-256 checksums "
                             "datagen recorded (exit 1 naming a damaged shard)")
    add_subword_sampling_flags(parser)
    problem_flags.add_usr_dir_flag(parser)
    problem_flags.add_files_flags(parser)
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    """Runs t2t-datagen with `argv` (default: sys.argv[1:]); returns the exit code."""
    args = parse_args(argv)

    def run() -> int:
        from t2t_lite.data.datagen import generate_data, verify_data
        from t2t_lite.model_dir import ModelDir, load_vocab_file
        vocab_model = None  # checked before a files problem's definition is written
        if args.vocab_from and os.path.isfile(args.vocab_from):
            vocab_model = args.vocab_from  # a vocabulary file
        elif args.vocab_from:
            vocab_model = ModelDir.open(args.vocab_from).vocab_path
        problem = problem_flags.resolve_problem(args)
        if args.verify:
            verify_data(problem, args.data_dir)
        else:
            from t2t_lite.data.subword_sampling import from_flags
            sampling = from_flags(args.subword_samples, args.subword_nbest, args.subword_alpha)
            generate_data(problem, args.data_dir, args.tmp_dir, vocab_model=vocab_model,
                          subword_sampling=sampling, load_vocab=load_vocab_file)
        return 0

    return cli.main("t2t-datagen", run)


if __name__ == "__main__":
    sys.exit(main())
