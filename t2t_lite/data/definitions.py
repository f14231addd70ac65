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
from t2t_lite.data import layout
from t2t_lite.data.files_problem import DEFINITION_KIND, DEFINITION_VERSION, FilesProblem
from t2t_lite.errors import T2TError

_SUFFIX = ".problem.json"
_KEYS = {"kind", "version", "name", "source_language", "target_language", "vocab_size",
         "train", "dev", "test"}


def definition_path(data_dir: str, name: str) -> str:
    return os.path.join(data_dir, name + _SUFFIX)


def check_definition(definition, where: str) -> Dict:
    """`definition` if it is one this version reads; T2TError naming `where` otherwise.

    Every field's type is checked (`_damage`), so a hand-edited or damaged file
    is one line naming it and the field, never a TypeError later.
    """
    if not isinstance(definition, dict) or set(definition) != _KEYS \
            or definition["kind"] != DEFINITION_KIND:
        raise T2TError(f"Corrupt problem definition in {where}.")
    damage = _damage(definition)
    if damage:
        raise T2TError(f"Corrupt problem definition in {where}: {damage}.")
    if definition["version"] > DEFINITION_VERSION:
        raise T2TError(f"{where} holds a problem definition of a newer t2t-lite (version "
                       f"{definition['version']}); upgrade t2t-lite.")
    return definition


def _is_count(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _is_text(value) -> bool:
    return isinstance(value, str) and value != ""


def _is_name(value) -> bool:
    """A problem name that is safe as the start of a file name: no directory part."""
    return _is_text(value) and not value.startswith(".") \
        and not any(c in value for c in ("/", "\\", os.sep, "\0"))


def _is_files(value) -> bool:
    return isinstance(value, list) and len(value) in (1, 2) and all(map(_is_text, value))


def _shown(value) -> str:
    """`value` as the definition's JSON writes it (`"1"`, `null`, `true`)."""
    return json.dumps(value, ensure_ascii=False)


def _corpus_damage(value, field: str) -> Optional[str]:
    """What is wrong with a {"files": [...], "pairs": N, ...} entry (None: nothing)."""
    if not isinstance(value, dict):
        return f"{field} is {_shown(value)}, expected an object"
    if not _is_files(value.get("files")):
        return f"{field}.files is {_shown(value.get('files'))}, expected a list of one or two " \
            "file names"
    if not _is_count(value.get("pairs"), 1):
        return f"{field}.pairs is {_shown(value.get('pairs'))}, expected a whole number of pairs"
    return None


def _damage(definition: Dict) -> Optional[str]:
    """What is wrong with the fields of a definition (keys already checked): a
    short phrase naming the field and its value, or None."""
    for field, valid, expected in (
            ("version", lambda v: _is_count(v, 1), "a whole number"),
            ("name", _is_name, "a problem name"),
            ("source_language", _is_text, "a language code"),
            ("target_language", _is_text, "a language code"),
            ("vocab_size", lambda v: _is_count(v, 1), "a whole number"),
            ("train", lambda v: isinstance(v, list) and v, "a list of corpora")):
        if not valid(definition[field]):
            return f"{field} is {_shown(definition[field])}, expected {expected}"
    for i, corpus in enumerate(definition["train"]):
        damage = _corpus_damage(corpus, f"train[{i}]")
        if damage is None and not _is_text(corpus.get("name")):
            damage = f"train[{i}].name is {_shown(corpus.get('name'))}, expected a corpus name"
        if damage:
            return damage
    dev, test = definition["dev"], definition["test"]
    if isinstance(dev, dict) and set(dev) == {"held_out"}:
        held_out = dev["held_out"]
        if not (isinstance(held_out, dict) and _is_count(held_out.get("pairs"), 1)
                and _is_count(held_out.get("seed"))):
            return f"dev.held_out is {_shown(held_out)}, expected {{\"pairs\": N, \"seed\": S}}"
    elif dev is None:
        return "dev is null, expected dev files or a held-out count"
    else:
        damage = _corpus_damage(dev, "dev")
        if damage:
            return damage
    return None if test is None else _corpus_damage(test, "test")


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
    """The definition in `path` (`check_definition`), whose name must be the file's.

    Raises:
      T2TError: unreadable, not JSON, or damaged (naming `path`).
    """
    try:
        with open(path, encoding="utf-8") as f:
            definition = check_definition(json.load(f), path)
    except (OSError, ValueError) as e:
        raise T2TError(f"Cannot read the problem definition {path}: {e}") from None
    stem = os.path.basename(path)[:-len(_SUFFIX)]
    if definition["name"] != stem:
        raise T2TError(f"Corrupt problem definition in {path}: name is "
                       f"{_shown(definition['name'])}, expected {_shown(stem)} (the file's name).")
    return definition


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
    names = layout.problems_with_data(data_dir)
    if len(names) != 1:
        which = f"{len(names)} problems ({', '.join(names)})" if names else "no t2t-datagen output"
        raise T2TError(f"--problem is needed: {data_dir} holds {which}.")
    return names[0]
