"""Registries of problems and hparams sets, looked up by name.

Usage, tensor2tensor style::

    @registry.register_hparams
    def transformer_base() -> HParams: ...

    @registry.register_problem("translate_ende", aliases=["translate_ende_wmt32k"])
    class TranslateEnde(Problem): ...

    registry.hparams("transformer_base")      # -> HParams
    registry.problem("translate_ende")        # -> Problem instance
    registry.list_hparams(), registry.list_problems()

The default name of a registered function or class is its snake_case name.
Registering a name twice is an error; an unknown name raises `T2TError` that
suggests the closest names and lists what is registered. A registered problem
class gets its canonical name as its `name` attribute (the decorator sets it),
so the name is written once.

There is one model, `t2t_lite.model.transformer.Transformer`, built by
`t2t_lite.build_model`; it is not looked up by name.

Discovery is explicit: the first lookup in a registry imports its package
(`t2t_lite.hparams` or `t2t_lite.problems`), whose `__init__.py` imports its
modules; nothing scans directories.

Every entry has an origin: `BUILT_IN`, the path of a user directory
(`--usr_dir`, imported inside `user_code(path)`), or `DEFINED` (a problem
defined by files, rebuilt from its JSON definition). A user directory's entry
may take a built-in's name: it replaces the built-in (a user's name keeps
meaning their code), said in one line through `note`. A defined problem may
replace only another definition of the same name.
"""

import contextlib
import importlib
import re
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from t2t_lite.errors import T2TError, did_you_mean

BUILT_IN = "built-in"
DEFINED = "defined by files"
_origin = BUILT_IN  # of the entries being registered now (`user_code`)


def _print_note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# Receives the one-line notes of replaced entries (tests replace it).
note: Callable[[str], None] = _print_note


@contextlib.contextmanager
def user_code(origin: str) -> Iterator[None]:
    """Registrations inside are of a user directory `origin` (its path)."""
    global _origin
    previous, _origin = _origin, origin
    try:
        yield
    finally:
        _origin = previous



def _snake_case(name: str) -> str:
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class Registry:
    """A name -> object table with aliases, duplicate checks and suggestions."""

    def __init__(self, kind: str, package: str, name_attribute: Optional[str] = None):
        self.kind = kind
        self.package = package  # imported on first lookup; its __init__ registers entries
        # When set, each registered object gets its canonical name as this attribute.
        self.name_attribute = name_attribute
        self._discovered = False
        self._entries: Dict[str, Any] = {}
        self._aliases: Dict[str, str] = {}
        self._origins: Dict[str, str] = {}  # canonical name -> origin

    def register(self, obj: Any, name: Optional[str] = None,
                 aliases: Sequence[str] = (), origin: Optional[str] = None) -> Any:
        """Registers `obj` under `name` (default: its snake_case name) and `aliases`.

        Args:
          origin: `BUILT_IN`, `DEFINED` or a user directory; default: that of
            the `user_code` block this runs in (`BUILT_IN` outside one).

        Raises:
          T2TError: a name already taken that this origin may not replace.
        """
        name = name or _snake_case(obj.__name__)
        origin = origin or _origin
        if origin != BUILT_IN:
            self._discover()  # built-ins first, so that a user's entry replaces them
        for key in (name, *aliases):
            if key in self._entries or key in self._aliases:
                self._replace(key, origin)
        self._entries[name] = obj
        self._origins[name] = origin
        for alias in aliases:
            self._aliases[alias] = name
        if self.name_attribute:
            setattr(obj, self.name_attribute, name)
        return obj

    def _replace(self, key: str, origin: str) -> None:
        """Frees `key` for an entry of `origin`, or raises when it may not take it."""
        owner = self._aliases.get(key, key)
        held_by = self._origins.get(owner, BUILT_IN)
        if origin == BUILT_IN or (origin == DEFINED) != (held_by == DEFINED):
            raise T2TError(f"{self.kind} {key!r} is already registered"
                           + ("" if held_by == BUILT_IN else f" ({held_by})") + ".")
        if held_by != origin and origin != DEFINED:
            what = "the built-in one" if held_by == BUILT_IN else f"the one of {held_by}"
            note(f"The {self.kind} {key!r} of --usr_dir {origin} replaces {what}.")
        if key in self._aliases:
            del self._aliases[key]
            return
        del self._entries[key], self._origins[key]
        for alias in [a for a, target in self._aliases.items() if target == key]:
            del self._aliases[alias]

    def origin(self, name: str) -> str:
        """Where the entry `name` (or its alias) comes from (see the module doc)."""
        return self._origins[self.canonical_name(name)]

    def decorator(self, name_or_obj=None, aliases: Sequence[str] = ()):
        """Supports `@register`, `@register()` and `@register("name", aliases=[...])`."""
        if callable(name_or_obj):
            return self.register(name_or_obj)

        def wrap(obj):
            return self.register(obj, name_or_obj, aliases)

        return wrap

    def _discover(self) -> None:
        if not self._discovered:
            self._discovered = True
            importlib.import_module(self.package)

    def canonical_name(self, name: str) -> str:
        self._discover()
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        known = self.names(with_aliases=True)
        raise T2TError(
            f"Unknown {self.kind} {name!r}.{did_you_mean(name, known)} "
            f"Registered {self.kind}s: {', '.join(self.names())}.")

    def get(self, name: str) -> Any:
        return self._entries[self.canonical_name(name)]

    def names(self, with_aliases: bool = False) -> List[str]:
        self._discover()
        names = set(self._entries)
        if with_aliases:
            names |= set(self._aliases)
        return sorted(names)

    def aliases_of(self, name: str) -> List[str]:
        return sorted(a for a, target in self._aliases.items() if target == name)


# Each registry imports its own package on its first lookup, and only then.
_problems = Registry("problem", "t2t_lite.problems", name_attribute="name")
_hparams = Registry("hparams set", "t2t_lite.hparams")


def register_problem(name_or_cls=None, aliases: Sequence[str] = ()):
    """Class decorator registering a `Problem` subclass under a name and aliases.

    Sets the class's `name` to the registered (canonical) name; subclasses
    inherit it unless they are registered themselves.
    """
    return _problems.decorator(name_or_cls, aliases)


def register_hparams(name_or_fn=None, aliases: Sequence[str] = ()):
    """Function decorator registering a zero-argument function returning HParams."""
    return _hparams.decorator(name_or_fn, aliases)


def hparams(name: str):
    """Returns a fresh `HParams` of the registered set `name`."""
    return _hparams.get(name)()


def problem(name: str):
    """Returns an instance of the registered problem `name` (aliases resolve)."""
    return _problems.get(name)()


def register_defined_problem(cls, name: str) -> None:
    """Registers a problem class rebuilt from a definition (`DEFINED`), replacing
    an earlier definition of the same name.

    Raises:
      T2TError: `name` is a built-in problem's or a user directory's.
    """
    _problems.register(cls, name, origin=DEFINED)


def problem_origin(name: str) -> str:
    """`BUILT_IN`, `DEFINED` or the user directory the problem `name` comes from."""
    return _problems.origin(name)


def hparams_origin(name: str) -> str:
    """`BUILT_IN` or the user directory the hparams set `name` comes from."""
    return _hparams.origin(name)


def discover_all() -> None:
    """Imports the built-in problems and hparams sets now (before a user directory)."""
    _problems._discover()
    _hparams._discover()


def problem_name(name: str) -> str:
    """The canonical name of a problem (t2t aliases resolve to it)."""
    return _problems.canonical_name(name)


def list_hparams() -> List[str]:
    return _hparams.names()


def list_problems() -> List[str]:
    return _problems.names()


def help_string() -> str:
    """A listing of everything registered, for `--registry_help`."""
    def lines(reg: Registry) -> str:
        out = []
        for name in reg.names():
            aliases = reg.aliases_of(name)
            out.append(f"  {name}" + (f"  (also: {', '.join(aliases)})" if aliases else ""))
        return "\n".join(out)

    return f"Problems:\n{lines(_problems)}\n\nHparams sets:\n{lines(_hparams)}"
