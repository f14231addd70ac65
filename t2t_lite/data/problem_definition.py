"""The definition of a problem defined by files, as a typed value and as JSON.

`ProblemDefinition` is what `files_problem.make_definition` returns and what
`FilesProblem`, the data directory's `{problem}.problem.json`
(`t2t_lite.data.definitions`) and the model directory's problem.json
(`t2t_lite.model_dir`) hold. `to_json()` is the JSON object those files
store; `from_json(value, where)` reads one back and is where every field of a
stored definition is checked, so a hand-edited or damaged file is one line
naming it and the field, never a TypeError later:

    {"kind": "text_files", "version": 1, "name": "translate_deen_files",
     "source_language": "de", "target_language": "en", "vocab_size": 8000,
     "train": [{"name": "news", "files": ["/abs/news.tsv"], "pairs": 2000}, ...],
     "dev": {"files": ["/abs/dev.de", "/abs/dev.en"], "pairs": 500}
            or {"held_out": {"pairs": 100, "seed": 1234}},
     "test": {"files": [...], "pairs": N} or null}

Keys beyond these inside a corpus object are ignored, as they always were.
"""

import dataclasses
import json
import os
from typing import Any, Dict, Optional, Tuple, Union

from t2t_lite.errors import T2TError

DEFINITION_KIND = "text_files"
DEFINITION_VERSION = 1
_KEYS = {"kind", "version", "name", "source_language", "target_language", "vocab_size",
         "train", "dev", "test"}


@dataclasses.dataclass(frozen=True)
class TrainCorpus:
    """A train corpus: its name (`--train_mix`'s), its files and their number of pairs."""

    name: str
    files: Tuple[str, ...]  # one TSV file, or aligned (source, target); absolute paths
    pairs: int

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "files": list(self.files), "pairs": self.pairs}


@dataclasses.dataclass(frozen=True)
class SplitFiles:
    """The dev or test set given as files, and their number of pairs."""

    files: Tuple[str, ...]
    pairs: int

    def to_json(self) -> Dict[str, Any]:
        return {"files": list(self.files), "pairs": self.pairs}


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """A dev set of `pairs` train pairs drawn with `seed` (no --dev_files given)."""

    pairs: int
    seed: int

    def to_json(self) -> Dict[str, Any]:
        return {"held_out": {"pairs": self.pairs, "seed": self.seed}}


@dataclasses.dataclass(frozen=True)
class ProblemDefinition:
    """A problem defined by files (see the module doc for its JSON)."""

    name: str                    # the registered problem name, [a-z0-9_]+
    source_language: str         # the language codes given, e.g. "de", "pt-BR"
    target_language: str
    vocab_size: int              # pieces of the shared SentencePiece vocabulary
    train: Tuple[TrainCorpus, ...]
    dev: Union[SplitFiles, HeldOut]
    test: Optional[SplitFiles]   # None: no test set
    version: int = DEFINITION_VERSION  # of the format that wrote it

    @property
    def held_out(self) -> Optional[HeldOut]:
        """The held-out dev set, or None when dev files were given."""
        return self.dev if isinstance(self.dev, HeldOut) else None

    def split_files(self, split: str) -> Tuple[str, ...]:
        """The files given for "dev" or "test" (none for a held-out dev set or no test)."""
        given = {"dev": self.dev, "test": self.test}.get(split)
        return given.files if isinstance(given, SplitFiles) else ()

    def to_json(self) -> Dict[str, Any]:
        """The JSON object of the definition files, keys in their written order."""
        return {"kind": DEFINITION_KIND, "version": self.version, "name": self.name,
                "source_language": self.source_language,
                "target_language": self.target_language, "vocab_size": self.vocab_size,
                "train": [c.to_json() for c in self.train], "dev": self.dev.to_json(),
                "test": None if self.test is None else self.test.to_json()}

    @classmethod
    def from_json(cls, value: Any, where: str) -> "ProblemDefinition":
        """The definition stored as `value` (parsed JSON) in `where`.

        Raises:
          T2TError: naming `where`: not a definition of this kind, a field of
            the wrong type or value (naming the field and its value), or a
            definition of a newer t2t-lite.
        """
        if not isinstance(value, dict) or set(value) != _KEYS \
                or value["kind"] != DEFINITION_KIND:
            raise T2TError(f"Corrupt problem definition in {where}.")
        damage = _damage(value)
        if damage:
            raise T2TError(f"Corrupt problem definition in {where}: {damage}.")
        if value["version"] > DEFINITION_VERSION:
            raise T2TError(f"{where} holds a problem definition of a newer t2t-lite (version "
                           f"{value['version']}); upgrade t2t-lite.")
        dev, test = value["dev"], value["test"]
        return cls(
            name=value["name"], source_language=value["source_language"],
            target_language=value["target_language"], vocab_size=value["vocab_size"],
            train=tuple(TrainCorpus(c["name"], tuple(c["files"]), c["pairs"])
                        for c in value["train"]),
            dev=(HeldOut(dev["held_out"]["pairs"], dev["held_out"]["seed"])
                 if set(dev) == {"held_out"} else _split_files(dev)),
            test=None if test is None else _split_files(test), version=value["version"])


def _split_files(value: Dict[str, Any]) -> SplitFiles:
    return SplitFiles(tuple(value["files"]), value["pairs"])


def shown(value: Any) -> str:
    """`value` as the definition's JSON writes it (`"1"`, `null`, `true`)."""
    return json.dumps(value, ensure_ascii=False)


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


def _corpus_damage(value, field: str) -> Optional[str]:
    """What is wrong with a {"files": [...], "pairs": N, ...} entry (None: nothing)."""
    if not isinstance(value, dict):
        return f"{field} is {shown(value)}, expected an object"
    if not _is_files(value.get("files")):
        return f"{field}.files is {shown(value.get('files'))}, expected a list of one or two " \
            "file names"
    if not _is_count(value.get("pairs"), 1):
        return f"{field}.pairs is {shown(value.get('pairs'))}, expected a whole number of pairs"
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
            return f"{field} is {shown(definition[field])}, expected {expected}"
    for i, corpus in enumerate(definition["train"]):
        damage = _corpus_damage(corpus, f"train[{i}]")
        if damage is None and not _is_text(corpus.get("name")):
            damage = f"train[{i}].name is {shown(corpus.get('name'))}, expected a corpus name"
        if damage:
            return damage
    dev, test = definition["dev"], definition["test"]
    if isinstance(dev, dict) and set(dev) == {"held_out"}:
        held_out = dev["held_out"]
        if not (isinstance(held_out, dict) and _is_count(held_out.get("pairs"), 1)
                and _is_count(held_out.get("seed"))):
            return f"dev.held_out is {shown(held_out)}, expected {{\"pairs\": N, \"seed\": S}}"
    elif dev is None:
        return "dev is null, expected dev files or a held-out count"
    else:
        damage = _corpus_damage(dev, "dev")
        if damage:
            return damage
    return None if test is None else _corpus_damage(test, "test")
