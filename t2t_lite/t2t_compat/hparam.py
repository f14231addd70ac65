"""tensor2tensor.utils.hparam: HParams with t2t's names, values and methods.

An hparams set of a t2t user directory is a function that takes one of t2t's
Transformer sets and changes it by attribute assignment and `add_hparam`; the
values stay t2t's (t2t's names, its "none" sequences, its
`use_target_space_embedding=True`) until t2t-lite maps them to its own fields
(`hparams_sets.to_lite`), as t2t-import maps a t2t run's hparams.json.
"""

from typing import Any, Dict, Optional

from t2t_lite.errors import T2TError


class HParams:
    """t2t's HParams: attributes, `add_hparam`, `set_hparam`, `get`, `values`, `parse`.

    `base` names the Transformer set the values were built from (None for an
    HParams made by hand, which t2t-lite cannot map).
    """

    def __init__(self, base: Optional[str] = None, **values: Any):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_base_values", dict(values))
        object.__setattr__(self, "base", base)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"t2t HParams has no hparam {name!r}.")

    def __setattr__(self, name: str, value: Any) -> None:
        # t2t keeps an attribute assigned to an unknown name too (models read it with
        # getattr), so it is kept as an hparam here.
        self._values[name] = value

    def __contains__(self, name: str) -> bool:
        return name in self._values

    def add_hparam(self, name: str, value: Any) -> None:
        """Adds a new hparam; t2t refuses a name already taken, and so does this."""
        if name in self._values:
            raise T2TError(f"HParams.add_hparam({name!r}): hparam name is already taken "
                           f"(it is {self._values[name]!r}); assign it instead.")
        self._values[name] = value

    def set_hparam(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise T2TError(f"HParams.set_hparam({name!r}): no such hparam; use add_hparam.")
        self._values[name] = value

    def del_hparam(self, name: str) -> None:
        self._values.pop(name, None)

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name, default)

    def values(self) -> Dict[str, Any]:
        return dict(self._values)

    def override_from_dict(self, values: Dict[str, Any]) -> "HParams":
        for name, value in values.items():
            self.set_hparam(name, value)
        return self

    def parse(self, overrides: str) -> "HParams":
        """`"a=1,b=x"`, each converted to the type of the hparam's current value."""
        for item in filter(None, (part.strip() for part in overrides.split(","))):
            name, equals, text = item.partition("=")
            if not equals or name not in self._values:
                raise T2TError(f"HParams.parse: {item!r} is not NAME=VALUE of an existing "
                               "hparam.")
            self._values[name] = _convert(text, self._values[name], name)
        return self

    def changed(self) -> Dict[str, Any]:
        """The hparams added or given another value since the base set."""
        return {k: v for k, v in self._values.items()
                if k not in self._base_values or self._base_values[k] != v}


def _convert(text: str, like: Any, name: str) -> Any:
    try:
        if isinstance(like, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        return type(like)(text) if isinstance(like, (int, float)) else text
    except ValueError:
        raise T2TError(f"HParams.parse: {name}={text!r} is not a {type(like).__name__}.") \
            from None
