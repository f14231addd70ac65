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
import decimal
import json
from typing import Any, Dict, Tuple

from t2t_lite.errors import T2TError, did_you_mean

# t2t's two layer-norm placements, written in its sequence codes:
# "n" = layer norm, "d" = dropout, "a" = add the residual; t2t spells the empty
# sequence "none".
_NORM_PLACEMENTS = {
    ("", "dan"): "post",      # the paper: LayerNorm(x + Dropout(Sublayer(x)))
    ("none", "dan"): "post",  # the same, as t2t writes it
    ("n", "da"): "pre",       # t2t's later default: x + Dropout(Sublayer(LayerNorm(x)))
}

# The factors of tensor2tensor's `learning_rate_schedule` ("constant*linear_warmup*..."),
# each at t2t's global step s (the number of updates already applied; see
# `t2t_lite.train.schedule`), w = learning_rate_warmup_steps,
# D = learning_rate_decay_steps, T = train_steps, d = hidden_size.
LEARNING_RATE_FACTORS = {
    "constant": "learning_rate_constant",
    "linear_warmup": "min(1, s / w)",
    "linear_decay": "min(1, max(0, (T - s) / D))",
    "cosdecay": "1 while s <= w, then (1 + cos(pi s / D)) / 2",
    "single_cycle_cos_decay": "(1 + cos(pi (max(s, w) - w) / (T - w))) / 2",
    "multi_cycle_cos_decay": "(1 + cos(pi (max(s, w) - w) / D)) / 2",
    "rsqrt_decay": "max(s, w)^-0.5",
    "rsqrt_normalized_decay": "w^0.5 max(s, w)^-0.5",
    "exp_decay": "learning_rate_decay_rate ^ max(0, (s - w) / D) (floored if staircase)",
    "rsqrt_hidden_size": "d^-0.5",
    "legacy": "learning_rate * 0.002 * learning_rate_decay_scheme's formula",
}
# The schemes of the "legacy" factor (0.002 is t2t's correction for Adam, the only
# optimizer here).
LEGACY_DECAY_SCHEMES = {
    "noam": "5000 d^-0.5 min((s + 1) w^-1.5, (s + 1)^-0.5)",
    "none": "0.01^((w - s) / w) while s < w, then 1",
}


TIMING_SIGNALS = ("paper", "tensor2tensor", "marian")
FFN_ACTIVATIONS = ("relu", "swish", "gelu")
TARGET_SPACES = 32  # rows of tensor2tensor's target_space_embedding


def learning_rate_factors(schedule: str) -> Tuple[str, ...]:
    """The factor names of a t2t `learning_rate_schedule` string, in order.

    Like tensor2tensor, names are separated by "*" and blanks are ignored;
    an empty string is the constant 1.

    Raises:
      T2TError: a name that is not one of `LEARNING_RATE_FACTORS`.
    """
    names = tuple(name.strip() for name in schedule.split("*") if name.strip())
    for name in names:
        if name not in LEARNING_RATE_FACTORS:
            raise T2TError(
                f"Unknown learning-rate factor {name!r} in learning_rate_schedule "
                f"{schedule!r}.{did_you_mean(name, LEARNING_RATE_FACTORS)} Known factors: "
                f"{', '.join(LEARNING_RATE_FACTORS)} (multiplied with '*', e.g. "
                "'constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size').")
    return names


@dataclasses.dataclass(frozen=True)
class HParams:
    """Hyperparameters of a Transformer and its training and decoding.

    Defaults are the paper's base model ("Attention Is All You Need", sections
    3 and 5), which is also tensor2tensor's `transformer_base_v1`; registered
    sets change them with `replace`.
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
    # The layout of the sinusoids: "paper" (section 3.5: sin and cos interleaved, rates
    # 10000^(-2i/d)) or "tensor2tensor" (t2t's get_timing_signal_1d: all sines, then all
    # cosines, rates spaced by log(10^4) / (d/2 - 1)); imported t2t models use the latter;
    # or "marian" (Hugging Face's Marian: sin(p / 10000^(2i/d)) in the first half, cos in
    # the second, computed in float64).
    timing_signal: str = "paper"
    # tensor2tensor's target-space embedding (32 rows, one added to every encoder
    # input position: row `target_space_id`); t2t-lite's own models have none.
    use_target_space_embedding: bool = False
    target_space_id: int = 0
    layer_preprocess_sequence: str = ""     # "" (post-norm, the paper) or "n" (pre-norm)
    layer_postprocess_sequence: str = "dan"  # "dan" (post-norm) or "da" (pre-norm)
    layer_norm_epsilon: float = 1e-6
    shared_embedding: bool = True      # one embedding for source and target (shared vocabulary)
    shared_embedding_and_softmax_weights: bool = True  # tie target embedding and softmax
    # Rows of the source embedding table when it is not shared (shared_embedding=False);
    # 0: the vocabulary's size. Imported Marian models with separate vocabularies.
    source_vocab_size: int = 0
    # --- Choices of imported models (Hugging Face Marian); the defaults are the paper's ---
    attention_bias: bool = False       # biases on the q, k, v and output projections
    ffn_activation: str = "relu"       # "relu", "swish" (SiLU) or "gelu" (exact, with erf)
    scale_embedding: bool = True       # embeddings times sqrt(d_model)
    logits_bias: bool = False          # a trained bias added to the logits (final_logits_bias)
    # False: id 0 (padding, and the decoder's start symbol) embeds to zeros. True: id 0
    # embeds to its own row like any id (Marian starts decoding from the <pad> row).
    embed_padding: bool = False
    initializer_gain: float = 1.0      # scale of the Glorot-uniform initialiser of the layers

    # --- Regularisation (section 5.4) ---
    layer_prepostprocess_dropout: float = 0.1  # P_drop: sub-layer outputs, embedding sums
    attention_dropout: float = 0.0     # on attention weights (not in the paper)
    relu_dropout: float = 0.0          # after the feed-forward ReLU (not in the paper)
    label_smoothing: float = 0.1       # epsilon_ls

    # --- Optimisation (section 5.3), with tensor2tensor's names and meanings ---
    optimizer_adam_beta1: float = 0.9
    optimizer_adam_beta2: float = 0.98
    optimizer_adam_epsilon: float = 1e-9
    # The learning rate is the product of the "*"-separated factors of
    # learning_rate_schedule (LEARNING_RATE_FACTORS) at t2t's global step.
    learning_rate_schedule: str = "legacy"
    learning_rate_constant: float = 1.0      # the "constant" factor
    learning_rate_warmup_steps: int = 4000   # w
    learning_rate_decay_steps: int = 5000    # D: linear_decay, cosdecay, *_cos_decay, exp_decay
    learning_rate_decay_rate: float = 1.0    # exp_decay's base
    learning_rate_decay_staircase: bool = False  # exp_decay in whole periods of D
    learning_rate_decay_scheme: str = "noam"  # the "legacy" factor: "noam" or "none"
    learning_rate: float = 0.1               # the "legacy" factor's multiplier: with "noam",
                                             # 0.1 gives the paper's d^-0.5 min(...) exactly
    clip_grad_norm: float = 0.0        # limit of the global norm of a step's gradient; 0: none
    train_steps: int = 100000          # also T in linear_decay and single_cycle_cos_decay

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
        values = _upgrade_learning_rate(values)
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
    def learning_rate_factors(self) -> Tuple[str, ...]:
        """The factor names of `learning_rate_schedule`, in order."""
        return learning_rate_factors(self.learning_rate_schedule)

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
                        "learning_rate_decay_steps", "learning_rate_decay_rate",
                        "tokens_per_step", "clip_grad_norm", "learning_rate",
                        "learning_rate_constant", "layer_norm_epsilon", "source_vocab_size"]
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
        if self.timing_signal not in TIMING_SIGNALS:
            raise T2TError(f"hparam 'timing_signal' must be one of {', '.join(TIMING_SIGNALS)}, "
                           f"got {self.timing_signal!r}.")
        if self.ffn_activation not in FFN_ACTIVATIONS:
            raise T2TError(f"hparam 'ffn_activation' must be one of {', '.join(FFN_ACTIVATIONS)}, "
                           f"got {self.ffn_activation!r}.")
        if self.source_vocab_size and self.shared_embedding:
            raise T2TError(f"hparam 'source_vocab_size' ({self.source_vocab_size}) needs "
                           "shared_embedding=false: a shared table has one size.")
        if not 0 <= self.target_space_id < TARGET_SPACES:
            raise T2TError(f"hparam 'target_space_id' must be in [0, {TARGET_SPACES}), "
                           f"got {self.target_space_id}.")
        self._validate_learning_rate()
        placement = (self.layer_preprocess_sequence, self.layer_postprocess_sequence)
        if placement not in _NORM_PLACEMENTS:
            raise T2TError(
                f"Unsupported layer_preprocess_sequence/layer_postprocess_sequence {placement}: "
                "use ''/'dan' or 'none'/'dan' (post-norm, the paper) or 'n'/'da' (pre-norm).")
        if not 0.0 < self.optimizer_adam_beta1 < 1.0 or not 0.0 < self.optimizer_adam_beta2 < 1.0:
            raise T2TError("Adam betas must be in (0, 1).")

    def _validate_learning_rate(self) -> None:
        """The schedule's names exist and no factor divides by zero or runs backwards."""
        factors = set(learning_rate_factors(self.learning_rate_schedule))
        if "legacy" in factors and self.learning_rate_decay_scheme not in LEGACY_DECAY_SCHEMES:
            raise T2TError(
                f"learning_rate_decay_scheme {self.learning_rate_decay_scheme!r} is not "
                f"supported by the 'legacy' factor; use one of {', '.join(LEGACY_DECAY_SCHEMES)} "
                "or a factor schedule such as 'constant*linear_warmup*rsqrt_decay'.")
        warmup = factors & {"linear_warmup", "rsqrt_decay", "rsqrt_normalized_decay"}
        if "legacy" in factors and self.learning_rate_decay_scheme == "noam":
            warmup.add("legacy")
        if warmup and self.learning_rate_warmup_steps <= 0:
            raise T2TError(f"learning_rate_schedule factor(s) {', '.join(sorted(warmup))} need "
                           "learning_rate_warmup_steps > 0.")
        decay = factors & {"linear_decay", "cosdecay", "multi_cycle_cos_decay", "exp_decay"}
        if decay and self.learning_rate_decay_steps <= 0:
            raise T2TError(f"learning_rate_schedule factor(s) {', '.join(sorted(decay))} need "
                           "learning_rate_decay_steps > 0.")
        if ("single_cycle_cos_decay" in factors
                and self.train_steps <= self.learning_rate_warmup_steps):
            raise T2TError("single_cycle_cos_decay needs train_steps > learning_rate_warmup_steps.")


def _upgrade_learning_rate(values: Dict[str, Any]) -> Dict[str, Any]:
    """Saved hparams of t2t-lite before tensor2tensor's schedule names, in today's fields.

    Those had `learning_rate_schedule` "noam" (`learning_rate` multiplied
    d^-0.5 min(...), i.e. t2t's legacy noam with a tenth of it) or "constant"
    (`learning_rate` was the rate) and no `learning_rate_constant`. The
    result has the same learning rate at every step, so older model
    directories still load and resume.
    """
    old = values.get("learning_rate_schedule")
    if "learning_rate_constant" in values or old not in ("noam", "constant"):
        return values
    values = dict(values)
    rate = values.pop("learning_rate", 1.0)
    if old == "noam":
        # Decimal keeps what was typed: 0.7 -> 0.07, not 0.06999999999999999.
        values.update(learning_rate_schedule="legacy", learning_rate_decay_scheme="noam",
                      learning_rate=float(decimal.Decimal(repr(float(rate))) / 10))
    else:
        values.update(learning_rate_constant=float(rate))
    return values


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
