"""tensor2tensor.utils.registry: `register_problem` and `register_hparams` into t2t-lite's.

Names are derived as t2t 1.15 derives them (`default_name`), which differs
from t2t-lite's own rule for names with digits ("Translate8k" -> t2t's
"translate8k"). A t2t problem class becomes a t2t-lite problem
(`text_problems.Text2TextProblem` is a t2t-lite `Problem`); a t2t hparams set
becomes one that maps t2t's values to t2t-lite's fields
(`t2t_lite.t2t_compat.hparams_sets`). What the layer cannot run is still
registered, as an entry that refuses in one line when it is used, so the rest
of the directory stays usable (`checks`).
"""

import re
from typing import Callable, Dict, List, Optional

from t2t_lite import registry as lite_registry
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import checks, hparams_sets, multi_problem, text_problems

_FIRST_CAP = re.compile("(.)([A-Z][a-z0-9]+)")
_ALL_CAP = re.compile("([a-z0-9])([A-Z])")


def default_name(class_or_fn) -> str:
    """t2t's snake_case name of a class or function (misc_utils.camelcase_to_snakecase)."""
    return _ALL_CAP.sub(r"\1_\2", _FIRST_CAP.sub(r"\1_\2", class_or_fn.__name__)).lower()


def _decorator(register: Callable, name_or_obj):
    """t2t's decorators take `@register`, `@register()` and `@register("name")`."""
    if callable(name_or_obj):
        return register(name_or_obj, None)
    return lambda obj: register(obj, name_or_obj)


def problem_refusal(cls) -> Optional[str]:
    """The one-line refusal of a problem class registered through the layer, or None."""
    if issubclass(cls, multi_problem.MultiProblem):
        return (f"{cls.__name__} is a t2t MultiProblem: not supported by t2t-lite's "
                "compatibility layer (t2t-lite weighs the train corpora of one problem "
                "instead: t2t-trainer --train_mix).")
    if not issubclass(cls, text_problems.Text2TextProblem) or issubclass(
            cls, text_problems.NOT_TEXT_TO_TEXT):
        kinds = [k.__name__ for k in cls.__mro__ if k.__module__.startswith(checks.COMPAT)]
        return (f"{cls.__name__} is a t2t {kinds[0] if kinds else 'problem'}, not a "
                "text-to-text problem: t2t-lite's compatibility layer runs Text2TextProblem "
                "and TranslateProblem subclasses.")
    for member, why in checks.OVERRIDES.items():
        owner = checks.user_defined(cls, member)
        if owner is not None:
            return f"{owner.__name__}.{member} is overridden: not supported ({why})."
    return None


def refusing_problem(cls, refusal: str):
    """A registry entry for `cls` that refuses with `refusal` when it is used."""
    def __init__(self, *args, **kwargs):
        raise T2TError(refusal)

    return type(cls.__name__, (cls,), {"__init__": __init__, "__module__": cls.__module__,
                                       "__doc__": f"Refused: {refusal}"})


def register_problem(name=None):
    """Registers a t2t problem class under `name` (default: t2t's snake_case name)."""
    def register(cls, name: Optional[str]):
        name = name or default_name(cls)
        if name.endswith("_rev") or name.endswith("_copy"):
            raise T2TError(f"Problem name {name!r}: t2t reserves the suffixes _rev and _copy.")
        refusal = problem_refusal(cls)
        entry = refusing_problem(cls, refusal) if refusal else cls
        lite_registry.register_problem(name)(entry)
        cls.name = name
        return cls
    return _decorator(register, name)


_t2t_sets: Dict[str, Callable] = {}  # t2t sets registered through the layer, by name


def register_hparams(name=None):
    """Registers a t2t hparams set: its HParams become t2t-lite's when it is looked up."""
    def register(fn, name: Optional[str]):
        name = name or default_name(fn)
        lite_registry.register_hparams(name)(hparams_sets.lite_set(fn, name))
        _t2t_sets[name] = fn
        return fn
    return _decorator(register, name)


def _refuse(what: str):
    def refused(*args, **kwargs):
        raise T2TError(f"tensor2tensor.utils.registry.{what}: t2t-lite has one model, the "
                       "Transformer, and its own modalities; the compatibility layer provides "
                       "register_problem and register_hparams.")
    return refused


register_model = _refuse("register_model")
register_modality = _refuse("register_modality")
register_ranged_hparams = _refuse("register_ranged_hparams")


def problem(name: str):
    """The registered problem `name`, an instance (t2t's `registry.problem`)."""
    return lite_registry.problem(name)


def hparams(name: str):
    """t2t's `registry.hparams(name)`, for sets built from another: t2t HParams of a
    Transformer set `transformer` provides or of a set registered through the layer.

    Raises:
      T2TError: any other name (t2t-lite's own sets are not t2t HParams).
    """
    from t2t_lite.t2t_compat import transformer
    if name in _t2t_sets:
        return _t2t_sets[name]()
    if name in transformer.PROVIDED:
        return getattr(transformer, name)()
    raise T2TError(f"registry.hparams({name!r}): not a t2t hparams set of this user directory "
                   f"nor one of t2t's Transformer sets ({', '.join(transformer.PROVIDED)}).")


def list_problems() -> List[str]:
    return lite_registry.list_problems()


def list_hparams() -> List[str]:
    return lite_registry.list_hparams()
