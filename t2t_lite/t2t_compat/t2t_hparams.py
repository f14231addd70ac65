"""tensor2tensor's `hparams.json` and `flags.txt` -> t2t-lite `HParams`, or a one-line refusal.

t2t-trainer writes both files into its output directory: `flags.txt` holds the
command line (`--problem`, `--model`, `--hparams_set`, `--hparams`), and
`hparams.json` every resolved hyperparameter. The Transformer those values
describe is rebuilt with t2t-lite's model options: tensor2tensor's timing
signal, its target-space embedding, its layer-norm placements and epsilon,
shared or separate embedding and softmax matrices, any sizes. Settings of t2t
that change what the model computes beyond these are refused, each with its
name and value, rather than imported into a model that would compute
something else (see `REFUSED`).
"""

import dataclasses
import json
import os
from typing import Any, Callable, Dict, Optional

from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import TARGET_SPACES, HParams

HPARAMS_FILE = "hparams.json"
FLAGS_FILE = "flags.txt"

# hparam -> (what t2t-lite computes, i.e. the only accepted value(s)). A value
# outside them changes the model's computation in a way t2t-lite does not
# implement, so the import stops there. An hparam absent from hparams.json
# (older t2t releases) takes t2t's default, which is the accepted value. Settings
# that act in training only (symbol_dropout, factored_logits, the optimizer's) do not
# stop an import.
REFUSED: Dict[str, Callable[[Any], bool]] = {
    "ffn_layer": lambda v: v == "dense_relu_dense",
    "self_attention_type": lambda v: v == "dot_product",
    "pos": lambda v: v == "timing",
    "max_relative_position": lambda v: not v,
    "norm_type": lambda v: v == "layer",
    "multiply_embedding_mode": lambda v: v == "sqrt_depth",
    "vocab_divisor": lambda v: v in (None, 1),
    "attention_variables_3d": lambda v: not v,
    "proximity_bias": lambda v: not v,
    "unidirectional_encoder": lambda v: not v,
    "causal_decoder_self_attention": lambda v: v in (None, True),
    "hard_attention_k": lambda v: not v,
    "num_area_layers": lambda v: not v,
    "add_relative_to_values": lambda v: not v,
    "prepend_mode": lambda v: v in (None, "none"),
    "symbol_modality_skip_top": lambda v: not v,
}

# t2t's (layer_preprocess_sequence, layer_postprocess_sequence) -> t2t-lite's spelling.
NORM_SEQUENCES = {("n", "da"): ("n", "da"), ("none", "dan"): ("none", "dan"),
                  ("", "dan"): ("none", "dan")}


@dataclasses.dataclass(frozen=True)
class T2TRun:
    """What t2t-trainer recorded about a model directory."""
    problem: str
    model: str
    hparams_set: str
    values: Dict[str, Any]  # hparams.json


def read_flags(output_dir: str) -> Dict[str, str]:
    """`flags.txt` of a t2t output directory as {"--name": value} (`--noname` lines skipped)."""
    lines = _read_text(output_dir, FLAGS_FILE,
                       "not a t2t-trainer output directory (t2t-trainer writes flags.txt and "
                       "hparams.json there)").splitlines()
    return dict(line.strip().split("=", 1) for line in lines if "=" in line)


def _read_text(output_dir: str, name: str, why_needed: str) -> str:
    """The text of `output_dir/name`; T2TError "No <name> in <dir>: <why_needed>." when
    it is absent, "Cannot read <path>: ..." when it cannot be read as UTF-8."""
    path = os.path.join(output_dir, name)
    if not os.path.isfile(path):
        raise T2TError(f"No {name} in {output_dir}: {why_needed}.")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise T2TError(f"Cannot read {path}: {e}") from None


def read_run(output_dir: str) -> T2TRun:
    """The problem, model, hparams set and resolved hparams of a t2t output directory.

    Raises:
      T2TError: flags.txt or hparams.json missing or unreadable, or no --problem.
    """
    flags = read_flags(output_dir)
    text = _read_text(output_dir, HPARAMS_FILE, "t2t-trainer writes it at the start of "
                      "training; without it the model's shape is unknown")
    path = os.path.join(output_dir, HPARAMS_FILE)
    try:
        values = json.loads(text)
    except json.JSONDecodeError as e:
        raise T2TError(f"Corrupt {path}: {e}") from None
    if not isinstance(values, dict):
        raise T2TError(f"Corrupt {path}: expected an object of name -> value.")
    if not flags.get("--problem"):
        raise T2TError(f"{os.path.join(output_dir, FLAGS_FILE)} names no --problem.")
    return T2TRun(problem=flags["--problem"], model=flags.get("--model", "transformer"),
                  hparams_set=flags.get("--hparams_set", ""), values=values)


def check_supported(run: T2TRun) -> None:
    """Raises a one-line `T2TError` for the first t2t setting t2t-lite cannot compute."""
    if run.model != "transformer":
        raise T2TError(f"--model={run.model}: only t2t's 'transformer' model can be imported.")
    for name, accepted in REFUSED.items():
        if name in run.values and not accepted(run.values[name]):
            raise T2TError(f"t2t hparam {name}={run.values[name]!r} is not supported by "
                           "t2t-lite's Transformer; this model cannot be imported.")
    sequences = (run.values.get("layer_preprocess_sequence", "n"),
                 run.values.get("layer_postprocess_sequence", "da"))
    if sequences not in NORM_SEQUENCES:
        raise T2TError(f"t2t hparams layer_preprocess_sequence={sequences[0]!r}, "
                       f"layer_postprocess_sequence={sequences[1]!r} are not supported: "
                       "t2t-lite computes 'n'/'da' (pre-norm) and 'none'/'dan' (post-norm).")


def to_hparams(run: T2TRun, target_space_id: Optional[int] = None,
               log: Callable[[str], None] = lambda line: None) -> HParams:
    """The t2t-lite `HParams` computing what t2t's Transformer with `run.values` computes.

    Model fields come from t2t's values; training fields (dropouts, label
    smoothing, Adam, the learning-rate schedule, batch size, train_steps) are
    carried too, for fine-tuning with `t2t-trainer --warm_start_from`, where
    t2t-lite knows them; a schedule t2t-lite does not implement keeps
    t2t-lite's default (fine-tuning sets its own).

    Args:
      target_space_id: the row of t2t's target-space embedding to add (t2t takes
        it from the problem; 0, t2t's "generic", for most translate problems).
      log: receives a note when t2t's learning-rate settings are not carried.

    Raises:
      T2TError: an unsupported setting (`check_supported`), a value of the wrong
        type, or a target_space_id out of range.
    """
    check_supported(run)
    t = run.values

    def get(name, default):
        value = t.get(name)
        return default if value is None else value

    pre, post = NORM_SEQUENCES[(get("layer_preprocess_sequence", "n"),
                                get("layer_postprocess_sequence", "da"))]
    shared_softmax = bool(get("shared_embedding_and_softmax_weights", False))
    space = 0 if target_space_id is None else int(target_space_id)
    if not 0 <= space < TARGET_SPACES:
        raise T2TError(f"--target_space_id must be in [0, {TARGET_SPACES}), got {space}.")
    model = dict(
        hidden_size=get("hidden_size", 512), filter_size=get("filter_size", 2048),
        num_heads=get("num_heads", 8), num_hidden_layers=get("num_hidden_layers", 6),
        num_encoder_layers=get("num_encoder_layers", 0),
        num_decoder_layers=get("num_decoder_layers", 0),
        attention_key_channels=get("attention_key_channels", 0),
        attention_value_channels=get("attention_value_channels", 0),
        pos="timing", timing_signal="tensor2tensor",
        layer_preprocess_sequence=pre, layer_postprocess_sequence=post,
        layer_norm_epsilon=float(get("norm_epsilon", 1e-6)),
        # t2t's bottoms share one matrix when either flag is set (modalities.symbol_bottom).
        shared_embedding=shared_softmax or bool(get("shared_embedding", False)),
        shared_embedding_and_softmax_weights=shared_softmax,
        use_target_space_embedding=bool(get("use_target_space_embedding", True)),
        target_space_id=space,
        max_length=get("max_length", 256) or 256,
        initializer_gain=float(get("initializer_gain", 1.0)))
    training = dict(
        layer_prepostprocess_dropout=get("layer_prepostprocess_dropout", 0.1),
        attention_dropout=get("attention_dropout", 0.0), relu_dropout=get("relu_dropout", 0.0),
        label_smoothing=get("label_smoothing", 0.1),
        optimizer_adam_beta1=get("optimizer_adam_beta1", 0.9),
        optimizer_adam_beta2=get("optimizer_adam_beta2", 0.997),
        optimizer_adam_epsilon=get("optimizer_adam_epsilon", 1e-9),
        clip_grad_norm=get("clip_grad_norm", 0.0), batch_size=get("batch_size", 4096),
        tokens_per_step=0,  # t2t updates after every batch
        train_steps=get("train_steps", 100000) or 100000)
    schedule = dict(
        learning_rate_schedule=get("learning_rate_schedule", "legacy"),
        learning_rate_constant=get("learning_rate_constant", 1.0),
        learning_rate_warmup_steps=get("learning_rate_warmup_steps", 4000),
        learning_rate_decay_steps=get("learning_rate_decay_steps", 5000),
        learning_rate_decay_rate=get("learning_rate_decay_rate", 1.0),
        learning_rate_decay_staircase=bool(get("learning_rate_decay_staircase", False)),
        learning_rate_decay_scheme=get("learning_rate_decay_scheme", "noam"),
        learning_rate=get("learning_rate", 0.1))
    base = HParams()
    try:
        hparams = base.replace(**_numbers(model), **_numbers(training))
    except (T2TError, TypeError) as e:
        raise T2TError(f"t2t's hparams.json describes a model t2t-lite cannot build: {e}") from None
    try:
        return hparams.replace(**_numbers(schedule))
    except (T2TError, TypeError) as e:  # training only: fine-tuning sets its own
        log(f"note: t2t's learning-rate settings are not carried ({e}); the imported "
            "hparams keep t2t-lite's defaults: set them with --hparams when fine-tuning.")
        return hparams


def target_space_note(hparams: HParams, problem: str, given: bool) -> str:
    """The line saying which target space an import used and how to choose another."""
    if not hparams.use_target_space_embedding:
        return "target_space_id: not used (t2t's use_target_space_embedding=False)."
    if given:
        return f"target_space_id={hparams.target_space_id} (--target_space_id)."
    return (f"target_space_id={hparams.target_space_id} (the default, t2t's 'generic' space; "
            f"t2t took it from {problem}'s problem_hparams: if it used another, import again "
            "with --target_space_id=N).")


def _numbers(values: Dict[str, Any]) -> Dict[str, Any]:
    """JSON ints where HParams wants floats (`1` for 1.0) become floats."""
    types = HParams.field_types()
    return {k: float(v) if types[k] is float and type(v) is int else v for k, v in values.items()}
