"""Problem definitions stored as data: written by t2t-datagen, read by every later program.

A problem defined by files (`t2t_lite.data.files_problem`) has no code of its
own to register, so its definition travels with the data and the models:

  - `{data_dir}/{problem}.problem.json`: written by t2t-datagen before any
    shard; `register_data_dir` registers every definition found in a data
    directory, so `--problem=NAME --data_dir=D` (or `--data_dir=D` alone, when
    D holds one problem: `only_problem`) finds it like a built-in problem;
  - the model directory's `problem.json` keeps a copy under "definition"
    (`t2t_lite.model_dir`), so t2t-decoder, t2t-exporter and t2t-server rebuild
    the problem from the model directory alone.
"""

import glob
import json
import os
from typing import Dict, List, Optional

from t2t_lite import atomic, registry
from t2t_lite.data.files_problem import DEFINITION_KIND, DEFINITION_VERSION, FilesProblem
from t2t_lite.errors import T2TError

_SUFFIX = ".problem.json"
_DATAGEN_SUFFIX = ".datagen.json"
_KEYS = {"kind", "version", "name", "source_language", "target_language", "vocab_size",
         "train", "dev", "test"}


def definition_path(data_dir: str, name: str) -> str:
    return os.path.join(data_dir, name + _SUFFIX)


def check_definition(definition, where: str) -> Dict:
    """`definition` if it is one this version reads; T2TError naming `where` otherwise."""
    if not isinstance(definition, dict) or set(definition) != _KEYS \
            or definition["kind"] != DEFINITION_KIND:
        raise T2TError(f"Corrupt problem definition in {where}.")
    if definition["version"] > DEFINITION_VERSION:
        raise T2TError(f"{where} holds a problem definition of a newer t2t-lite (version "
                       f"{definition['version']}); upgrade t2t-lite.")
    return definition


def problem_class(definition: Dict) -> type:
    """A zero-argument `FilesProblem` class for the registry."""

    class DefinedProblem(FilesProblem):
        __doc__ = f"{definition['source_language']}->{definition['target_language']} from files."

        def __init__(self):
            super().__init__(definition)

    DefinedProblem.__name__ = DefinedProblem.__qualname__ = f"Defined_{definition['name']}"
    return DefinedProblem


def register(definition: Dict) -> None:
    """Registers the problem of `definition` under its name.

    Raises:
      T2TError: the name is a built-in problem's or a user directory's.
    """
    registry.register_defined_problem(problem_class(definition), definition["name"])


def write(data_dir: str, definition: Dict) -> None:
    """Writes `definition` into `data_dir` (atomically) and registers it.

    Raises:
      T2TError: `data_dir` holds another definition of the same name (other
        files or settings): nothing is overwritten.
    """
    path = definition_path(data_dir, definition["name"])
    existing = read(path) if os.path.exists(path) else None
    if existing is not None and existing != definition:
        changed = sorted(k for k in _KEYS if existing.get(k) != definition.get(k))
        raise T2TError(f"{data_dir} already holds problem {definition['name']!r} defined "
                       f"with other {', '.join(changed)}{_recount(existing, definition)}; use a "
                       "new --data_dir or another --problem name.")
    register(definition)
    if existing is None:
        os.makedirs(data_dir, exist_ok=True)
        atomic.write_text(path, json.dumps(definition, indent=2, ensure_ascii=False) + "\n")


def _recount(existing: Dict, definition: Dict) -> str:
    """" (FILES: N pairs, not the M recorded)" for the first corpus whose same files
    now hold another number of pairs (edited in place); "" otherwise."""
    def corpora(d: Dict) -> List[Dict]:
        return list(d.get("train") or []) + [d.get(s) or {} for s in ("dev", "test")]

    for old, new in zip(corpora(existing), corpora(definition)):
        if old.get("files") and old.get("files") == new.get("files") \
                and old.get("pairs") != new.get("pairs"):
            return (f" ({', '.join(new['files'])}: {new['pairs']} pairs, not the "
                    f"{old['pairs']} recorded)")
    return ""


def read(path: str) -> Dict:
    try:
        with open(path, encoding="utf-8") as f:
            return check_definition(json.load(f), path)
    except (OSError, ValueError) as e:
        raise T2TError(f"Cannot read the problem definition {path}: {e}") from None


def register_data_dir(data_dir: Optional[str]) -> List[str]:
    """Registers every problem defined in `data_dir`; returns their names."""
    if not data_dir or not os.path.isdir(data_dir):
        return []
    names = []
    for path in sorted(glob.glob(os.path.join(glob.escape(data_dir), "*" + _SUFFIX))):
        definition = read(path)
        register(definition)
        names.append(definition["name"])
    return names


def only_problem(data_dir: str) -> str:
    """The name of the one problem with t2t-datagen output in `data_dir`.

    Raises:
      T2TError: none, or several (then --problem must choose).
    """
    names = sorted(os.path.basename(p)[:-len(_DATAGEN_SUFFIX)] for p in
                   glob.glob(os.path.join(glob.escape(data_dir), "*" + _DATAGEN_SUFFIX)))
    if len(names) != 1:
        which = f"{len(names)} problems ({', '.join(names)})" if names else "no t2t-datagen output"
        raise T2TError(f"--problem is needed: {data_dir} holds {which}.")
    return names[0]
