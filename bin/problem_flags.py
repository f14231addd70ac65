"""Flags that choose a problem: --usr_dir, and a problem defined by your own files.

    t2t-datagen --data_dir=D --source_lang=de --target_lang=en \\
        --train_files=corpus.tsv.gz --train_files=news=news.de.gz,news.en.gz \\
        --dev_files=dev.de,dev.en --test_files=test.tsv --vocab_size=8000

defines the problem `translate_deen_files` (or --problem's name) from those
files (`t2t_lite.data.files_problem`) and records its definition in D
(`t2t_lite.data.definitions`): later programs need only `--data_dir=D`, or
the model directory.
"""

import argparse
from typing import Optional

FILES_FLAGS = ("source_lang", "target_lang", "train_files", "dev_files", "test_files",
               "vocab_size")


def add_usr_dir_flag(parser: argparse.ArgumentParser) -> None:
    """--usr_dir (also --t2t_usr_dir, tensor2tensor's spelling)."""
    parser.add_argument("--usr_dir", "--t2t_usr_dir", dest="usr_dir", default=None,
                        metavar="DIR",
                        help="a Python package directory of your own problems and hparams sets "
                             "(@register_problem, @register_hparams), imported first; the same "
                             "one the model was trained with when reading a model directory")


def import_usr_dir(args: argparse.Namespace) -> None:
    """Imports args.usr_dir, if given (`t2t_lite.usr_dir`)."""
    from t2t_lite import usr_dir
    usr_dir.import_usr_dir(args.usr_dir)


def add_files_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a problem defined by files (datagen's and the trainer's)."""
    group = parser.add_argument_group(
        "your own data (no code): a problem defined by files; FILES is FILE.tsv (source TAB "
        "target) or SOURCE_FILE,TARGET_FILE, plain or .gz, optionally prefixed by NAME=")
    group.add_argument("--source_lang", help="source language code, e.g. de")
    group.add_argument("--target_lang", help="target language code, e.g. en, ja, zh")
    group.add_argument("--train_files", action="append", metavar="[NAME=]FILES",
                       help="a train corpus; repeat for several (their names are "
                            "--train_mix's)")
    group.add_argument("--dev_files", metavar="FILES",
                       help="the dev set (default: 5%% of the train pairs, at most 1,000, "
                            "held out with a fixed seed)")
    group.add_argument("--test_files", metavar="FILES", help="the test set (default: none)")
    group.add_argument("--vocab_size", type=int, default=None,
                       help="pieces of the shared SentencePiece vocabulary (default 8000)")


def files_given(args: argparse.Namespace) -> bool:
    return any(getattr(args, flag, None) not in (None, []) for flag in FILES_FLAGS)


def resolve_problem(args: argparse.Namespace, log=print):
    """The problem `args` name, after importing --usr_dir.

    With files flags: `definitions.define_problem` (defines the problem, checks
    every file and writes its definition into args.data_dir). Otherwise:
    `definitions.find_problem` (--problem, registered or defined in
    args.data_dir, or the one problem with data in args.data_dir).

    Raises:
      T2TError: see those functions.
    """
    from t2t_lite.data import definitions
    import_usr_dir(args)
    data_dir: Optional[str] = getattr(args, "data_dir", None)
    if files_given(args):
        return definitions.define_problem(
            data_dir, args.problem, args.source_lang, args.target_lang, args.train_files,
            args.dev_files, args.test_files, args.vocab_size, log=log)
    return definitions.find_problem(args.problem, data_dir)
