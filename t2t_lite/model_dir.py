"""The self-describing model directory: what training writes and everything else reads.

Everything the decoder and the exporter need is written here when training
starts, so they rebuild the model from this directory alone:

    hparams.json   the resolved HParams (set + overrides)
    problem.json   {"problem": name, "vocab_file": file name, "vocab_size": n}, and for
                   a problem defined by files its "definition" (`data.definitions`)
    usr_dir.json   the --usr_dir of the run, if given (`t2t_lite.usr_dir`)
    train_mix.json {"train_mix": spec}: the run's t2t-trainer --train_mix, if given
    <vocab file>   a copy of the problem's subword model
    checkpoint, ckpt-N.*   weights (tf.train.CheckpointManager)
    train/, eval/  TensorBoard event files
    best/          a weights-only model directory of the best dev BLEU so far

A weights-only model directory (`write_weights`: the metadata and one
checkpoint of the model's weights) is what the trainer keeps as `best/`
(`t2t_lite.best_dir`) and what `t2t-avg-checkpoints` writes
(`t2t_lite.average_dir`); every program reads it like any other.

Readers never see a file half-written: metadata files are written and copied
through a temporary file renamed into place, checkpoints are chosen from the
state file (`checkpoints.read_listed`), and an average is filled under a hidden
temporary name and renamed into place when complete (`average_dir.write_average`). While
`best/` or an average is replaced, or after a kill cut its replacement short,
readers read its previous copy (`atomic.readable_dir`) until the next writer
finishes the replacement (`best_dir.recover_best`, `atomic.write_dir`).
"""

import json
import os
from typing import Any, Dict, List, Optional, Tuple

import keras

import t2t_lite
from t2t_lite import atomic, averaging, checkpoints, usr_dir
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

HPARAMS_FILE = "hparams.json"
PROBLEM_FILE = "problem.json"
IMPORT_FILE = "t2t_import.json"  # in a directory written by t2t-import
TRAIN_MIX_FILE = "train_mix.json"  # the --train_mix of a training run given one


def create(model_dir: str) -> bool:
    """Creates `model_dir` (and its parents) if missing; True if this call created it.

    Raises:
      T2TError: it cannot be created, or is not writable.
    """
    created = not os.path.isdir(model_dir)
    try:
        os.makedirs(model_dir, exist_ok=True)
    except OSError as e:
        raise T2TError(f"Cannot create output directory {model_dir!r}: {e.strerror}.") from None
    if not os.access(model_dir, os.W_OK):
        raise T2TError(f"Output directory {model_dir!r} is not writable.")
    return created


def prepare(model_dir: str, hparams: HParams, problem_name: str, vocab_path: str,
            vocab_size: int, write: bool = True, train_mix: Optional[str] = None,
            definition: Optional[Dict] = None, hparams_set: Optional[str] = None) -> None:
    """Checks `model_dir` for a training run and, if it is new, writes its metadata.

    A new directory gets the metadata and a copy of the vocabulary. An
    existing one must have been written for the same hparams and problem,
    and its copy of the vocabulary must be `vocab_path`'s bytes: anything
    else is an error rather than a silent mix of two runs. The
    caller holds the directory's `TrainingLock`, so no other trainer writes
    between the check and the writing. `write=False` (a multi-worker run's
    non-chief workers, which take no lock) only checks what the chief wrote.

    `train_mix` (t2t-trainer --train_mix) is recorded in a new directory; an
    existing one must have recorded the same mix (`read_train_mix`: a resumed
    run without the flag trains with the recorded one). A problem defined by
    files has its `definition` recorded; a --usr_dir is recorded
    (`usr_dir.record`, with `hparams_set`) and checked on resuming.

    Raises:
      T2TError: unwritable directory, or metadata that conflicts with the
        requested run.
    """
    create(model_dir)
    problem = {"problem": problem_name, "vocab_file": os.path.basename(vocab_path),
               "vocab_size": vocab_size}
    if definition is not None:
        problem["definition"] = definition
    hparams_path = os.path.join(model_dir, HPARAMS_FILE)
    if os.path.exists(hparams_path):
        existing = read_hparams(model_dir)
        if existing != hparams:
            diff = {k: (v, hparams.to_dict()[k]) for k, v in existing.to_dict().items()
                    if hparams.to_dict()[k] != v}
            raise T2TError(
                f"{model_dir} was trained with other hparams (saved vs requested: {diff}); "
                "use a new --output_dir or the same --hparams_set/--hparams.")
        saved_problem = read_problem(model_dir)
        if saved_problem != problem:
            raise T2TError(f"{model_dir} was trained on {saved_problem}, not {problem}; "
                           "use a new --output_dir.")
        _check_same_vocab(model_dir, vocab_path)
        _check_train_mix(model_dir, train_mix)
        usr_dir.check_model(model_dir)
        return
    if not write:
        return
    atomic.copy_file(vocab_path, os.path.join(model_dir, problem["vocab_file"]))
    usr_dir.record(model_dir, problem_name, hparams_set)
    atomic.write_text(os.path.join(model_dir, PROBLEM_FILE), json.dumps(problem, indent=2))
    if train_mix is not None:
        atomic.write_text(os.path.join(model_dir, TRAIN_MIX_FILE),
                          json.dumps({"train_mix": train_mix}, indent=2))
    atomic.write_text(hparams_path, hparams.to_json())  # last: marks the directory complete


def same_vocab(model_dir: str, vocab_file: str) -> bool:
    """Whether `vocab_file` holds the bytes of `model_dir`'s copy of its vocabulary."""
    with open(vocab_path(model_dir), "rb") as f, open(vocab_file, "rb") as g:
        return f.read() == g.read()


def _check_same_vocab(model_dir: str, data_vocab: str) -> None:
    """Refuses data whose vocabulary file is not the copy in `model_dir` (same name
    and size, other pieces: e.g. learned again by t2t-datagen from edited files)."""
    if not same_vocab(model_dir, data_vocab):
        raise T2TError(
            f"{model_dir} was trained with another vocabulary than {data_vocab} (t2t-datagen "
            "learns it again when its train files change); use a new --output_dir, or "
            f"encode the data with the model's: t2t-datagen --vocab_from={model_dir} "
            "--data_dir=<a new directory>.")


def read_train_mix(model_dir: str) -> Optional[str]:
    """The --train_mix the training run in `model_dir` recorded; None when it
    was given none, or `model_dir` holds no run yet."""
    path = os.path.join(model_dir, TRAIN_MIX_FILE)
    if not (os.path.exists(os.path.join(model_dir, HPARAMS_FILE)) and os.path.exists(path)):
        return None
    return _read_json(model_dir, TRAIN_MIX_FILE)["train_mix"]


def _check_train_mix(model_dir: str, train_mix: Optional[str]) -> None:
    """Refuses a --train_mix other than the one `model_dir`'s run recorded."""
    from t2t_lite.data.mixing import same_mix
    recorded = read_train_mix(model_dir)
    if train_mix is not None and not same_mix(recorded, train_mix):
        was = f"--train_mix={recorded}" if recorded is not None else "no --train_mix"
        raise T2TError(f"{model_dir} was trained with {was}, not --train_mix={train_mix}; "
                       "resume with the same mix (or without the flag, which uses the "
                       "recorded one) or use a new --output_dir.")


def file_path(model_dir: str, name: str) -> str:
    """The path of `name` in `model_dir`, or in its complete previous copy while
    `model_dir` is being replaced (`atomic.readable_dir`: a `best/` or an
    average whose replacement a kill cut short). Every reader of a model
    directory's files goes through it."""
    return os.path.join(atomic.readable_dir(model_dir), name)


def require_dir(model_dir: str) -> None:
    """Raises T2TError when `model_dir` does not exist (nor its previous copy while
    it is being replaced: `atomic.readable_dir`)."""
    if not os.path.isdir(atomic.readable_dir(model_dir)):
        raise T2TError(f"Model directory {model_dir!r} does not exist.")


def _read_json(model_dir: str, name: str) -> Any:
    path = file_path(model_dir, name)
    if not os.path.exists(path):
        raise T2TError(f"{model_dir} is not a t2t-lite model directory (no {name}); "
                       "train with t2t-trainer --output_dir first.")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:  # also an integer over Python's 4,300 digits
        raise T2TError(f"Corrupt {path}: {e}") from None


def read_hparams(model_dir: str) -> HParams:
    """The resolved hparams the model in `model_dir` was trained with."""
    return HParams.from_dict(_read_json(model_dir, HPARAMS_FILE))


_PROBLEM_KEYS = {"problem", "vocab_file", "vocab_size"}


def read_problem(model_dir: str) -> Dict[str, Any]:
    """{"problem", "vocab_file", "vocab_size"} of the model in `model_dir`, and
    "definition" for a problem defined by files."""
    problem = _read_json(model_dir, PROBLEM_FILE)
    if not isinstance(problem, dict) or not _PROBLEM_KEYS <= set(problem) \
            or not set(problem) <= _PROBLEM_KEYS | {"definition"}:
        raise T2TError(f"Corrupt {os.path.join(model_dir, PROBLEM_FILE)}.")
    return problem


def vocab_path(model_dir: str) -> str:
    """The copy of the subword model inside `model_dir`."""
    path = file_path(model_dir, read_problem(model_dir)["vocab_file"])
    if not os.path.exists(path):
        raise T2TError(f"Vocabulary {path} is missing from the model directory.")
    return path


def copy_metadata(src_dir: str, dst_dir: str) -> None:
    """Copies hparams, problem and vocabulary (e.g. for an averaged checkpoint),
    each file atomically (a reader of `dst_dir` never sees one half-copied)."""
    os.makedirs(dst_dir, exist_ok=True)
    problem = read_problem(src_dir)
    names = [problem["vocab_file"], PROBLEM_FILE, HPARAMS_FILE]
    if is_imported(src_dir):
        names.append(IMPORT_FILE)
    if os.path.exists(file_path(src_dir, usr_dir.USR_DIR_FILE)):
        names.append(usr_dir.USR_DIR_FILE)
    for name in names:
        atomic.copy_file(file_path(src_dir, name), os.path.join(dst_dir, name))


def is_imported(model_dir: str) -> bool:
    """Whether `model_dir` holds a model imported from tensor2tensor (`t2t-import`)."""
    return os.path.exists(file_path(model_dir, IMPORT_FILE))


def problem_of(model_dir: str):
    """The registered `Problem` the model in `model_dir` was trained on; for a model
    imported from tensor2tensor, an `ImportedProblem` of its t2t problem's name
    (t2t-decoder's decoding defaults; t2t-lite's problem of the same name, if any,
    is another data preparation). A problem defined by files is rebuilt from
    its recorded definition; one of a --usr_dir needs that directory imported
    (`usr_dir.check_model`).

    Raises:
      T2TError: an unknown problem, or one of a user directory not given.
    """
    info = read_problem(model_dir)
    name = info["problem"]
    if is_imported(model_dir):
        from t2t_lite.data.imported_problem import ImportedProblem
        return ImportedProblem(name)
    usr_dir.check_model(atomic.readable_dir(model_dir))
    if "definition" in info:
        from t2t_lite.data import definitions
        definitions.register(definitions.check_definition(
            info["definition"], os.path.join(model_dir, PROBLEM_FILE)))
    return t2t_lite.registry.problem(name)


def load_vocab(model_dir: str):
    """The vocabulary of `model_dir`: a `SubwordVocab` (SentencePiece), or a
    `T2TSubwordVocab` for a tensor2tensor SubwordTextEncoder file (`*.subwords`)."""
    return load_vocab_file(vocab_path(model_dir))


def load_vocab_file(path: str):
    """`load_vocab` for a vocabulary file path."""
    if path.endswith(".subwords"):
        from t2t_lite.data.t2t_subwords import T2TSubwordVocab
        return T2TSubwordVocab.from_file(path)
    if path.endswith((".bytes", ".tokens")):  # t2t's ByteTextEncoder / TokenTextEncoder
        from t2t_lite.data import t2t_text_encoders
        return t2t_text_encoders.load_file(path)
    return SubwordVocab.from_file(path)


PRECISIONS = ("float32", "bfloat16")


def build_model(model_dir: str, precision: str = "float32") -> keras.Model:
    """The model of `model_dir`, built with fresh weights.

    Args:
      precision: "float32", or "bfloat16" to compute in bfloat16 (Keras'
        mixed_bfloat16 policy: float32 weights, bfloat16 matmuls and cache,
        float32 softmax and logits), as in training with --precision.
    """
    if precision not in PRECISIONS:
        raise T2TError(f"precision must be one of {PRECISIONS}, got {precision!r}.")
    hparams = read_hparams(model_dir)
    vocab_size = read_problem(model_dir)["vocab_size"]
    previous_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16" if precision == "bfloat16" else "float32")
    try:
        return t2t_lite.build_model(hparams, vocab_size)
    finally:
        keras.config.set_dtype_policy(previous_policy)


def load_model(model_dir: str, checkpoint_path: Optional[str] = None,
               checkpoint_average: int = 1, precision: str = "float32",
               ) -> Tuple[keras.Model, SubwordVocab, HParams, dict]:
    """Rebuilds the model of `model_dir` and restores (or averages) its weights.

    Args:
      model_dir: a directory written by t2t-trainer or t2t-avg-checkpoints; a
        trainer may be writing it (only complete checkpoints are read).
      checkpoint_path: a specific `ckpt-N` prefix; default: the latest.
      checkpoint_average: average the last N checkpoints (up to the chosen one).
      precision: "float32" or "bfloat16" (see `build_model`).
    Returns:
      (model, vocab, hparams, problem info from problem.json).
    """
    return load_model_and_checkpoints(model_dir, checkpoint_path, checkpoint_average,
                                      precision)[:4]


def load_model_and_checkpoints(model_dir: str, checkpoint_path: Optional[str] = None,
                               checkpoint_average: int = 1, precision: str = "float32",
                               ) -> Tuple[keras.Model, SubwordVocab, HParams, dict, List[str]]:
    """`load_model`, and the checkpoint prefixes it read (last)."""
    hparams = read_hparams(model_dir)
    problem = read_problem(model_dir)
    vocab = load_vocab(model_dir)
    model = build_model(model_dir, precision)
    used = averaging.restore_latest(model, model_dir, checkpoint_path or "", checkpoint_average)
    return model, vocab, hparams, problem, used


def write_weights(model_dir: str, dst_dir: str, model, step: int) -> str:
    """Writes a weights-only model directory: `model_dir`'s metadata and
    `model`'s weights as `dst_dir/ckpt-<step>` (the only checkpoint kept there).

    Returns:
      The written checkpoint prefix.
    """
    copy_metadata(model_dir, dst_dir)
    return checkpoints.save_weights(model, dst_dir, step)


def load_ensemble(model_dirs: List[str], checkpoint_average: int = 1,
                  precision: str = "float32") -> Tuple[List[keras.Model], SubwordVocab, dict]:
    """Loads several model directories to decode together (`t2t_lite.decode.search`).

    Each model is restored from its latest checkpoint (or the average of its
    last `checkpoint_average`); they may differ in hparams but must share the
    problem and the vocabulary file, byte for byte.

    Returns:
      (models, the shared vocabulary, problem info of the first directory).

    Raises:
      T2TError: no directory, or directories of different problems or vocabularies.
    """
    if not model_dirs:
        raise T2TError("No model directory given.")
    first_problem = read_problem(model_dirs[0])
    with open(vocab_path(model_dirs[0]), "rb") as f:
        first_vocab = f.read()
    for other in model_dirs[1:]:
        problem = read_problem(other)
        if problem["problem"] != first_problem["problem"]:
            raise T2TError(f"{other} was trained on {problem['problem']}, {model_dirs[0]} on "
                           f"{first_problem['problem']}: an ensemble needs one problem.")
        with open(vocab_path(other), "rb") as f:
            if f.read() != first_vocab:
                raise T2TError(f"{other} and {model_dirs[0]} have different vocabularies: "
                               "an ensemble needs models trained on the same t2t-datagen output.")
    models, vocab = [], None
    for path in model_dirs:
        model, vocab, _, _ = load_model(path, None, checkpoint_average, precision)
        models.append(model)
    return models, vocab, first_problem


