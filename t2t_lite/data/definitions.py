"""Problem definitions stored as data: written by t2t-datagen, read by every later program.

A problem defined by files (`t2t_lite.data.files_problem`) has no code of its
own to register, so its definition (a `ProblemDefinition`,
`t2t_lite.data.problem_definition`) travels with the data and the models:

  - `{data_dir}/{problem}.problem.json`: written by t2t-datagen before any
    shard; `register_data_dir` registers every definition found in a data
    directory, so `--problem=NAME --data_dir=D` (or `--data_dir=D` alone, when
    D holds one problem: `only_problem`) finds it like a built-in problem;
  - the model directory's `problem.json` keeps a copy under "definition"
    (`t2t_lite.model_dir`), so t2t-decoder, t2t-exporter and t2t-server rebuild
    the problem from the model directory alone.

`define_problem` is what the files flags of t2t-datagen and t2t-trainer do
(the problem's name, the refusal of a built-in or --usr_dir name, the corpus
specs, the definition written); `find_problem` finds the problem of
--problem and --data_dir otherwise.
"""

import dataclasses
import glob
import json
import os
from typing import Callable, List, Optional, Sequence, Tuple

from t2t_lite import atomic, registry
from t2t_lite.data import files_problem, layout
from t2t_lite.data.files_problem import FilesProblem
from t2t_lite.data.problem_definition import ProblemDefinition, SplitFiles, shown
from t2t_lite.errors import T2TError

_SUFFIX = ".problem.json"


def definition_path(data_dir: str, name: str) -> str:
    return os.path.join(data_dir, name + _SUFFIX)


def problem_class(definition: ProblemDefinition) -> type:
    """A zero-argument `FilesProblem` class for the registry."""

    class DefinedProblem(FilesProblem):
        __doc__ = f"{definition.source_language}->{definition.target_language} from files."

        def __init__(self):
            super().__init__(definition)

    DefinedProblem.__name__ = DefinedProblem.__qualname__ = f"Defined_{definition.name}"
    return DefinedProblem


def register(definition: ProblemDefinition) -> None:
    """Registers the problem of `definition` under its name.

    Raises:
      T2TError: the name is a built-in problem's or a user directory's.
    """
    registry.register_defined_problem(problem_class(definition), definition.name)


def write(data_dir: str, definition: ProblemDefinition) -> None:
    """Writes `definition` into `data_dir` (atomically) and registers it.

    Raises:
      T2TError: `data_dir` holds another definition of the same name (other
        files or settings): nothing is overwritten.
    """
    path = definition_path(data_dir, definition.name)
    existing = read(path) if os.path.exists(path) else None
    if existing is not None and existing != definition:
        changed = sorted(f.name for f in dataclasses.fields(definition)
                         if getattr(existing, f.name) != getattr(definition, f.name))
        raise T2TError(f"{data_dir} already holds problem {definition.name!r} defined "
                       f"with other {', '.join(changed)}{_recount(existing, definition)}; use a "
                       "new --data_dir or another --problem name.")
    register(definition)
    if existing is None:
        os.makedirs(data_dir, exist_ok=True)
        atomic.write_text(path, json.dumps(definition.to_json(), indent=2, ensure_ascii=False)
                          + "\n")


def _recount(existing: ProblemDefinition, definition: ProblemDefinition) -> str:
    """" (FILES: N pairs, not the M recorded)" for the first corpus whose same files
    now hold another number of pairs (edited in place); "" otherwise."""
    def corpora(d: ProblemDefinition) -> List[Tuple[Tuple[str, ...], Optional[int]]]:
        given = [c if isinstance(c, SplitFiles) else None for c in (d.dev, d.test)]
        return [(c.files, c.pairs) for c in d.train] + \
            [(c.files, c.pairs) if c else ((), None) for c in given]

    for (old_files, old_pairs), (files, pairs) in zip(corpora(existing), corpora(definition)):
        if old_files and old_files == files and old_pairs != pairs:
            return f" ({', '.join(files)}: {pairs} pairs, not the {old_pairs} recorded)"
    return ""


def read(path: str) -> ProblemDefinition:
    """The definition in `path` (`ProblemDefinition.from_json`), whose name must be
    the file's.

    Raises:
      T2TError: unreadable, not JSON, or damaged (naming `path`).
    """
    try:
        with open(path, encoding="utf-8") as f:
            definition = ProblemDefinition.from_json(json.load(f), path)
    except (OSError, ValueError) as e:
        raise T2TError(f"Cannot read the problem definition {path}: {e}") from None
    stem = os.path.basename(path)[:-len(_SUFFIX)]
    if definition.name != stem:
        raise T2TError(f"Corrupt problem definition in {path}: name is "
                       f"{shown(definition.name)}, expected {shown(stem)} (the file's name).")
    return definition


def register_data_dir(data_dir: Optional[str]) -> List[str]:
    """Registers every problem defined in `data_dir`; returns their names."""
    if not data_dir or not os.path.isdir(data_dir):
        return []
    names = []
    for path in sorted(glob.glob(os.path.join(glob.escape(data_dir), "*" + _SUFFIX))):
        definition = read(path)
        register(definition)
        names.append(definition.name)
    return names


def only_problem(data_dir: str) -> str:
    """The name of the one problem with t2t-datagen output in `data_dir`.

    Raises:
      T2TError: none, or several (then --problem must choose).
    """
    names = layout.problems_with_data(data_dir)
    if len(names) != 1:
        which = f"{len(names)} problems ({', '.join(names)})" if names else "no t2t-datagen output"
        raise T2TError(f"--problem is needed: {data_dir} holds {which}.")
    return names[0]


def find_problem(name: Optional[str], data_dir: Optional[str]):
    """The problem `name` (--problem: registered, or defined in `data_dir`), or
    without a name the one problem with data in `data_dir`.

    Raises:
      T2TError: an unknown name, a damaged definition in `data_dir`, or no name
        where `data_dir` is not given or holds no or several problems' data.
    """
    register_data_dir(data_dir)
    name = name or (only_problem(data_dir) if data_dir else None)
    if not name:
        raise T2TError("--problem is needed (or --data_dir holding one problem's data).")
    return registry.problem(name)


def define_problem(data_dir: Optional[str], name: Optional[str], source_language: Optional[str],
                   target_language: Optional[str], train_files: Optional[Sequence[str]],
                   dev_files: Optional[str], test_files: Optional[str],
                   vocab_size: Optional[int], log: Callable[[str], None] = print):
    """Defines the problem of the user's files (t2t-datagen's files flags: corpus
    specs as `files_problem.parse_corpus_spec` reads them), checks every file,
    writes its definition into `data_dir` and returns the registered problem.

    `name` defaults to `files_problem.default_problem_name`, `vocab_size` to
    `files_problem.DEFAULT_VOCAB_SIZE`.

    Raises:
      T2TError: no languages, train files or `data_dir`; the name of a
        built-in or --usr_dir problem; see `files_problem.make_definition`
        and `write`.
    """
    missing = [f"--{flag}" for flag, value in (
        ("source_lang", source_language), ("target_lang", target_language),
        ("train_files", train_files), ("data_dir", data_dir)) if not value]
    if missing:
        raise T2TError(f"A problem defined by files needs {', '.join(missing)}.")
    name = name or files_problem.default_problem_name(source_language, target_language)
    origin = registry.problem_origin(name) if name in registry.list_problems() else None
    if origin not in (None, registry.DEFINED):
        owner = "built-in" if origin == registry.BUILT_IN else f"--usr_dir {origin}"
        raise T2TError(f"--problem={name} is the name of a {owner} problem: give your files' "
                       "problem another --problem name.")
    parse = files_problem.parse_corpus_spec
    definition = files_problem.make_definition(
        name, source_language, target_language,
        [parse(spec, "--train_files") for spec in train_files],
        parse(dev_files, "--dev_files") if dev_files else None,
        parse(test_files, "--test_files") if test_files else None,
        vocab_size or files_problem.DEFAULT_VOCAB_SIZE, log=log)
    write(data_dir, definition)
    return registry.problem(name)
