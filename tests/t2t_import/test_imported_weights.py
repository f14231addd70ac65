"""`imported_weights.refuse_uncovered`, the check both importers (tensor2tensor's
checkpoints, Marian's safetensors) run before assigning anything: the first missing
tensor, else the first unused one (aliases the importer dropped aside), else the first
model weight no tensor fills, each in the importer's own one line."""

import types

import pytest

from t2t_lite.errors import T2TError
from t2t_lite.imported_weights import refuse_uncovered

# A model of three weights; each target fills one from the source names it lists.
WEIGHTS = {path: types.SimpleNamespace(path=path) for path in ("m/a", "m/b", "m/c")}
MODEL = types.SimpleNamespace(weights=list(WEIGHTS.values()))
TARGETS = [(lambda m: WEIGHTS["m/a"], ["x", "y"], None),
           (lambda m: WEIGHTS["m/b"], ["z"], None),
           (lambda m: WEIGHTS["m/c"], ["w"], None)]
MESSAGES = dict(missing=lambda name: f"lacks {name}", unused=lambda name: f"holds {name}",
                unfilled=lambda name: f"unfilled {name}")


def _refusal(targets, held, dropped=()):
    try:
        refuse_uncovered(MODEL, targets, held, dropped=dropped, **MESSAGES)
    except T2TError as e:
        return str(e)
    return None


@pytest.mark.parametrize("targets, held, dropped, refusal", [
    (TARGETS, ["w", "x", "y", "z"], (), None),
    (TARGETS, {"w": 0, "x": 0, "y": 0, "z": 0, "z_alias": 0}, ["z_alias"], None),
    (TARGETS, ["w", "z"], (), "lacks x (and 1 more)"),
    (TARGETS, ["y", "z", "w", "v"], (), "lacks x"),   # missing comes before unused
    (TARGETS, ["w", "x", "y", "z", "v", "u"], (), "holds u (and 1 more)"),   # sorted
    (TARGETS[:2], ["x", "y", "z", "v"], (), "holds v"),  # unused comes before unfilled
    (TARGETS[:2], ["x", "y", "z"], (), "unfilled m/c"),
    (TARGETS[2:], ["w"], (), "unfilled m/a (and 1 more)"),
])
def test_the_first_gap_is_refused_in_the_importers_line(targets, held, dropped, refusal):
    assert _refusal(targets, held, dropped) == refusal
