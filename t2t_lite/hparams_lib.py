"""HParams: a typed, immutable set of hyperparameters with tensor2tensor's names.

Field names follow tensor2tensor so that users' `--hparams` strings carry
over (`hidden_size`, `filter_size`, `num_heads`, `layer_prepostprocess_dropout`,
...). A set is a function returning a modified copy of another set::

    hp = transformer_base().replace(hidden_size=1024, filter_size=4096)
    hp = hp.parse("num_heads=16,layer_prepostprocess_dropout=0.3")

Decoding parameters (beam size, alpha, extra length) are not hparams: each
problem has defaults and `t2t-decoder --decode_hparams` overrides them.

(Not `hparams.py`: `t2t_lite.hparams` is the package of registered sets.)
"""

import dataclasses
import json
from typing import Any, Dict

from t2t_lite.errors import T2TError, did_you_mean

# t2t's two layer-norm placements, written in its sequence codes:
# "n" = layer norm, "d" = dropout, "a" = add the residual.
_NORM_PLACEMENTS = {
    ("", "dan"): "post",  # the paper: LayerNorm(x + Dropout(Sublayer(x)))
    ("none", "dan"): "post",  # the same in tensor2tensor's spelling ("none": no step)
    ("n", "da"): "pre",   # t2t's later default: x + Dropout(Sublayer(LayerNorm(x)))
}


@dataclasses.dataclass(frozen=True)
class HParams:
    """Hyperparameters of a Transformer and its training and decoding.

    Defaults are the paper's base model ("Attention Is All You Need", sections
    3 and 5); registered sets change them with `replace`.
    """

    # --- Model shape (section 3) ---
    hidden_size: int = 512             # d_model
    filter_size: int = 2048            # d_ff, inner size of the feed-forward layers
    num_heads: int = 8                 # h
    num_hidden_layers: int = 6         # N, for encoder and decoder unless set below
    num_encoder_layers: int = 0        # 0: use num_hidden_layers
    num_decoder_layers: int = 0        # 0: use num_hidden_layers
    attention_key_channels: int = 0    # h * d_k in total; 0: hidden_size (d_k = d_model / h)
    attention_value_channels: int = 0  # h * d_v in total; 0: hidden_size
    pos: str = "timing"                # "timing": sinusoids; "emb": learned positions (Table 3 E)
    layer_preprocess_sequence: str = ""     # "" (post-norm, the paper) or "n" (pre-norm)
    layer_postprocess_sequence: str = "dan"  # "dan" (post-norm) or "da" (pre-norm)
    layer_norm_epsilon: float = 1e-6
    shared_embedding: bool = True      # one embedding for source and target (shared vocabulary)
    shared_embedding_and_softmax_weights: bool = True  # tie target embedding and softmax
    initializer_gain: float = 1.0      # scale of the Glorot-uniform initialiser of the layers

    # --- Regularisation (section 5.4) ---
    layer_prepostprocess_dropout: float = 0.1  # P_drop: sub-layer outputs, embedding sums
    attention_dropout: float = 0.0     # on attention weights (not in the paper)
    relu_dropout: float = 0.0          # after the feed-forward ReLU (not in the paper)
    label_smoothing: float = 0.1       # epsilon_ls

    # --- Optimisation (section 5.3) ---
    optimizer_adam_beta1: float = 0.9
    optimizer_adam_beta2: float = 0.98
    optimizer_adam_epsilon: float = 1e-9
    learning_rate: float = 1.0         # multiplier of the schedule (t2t's learning_rate_constant)
    learning_rate_schedule: str = "noam"  # "noam": d^-0.5 * min(s^-0.5, s * w^-1.5); "constant"
    learning_rate_warmup_steps: int = 4000
    clip_grad_norm: float = 0.0        # 0: no clipping
    train_steps: int = 100000

    # --- Batching (section 5.1) ---
    batch_size: int = 4096             # tokens per replica per micro-batch, padding included
    tokens_per_step: int = 25000       # tokens per optimiser step over all replicas; the
                                       # trainer accumulates gradients to reach it; 0: never
    max_length: int = 256              # longest example (in subwords) kept for training

    def __post_init__(self):
        self.validate()

    # -- Construction ------------------------------------------------------

    def replace(self, **changes: Any) -> "HParams":
        """Returns a copy with `changes` applied (validated, unknown keys rejected)."""
        for key in changes:
            self._check_key(key)
        return dataclasses.replace(self, **changes)

    def parse(self, overrides: str) -> "HParams":
        """Returns a copy with t2t-style overrides applied: "a=1,b=0.3,c=true".

        Values are converted by each field's type. An unknown key, a
        malformed item or an unparsable value raises `T2TError`.
        """
        return parse_overrides(self, overrides, "hparam")

    @classmethod
    def field_types(cls) -> Dict[str, type]:
        return _field_types(cls)

    def _check_key(self, key: str) -> None:
        _check_key(self, key, "hparam")

    # -- Serialisation ----------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, values: Dict[str, Any]) -> "HParams":
        types = cls.field_types()
        unknown = sorted(set(values) - set(types))
        if unknown:
            raise T2TError(f"Unknown hparams {unknown} in saved hparams "
                           f"(written by another version of t2t-lite?).")
        # JSON writes 1.0 as 1: floats come back as ints. Types are checked by validate().
        return cls(**{key: float(value) if types[key] is float and type(value) is int else value
                      for key, value in values.items()})

    @classmethod
    def from_json(cls, text: str) -> "HParams":
        try:
            values = json.loads(text)
        except json.JSONDecodeError as e:
            raise T2TError(f"Corrupt hparams JSON: {e}") from None
        if not isinstance(values, dict):
            raise T2TError("Corrupt hparams JSON: expected an object of name -> value.")
        return cls.from_dict(values)

    # -- Derived values ---------------------------------------------------

    @property
    def encoder_layers(self) -> int:
        return self.num_encoder_layers or self.num_hidden_layers

    @property
    def decoder_layers(self) -> int:
        return self.num_decoder_layers or self.num_hidden_layers

    @property
    def key_channels(self) -> int:
        return self.attention_key_channels or self.hidden_size

    @property
    def value_channels(self) -> int:
        return self.attention_value_channels or self.hidden_size

    @property
    def norm_placement(self) -> str:
        """"post" (the paper) or "pre" (t2t's later default)."""
        return _NORM_PLACEMENTS[(self.layer_preprocess_sequence, self.layer_postprocess_sequence)]

    # -- Validation -------------------------------------------------------

    def validate(self) -> None:
        """Raises `T2TError` for impossible combinations and out-of-range values."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            expected = _TYPES[f.type]
            if type(value) is not expected and not (expected is float and type(value) is int):
                raise T2TError(f"hparam {f.name!r} must be {expected.__name__}, got {value!r}.")
        positive = ["hidden_size", "filter_size", "num_heads", "num_hidden_layers",
                    "batch_size", "max_length", "train_steps"]
        for name in positive:
            if getattr(self, name) <= 0:
                raise T2TError(f"hparam {name!r} must be positive, got {getattr(self, name)}.")
        non_negative = ["num_encoder_layers", "num_decoder_layers", "attention_key_channels",
                        "attention_value_channels", "learning_rate_warmup_steps",
                        "tokens_per_step", "clip_grad_norm", "learning_rate",
                        "layer_norm_epsilon"]
        for name in non_negative:
            if getattr(self, name) < 0:
                raise T2TError(f"hparam {name!r} must be >= 0, got {getattr(self, name)}.")
        for name in ["layer_prepostprocess_dropout", "attention_dropout", "relu_dropout",
                     "label_smoothing"]:
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise T2TError(f"hparam {name!r} must be in [0, 1), got {value}.")
        for name, channels in [("attention_key_channels", self.key_channels),
                               ("attention_value_channels", self.value_channels)]:
            if channels % self.num_heads:
                what = "hidden_size" if not getattr(self, name) else name
                raise T2TError(f"{what} of {channels} has to be divisible by num_heads of "
                               f"{self.num_heads}.")
        if self.pos not in ("timing", "emb"):
            raise T2TError(f"hparam 'pos' must be 'timing' or 'emb', got {self.pos!r}.")
        if self.learning_rate_schedule not in ("noam", "constant"):
            raise T2TError("hparam 'learning_rate_schedule' must be 'noam' or 'constant', "
                           f"got {self.learning_rate_schedule!r}.")
        if self.learning_rate_schedule == "noam" and self.learning_rate_warmup_steps <= 0:
            raise T2TError("the 'noam' schedule needs learning_rate_warmup_steps > 0.")
        placement = (self.layer_preprocess_sequence, self.layer_postprocess_sequence)
        if placement not in _NORM_PLACEMENTS:
            raise T2TError(
                f"Unsupported layer_preprocess_sequence/layer_postprocess_sequence {placement}: "
                "use ''/'dan' (post-norm, the paper) or 'n'/'da' (pre-norm).")
        if not 0.0 < self.optimizer_adam_beta1 < 1.0 or not 0.0 < self.optimizer_adam_beta2 < 1.0:
            raise T2TError("Adam betas must be in (0, 1).")


_TYPES = {"int": int, "float": float, "bool": bool, "str": str,
          int: int, float: float, bool: bool, str: str}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _field_types(obj) -> Dict[str, type]:
    return {f.name: _TYPES[f.type] for f in dataclasses.fields(obj)}


def _check_key(obj, key: str, what: str) -> None:
    types = _field_types(obj)
    if key not in types:
        raise T2TError(f"Unknown {what} {key!r}.{did_you_mean(key, types)} "
                       f"Known: {', '.join(sorted(types))}.")


def parse_overrides(obj, overrides: str, what: str):
    """Returns a copy of the frozen dataclass `obj` with "a=1,b=0.3" applied.

    Each value is converted by its field's type; `what` names the kind of
    field in error messages ("hparam", "decode hparam").

    Raises:
      T2TError: a malformed item, an unknown key or an unparsable value.
    """
    changes: Dict[str, Any] = {}
    for item in (item for item in (overrides or "").split(",") if item.strip()):
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key:
            raise T2TError(f"Malformed {what}s override {item!r}: expected key=value.")
        _check_key(obj, key, what)
        changes[key] = _convert(key, raw, _field_types(obj)[key], what)
    return dataclasses.replace(obj, **changes)


def _convert(key: str, raw: str, expected: type, what: str) -> Any:
    try:
        if expected is bool:
            lowered = raw.lower()
            if lowered in _TRUE or lowered in _FALSE:
                return lowered in _TRUE
            raise ValueError
        if expected is int:
            return int(raw)
        if expected is float:
            return float(raw)
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            raw = raw[1:-1]
        return raw
    except ValueError:
        raise T2TError(f"{what} {key!r} expects {expected.__name__}, got {raw!r}.") from None
