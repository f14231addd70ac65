"""What the importers (tensor2tensor's checkpoints, Hugging Face Marian's safetensors) share:
the check that an import covers the model exactly, and the first of several names in a
message.

Each importer maps a foreign tensor name to a getter of one model weight
(`Target`: getter, source names, combine); a weight no target reaches would keep
its random initial value, which an import must refuse rather than write, as it
refuses a tensor the map needs and the source lacks, and one nothing uses.
"""

from typing import Callable, Collection, List, Tuple

import numpy as np

from t2t_lite.errors import T2TError

# (getter of the model weight, the source tensors' names, their combination -> the value)
Target = Tuple[Callable, List[str], Callable[[List[np.ndarray]], np.ndarray]]


def first_of(names: List[str]) -> str:
    """"a" or "a (and 2 more)", for a message naming the first of `names`."""
    return names[0] + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")


def unfilled_weights(model, targets: List[Target]) -> List[str]:
    """The paths of `model`'s weights that no target fills (they would keep their random
    initial values)."""
    filled = {getter(model).path for getter, _, _ in targets}
    return [weight.path for weight in model.weights if weight.path not in filled]


def refuse_uncovered(model, targets: List[Target], held: Collection[str],
                     missing: Callable[[str], str], unused: Callable[[str], str],
                     unfilled: Callable[[str], str], dropped: Collection[str] = ()) -> None:
    """Refuses, before anything is assigned, an import that does not cover `model`
    exactly: each callable gets the first name of its kind (`first_of`) and gives the
    importer's one-line message.

    Args:
      targets: the importer's weight map.
      held: the names of the tensors the source holds.
      missing: message for a name `targets` needs that `held` lacks.
      unused: message for a name in `held` no target uses (nor `dropped`).
      unfilled: message for a weight of `model` no target fills (`unfilled_weights`).
      dropped: names the importer checked and drops (aliases of others).

    Raises:
      T2TError: the first of: a missing tensor, an unused one, an unfilled weight.
    """
    needed = [name for _, names, _ in targets for name in names]
    lacking = [name for name in needed if name not in held]
    if lacking:
        raise T2TError(missing(first_of(lacking)))
    left = sorted(set(held) - set(needed) - set(dropped))
    if left:
        raise T2TError(unused(first_of(left)))
    empty = unfilled_weights(model, targets)
    if empty:
        raise T2TError(unfilled(first_of(empty)))
