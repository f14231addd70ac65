"""The writing side of a model directory (`t2t_lite.model_dir` reads it).

A training run's metadata is written when it starts (`prepare`, after
`existing_run` opened what an earlier run left); a weights-only model
directory (`write_weights`: the metadata read from another model directory,
`copy_metadata`, and one checkpoint of the model's weights) is what the trainer
keeps as `best/` (`t2t_lite.best_dir`) and what `t2t-avg-checkpoints` writes
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
from typing import Optional

from t2t_lite import atomic, checkpoints, usr_dir
from t2t_lite.data.problem_definition import ProblemDefinition
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.model_dir import (DECODE_FILE, HPARAMS_FILE, IMPORT_FILE, MARIAN_FILE,
                                PROBLEM_FILE, TRAIN_MIX_FILE, ModelDir)


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


def existing_run(output_dir: str) -> Optional[ModelDir]:
    """The training run `output_dir` holds, opened; None while it holds none (its
    hparams.json, written last by `prepare`, is missing)."""
    if not os.path.exists(os.path.join(output_dir, HPARAMS_FILE)):
        return None
    return ModelDir.open(output_dir)


def prepare(model_dir: str, hparams: HParams, problem_name: str, vocab_path: str,
            vocab_size: int, existing: Optional[ModelDir], write: bool = True,
            train_mix: Optional[str] = None, definition: Optional[ProblemDefinition] = None,
            hparams_set: Optional[str] = None) -> None:
    """Checks `model_dir` for a training run and, if it is new, writes its metadata.

    A new directory gets the metadata and a copy of the vocabulary. An
    existing one (`existing`: `existing_run(model_dir)`) must have been written
    for the same hparams and problem, and its copy of the vocabulary must be
    `vocab_path`'s bytes: anything else is an error rather than a silent mix of
    two runs. The caller holds the directory's `TrainingLock`, so no other
    trainer writes between the check and the writing. `write=False` (a
    multi-worker run's non-chief workers, which take no lock) only checks what
    the chief wrote.

    `train_mix` (t2t-trainer --train_mix) is recorded in a new directory; an
    existing one must have recorded the same mix (a resumed run without the
    flag trains with the recorded one, `ModelDir.train_mix`). A problem defined
    by files has its `definition` recorded; a --usr_dir is recorded
    (`usr_dir.record`, with `hparams_set`) and checked on resuming.

    Raises:
      T2TError: unwritable directory, or metadata that conflicts with the
        requested run.
    """
    create(model_dir)
    problem = {"problem": problem_name, "vocab_file": os.path.basename(vocab_path),
               "vocab_size": vocab_size}
    if definition is not None:
        problem["definition"] = definition.to_json()
    if existing is not None:
        if existing.hparams != hparams:
            diff = {k: (v, hparams.to_dict()[k]) for k, v in existing.hparams.to_dict().items()
                    if hparams.to_dict()[k] != v}
            raise T2TError(
                f"{model_dir} was trained with other hparams (saved vs requested: {diff}); "
                "use a new --output_dir or the same --hparams_set/--hparams.")
        if existing.info != problem:
            raise T2TError(f"{model_dir} was trained on {existing.info}, not {problem}; "
                           "use a new --output_dir.")
        _check_same_vocab(existing, vocab_path)
        _check_train_mix(existing, train_mix)
        usr_dir.check_model(model_dir, existing.usr_dir_record)
        return
    if not write:
        return
    atomic.copy_file(vocab_path, os.path.join(model_dir, problem["vocab_file"]))
    usr_dir.record(model_dir, problem_name, hparams_set)
    atomic.write_text(os.path.join(model_dir, PROBLEM_FILE), json.dumps(problem, indent=2))
    if train_mix is not None:
        atomic.write_text(os.path.join(model_dir, TRAIN_MIX_FILE),
                          json.dumps({"train_mix": train_mix}, indent=2))
    # last: marks the directory complete
    atomic.write_text(os.path.join(model_dir, HPARAMS_FILE), hparams.to_json())


def same_vocab(source: ModelDir, vocab_file: str) -> bool:
    """Whether `vocab_file` holds the bytes of `source`'s copy of its vocabulary."""
    with open(source.vocab_path, "rb") as f, open(vocab_file, "rb") as g:
        return f.read() == g.read()


def _check_same_vocab(existing: ModelDir, data_vocab: str) -> None:
    """Refuses data whose vocabulary file is not the copy in `existing` (same name
    and size, other pieces: e.g. learned again by t2t-datagen from edited files)."""
    if not same_vocab(existing, data_vocab):
        raise T2TError(
            f"{existing.path} was trained with another vocabulary than {data_vocab} "
            "(t2t-datagen learns it again when its train files change); use a new "
            f"--output_dir, or encode the data with the model's: t2t-datagen "
            f"--vocab_from={existing.path} --data_dir=<a new directory>.")


def _check_train_mix(existing: ModelDir, train_mix: Optional[str]) -> None:
    """Refuses a --train_mix other than the one `existing`'s run recorded."""
    from t2t_lite.data.mixing import same_mix
    recorded = existing.train_mix
    if train_mix is not None and not same_mix(recorded, train_mix):
        was = f"--train_mix={recorded}" if recorded is not None else "no --train_mix"
        raise T2TError(f"{existing.path} was trained with {was}, not --train_mix={train_mix}; "
                       "resume with the same mix (or without the flag, which uses the "
                       "recorded one) or use a new --output_dir.")


def copy_metadata(source: ModelDir, dst_dir: str) -> None:
    """Writes the metadata `source` read and a copy of its vocabulary into `dst_dir`
    (e.g. for an averaged checkpoint), each file atomically (a reader of `dst_dir`
    never sees one half-copied). A training run's own records (train_mix.json,
    warm_start.json) are not copied; the decoding defaults are the model's."""
    os.makedirs(dst_dir, exist_ok=True)
    atomic.copy_file(source.vocab_path, os.path.join(dst_dir, source.info["vocab_file"]))
    for name in (IMPORT_FILE, MARIAN_FILE, DECODE_FILE, usr_dir.USR_DIR_FILE,
                 PROBLEM_FILE, HPARAMS_FILE):
        if source.raw(name) is not None:
            atomic.write_bytes(os.path.join(dst_dir, name), source.raw(name))


def write_weights(source: ModelDir, dst_dir: str, model, step: int) -> str:
    """Writes a weights-only model directory: `source`'s metadata and `model`'s
    weights as `dst_dir/ckpt-<step>` (the only checkpoint kept there).

    Returns:
      The written checkpoint prefix.
    """
    copy_metadata(source, dst_dir)
    return checkpoints.save_weights(model, dst_dir, step)
