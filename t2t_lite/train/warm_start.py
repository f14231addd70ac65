"""Fine-tuning: a new training run whose weights start from another model directory's.

    t2t-trainer --warm_start_from=M --problem=P --data_dir=D --output_dir=N

is tensor2tensor's `--warm_start_from`, or fairseq's `--restore-file` with
`--reset-optimizer --reset-lr-scheduler --reset-dataloader`: only M's weights
are taken (its latest checkpoint, or the average of its last K). N's optimizer
state, step counter, learning-rate schedule (warm-up included) and data
position start fresh, as a new run's. M's hparams are the base; overrides may
change what does not change the weights' shapes or meaning (dropout, label
smoothing, learning rate and schedule, batching, train_steps), and the data
must be encoded with M's vocabulary (`t2t-datagen --vocab_from=M`).

N records where it started (`warm_start.json`: M's real path, the checkpoints
read and M's hparams). Once N has a checkpoint of its own, running the same
command again resumes N from N alone: M is not read again (it may have been
moved or deleted), and M's hparams come from that record. M is named by its
real path, so a symbolic link to M is M.

A model imported from Hugging Face Marian decodes by default with its
generation settings (transformers' beam rule, `forbid_pad`, ...): N keeps them
as its decoding defaults over its problem's (`decode_defaults.json`,
`decode_defaults`), and so does a model fine-tuned from N.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

import tensorflow as tf

from t2t_lite import atomic, averaging, checkpoints
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.model_dir import DECODE_FILE, WARM_START_FILE, ModelDir
from t2t_lite.model_dir_writer import same_vocab

# What fixes the weights' shapes, or what they mean: (the field a user sets,
# the HParams attribute that resolves its 0 default). A fine-tuned model keeps M's.
ARCHITECTURE = (
    ("hidden_size", "hidden_size"), ("filter_size", "filter_size"), ("num_heads", "num_heads"),
    ("num_encoder_layers (or num_hidden_layers)", "encoder_layers"),
    ("num_decoder_layers (or num_hidden_layers)", "decoder_layers"),
    ("attention_key_channels", "key_channels"), ("attention_value_channels", "value_channels"),
    ("pos", "pos"), ("timing_signal", "timing_signal"),
    ("use_target_space_embedding", "use_target_space_embedding"),
    ("target_space_id", "target_space_id"), ("layer_norm_epsilon", "layer_norm_epsilon"),
    ("norm placement (layer_preprocess_sequence, layer_postprocess_sequence)", "norm_placement"),
    ("shared_embedding", "shared_embedding"),
    ("shared_embedding_and_softmax_weights", "shared_embedding_and_softmax_weights"),
    ("source_vocab_size", "source_vocab_size"), ("attention_bias", "attention_bias"),
    ("ffn_activation", "ffn_activation"), ("scale_embedding", "scale_embedding"),
    ("logits_bias", "logits_bias"), ("embed_padding", "embed_padding"))


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """Start a run's weights from `model_dir` (its latest checkpoint, or the
    average of its last `checkpoint_average`)."""
    model_dir: str
    checkpoint_average: int = 1

    def __post_init__(self):
        if self.checkpoint_average < 1:  # before anything is written, under this flag's name
            raise T2TError("--warm_start_checkpoint_average must be >= 1, got "
                           f"{self.checkpoint_average}.")


def check_hparams(source: ModelDir, hparams: HParams) -> None:
    """Refuses a run whose model would not take `source`'s weights.

    Raises:
      T2TError: naming the first hparams field that differs; `source` is not
        a model directory or has no checkpoint.
    """
    theirs = source.hparams
    checkpoints.list_checkpoints(source.path)
    fields = ARCHITECTURE + ((("max_length", "max_length"),) if hparams.pos == "emb" else ())
    for field, attribute in fields:
        if getattr(theirs, attribute) != getattr(hparams, attribute):
            raise T2TError(
                f"--warm_start_from={source.path}: its {field} is {getattr(theirs, attribute)!r}, "
                f"this run's is {getattr(hparams, attribute)!r}; the weights would not fit. "
                "Fine-tuning "
                "may change dropout, label smoothing, the learning rate and its schedule, "
                "batching and train_steps, not the model's shape.")


def check_vocab(source: ModelDir, vocab_file: str) -> None:
    """Refuses data encoded with another vocabulary than `source`'s.

    Raises:
      T2TError: naming the command that encodes the data with `source`'s vocabulary.
    """
    if not same_vocab(source, vocab_file):
        raise T2TError(
            f"--warm_start_from={source.path}: the data's vocabulary "
            f"({os.path.basename(vocab_file)}) is not the model's; encode the data with "
            f"the model's: t2t-datagen --vocab_from={source.path} "
            "--data_dir=<a new directory>.")


def decode_defaults(source: ModelDir) -> Optional[Dict[str, Any]]:
    """The decoding defaults (`SearchParams` fields) a model fine-tuned from `source`
    keeps: an imported Marian model's generation settings as t2t-import translated
    them, or the ones `source` kept itself; None for any other model (the fine-tuned
    model decodes with its problem's defaults)."""
    if source.marian_record is not None:
        return dict(source.marian_record["decode_hparams"])
    return dict(source.decode_defaults) if source.decode_defaults is not None else None


def same_model(a: str, b: str) -> bool:
    """Whether two paths name one model directory (symbolic links resolved)."""
    return os.path.realpath(a) == os.path.realpath(b)


def read_record(run: Optional[ModelDir]) -> Optional[dict]:
    """The warm_start.json of the training run `run` (`model_dir_writer.existing_run`:
    None before it wrote its metadata): {"model_dir", "checkpoints", "step",
    "hparams"} (records of earlier versions lack "hparams"), or None.

    Raises:
      T2TError: a damaged record.
    """
    record = run.warm_start_record if run is not None else None
    if record is None:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("model_dir"), str) \
            or not isinstance(record.get("hparams", {}), dict):
        raise T2TError(f"Corrupt {run.file_path(WARM_START_FILE)}.")
    return record


def base_hparams(run: Optional[ModelDir], source: str) -> HParams:
    """The hparams a run (`run`: `model_dir_writer.existing_run(output_dir)`) fine-tuned
    from `source` starts from (before its overrides): `source`'s, as recorded when
    the run started, so that resuming does not read `source` again; `source`'s
    own for a new run."""
    record = read_record(run)
    if record and "hparams" in record and same_model(record["model_dir"], source):
        return HParams.from_dict(record["hparams"])
    return ModelDir.open(source).hparams


def prepare(output_dir: str, run: Optional[ModelDir], warm_start) -> bool:
    """Whether the run in `output_dir` must load `warm_start`'s weights now
    (True: no checkpoint of its own yet), after checking that `output_dir`
    (whose run is `run`, opened; None before it wrote its metadata) is not a
    run started otherwise. Reads nothing of `warm_start`'s model.

    Raises:
      T2TError: `output_dir` was started from another model, or from none
        while `warm_start` is set, or from one while it is not (and holds no
        checkpoint to resume).
    """
    record = read_record(run)
    has_checkpoint = tf.train.latest_checkpoint(output_dir) is not None
    if warm_start is None:
        if record and not has_checkpoint:
            raise T2TError(f"{output_dir} starts from {record['model_dir']} and has no "
                           "checkpoint yet: pass --warm_start_from="
                           f"{record['model_dir']} again.")
        return False
    source = os.path.realpath(warm_start.model_dir)
    if record is None and has_checkpoint:
        raise T2TError(f"{output_dir} already holds a run that did not start from {source}; "
                       "use a new --output_dir to fine-tune.")
    if record is not None and not same_model(record["model_dir"], source):
        raise T2TError(f"{output_dir} started from {record['model_dir']}, not {source}; "
                       "use a new --output_dir.")
    return not has_checkpoint


def load(model, output_dir: str, warm_start: WarmStart, source_dir: ModelDir) -> List[str]:
    """Sets `model`'s weights from `warm_start` (whose directory `source_dir` is,
    opened) and records it in `output_dir` (with the source's hparams, which
    resuming reads instead of the source's, and its `decode_defaults`, if any).

    Returns:
      The checkpoint prefixes read (averaged if several).
    """
    source = os.path.realpath(warm_start.model_dir)
    paths = averaging.restore_latest(model, source, "", warm_start.checkpoint_average)
    atomic.write_text(os.path.join(output_dir, WARM_START_FILE), json.dumps(
        {"model_dir": source, "checkpoints": paths,
         "step": checkpoints.checkpoint_step(paths[-1]),
         "hparams": source_dir.hparams.to_dict()}, indent=2))
    defaults = decode_defaults(source_dir)
    if defaults is not None:
        atomic.write_text(os.path.join(output_dir, DECODE_FILE), json.dumps(
            {"decode_hparams": defaults, "from": source}, indent=2))
    return paths
