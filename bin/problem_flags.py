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

from t2t_lite.errors import T2TError

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

    With files flags: defines the problem, checks every file and writes its
    definition into args.data_dir. Otherwise: --problem (registered, or defined
    in args.data_dir), or the one problem with data in args.data_dir.

    Raises:
      T2TError: see `files_problem.make_definition`; unknown names; no
        --problem where the data directory holds none or several.
    """
    from t2t_lite import registry
    from t2t_lite.data import definitions
    import_usr_dir(args)
    data_dir: Optional[str] = getattr(args, "data_dir", None)
    if files_given(args):
        return _define(args, data_dir, log)
    definitions.register_data_dir(data_dir)
    name = args.problem or (definitions.only_problem(data_dir) if data_dir else None)
    if not name:
        raise T2TError("--problem is needed (or --data_dir holding one problem's data).")
    return registry.problem(name)


def _define(args: argparse.Namespace, data_dir: Optional[str], log):
    from t2t_lite import registry
    from t2t_lite.data import definitions, files_problem
    missing = [f"--{f}" for f in ("source_lang", "target_lang", "train_files", "data_dir")
               if not getattr(args, f, None)]
    if missing:
        raise T2TError(f"A problem defined by files needs {', '.join(missing)}.")
    name = args.problem or files_problem.default_problem_name(args.source_lang, args.target_lang)
    origin = registry.problem_origin(name) if name in registry.list_problems() else None
    if origin not in (None, registry.DEFINED):
        owner = "built-in" if origin == registry.BUILT_IN else f"--usr_dir {origin}"
        raise T2TError(f"--problem={name} is the name of a {owner} problem: give your files' "
                       "problem another --problem name.")
    parse = files_problem.parse_corpus_spec
    definition = files_problem.make_definition(
        name, args.source_lang, args.target_lang,
        [parse(spec, "--train_files") for spec in args.train_files],
        parse(args.dev_files, "--dev_files") if args.dev_files else None,
        parse(args.test_files, "--test_files") if args.test_files else None,
        args.vocab_size or files_problem.DEFAULT_VOCAB_SIZE, log=log)
    definitions.write(data_dir, definition)
    return registry.problem(name)
