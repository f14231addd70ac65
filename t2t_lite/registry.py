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
"""

import importlib
import re
from typing import Any, Dict, List, Optional, Sequence

from t2t_lite.errors import T2TError, did_you_mean



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

    def register(self, obj: Any, name: Optional[str] = None,
                 aliases: Sequence[str] = ()) -> Any:
        name = name or _snake_case(obj.__name__)
        for key in (name, *aliases):
            if key in self._entries or key in self._aliases:
                raise T2TError(f"{self.kind} {key!r} is already registered.")
        self._entries[name] = obj
        for alias in aliases:
            self._aliases[alias] = name
        if self.name_attribute:
            setattr(obj, self.name_attribute, name)
        return obj

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
