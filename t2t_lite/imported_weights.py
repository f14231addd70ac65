"""What the importers (tensor2tensor's checkpoints, Hugging Face Marian's safetensors) share:
the model weights an import left unfilled, and the first of several names in a message.

Each importer maps a foreign tensor name to a getter of one model weight
(`Target`: getter, source names, combine); a weight no target reaches would keep
its random initial value, which an import must refuse rather than write.
"""

from typing import Callable, List, Tuple

import numpy as np

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
