"""Writes a t2t-lite model directory from a tensor2tensor output and data directory.

    import_model("t2t_train", "t2t_data", "imported")

reads t2t-trainer's `flags.txt` and `hparams.json` (the problem, the model's
shape), the newest checkpoints listed in T's `checkpoint` file (or the one
named) and the problem's SubwordTextEncoder vocabulary
`vocab.<problem>.<size>.subwords` from the data directory, and writes an
ordinary model directory (hparams.json, problem.json, the vocabulary, one
`ckpt-<t2t step>` per imported checkpoint) plus `t2t_import.json` recording
where it came from. The directory is filled under a temporary name and
renamed into place when complete: an import that fails writes nothing. It says
in one line each what it chose for the user: the target space, and that
decoding inputs are not truncated (t2t-decoder's behaviour, `ImportedProblem`).
"""

import glob
import json
import os
import re
from typing import List, Optional

import tensorflow as tf

import t2t_lite
from t2t_lite import atomic, model_dir as model_dir_lib
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import t2t_hparams
from t2t_lite.t2t_import import t2t_names

IMPORT_FILE = model_dir_lib.IMPORT_FILE
_MODALITY = re.compile(r"^transformer/symbol_modality_(\d+)_(\d+)/")


def find_vocab(data_dir: str, problem: str) -> str:
    """The SubwordTextEncoder file of `problem` in t2t's data directory.

    Raises:
      T2TError: none, several, or separate source/target vocabularies.
    """
    if not os.path.isdir(data_dir):
        raise T2TError(f"--t2t_data_dir {data_dir} is not a directory.")
    found = sorted(glob.glob(os.path.join(glob.escape(data_dir), f"vocab.{problem}.*.subwords")))
    separate = sorted(glob.glob(os.path.join(glob.escape(data_dir),
                                             f"vocab.{problem}.*.subwords.*")))
    if separate:
        raise T2TError(f"{data_dir} holds separate source and target vocabularies "
                       f"({', '.join(os.path.basename(p) for p in separate)}); t2t-lite models "
                       "share one vocabulary.")
    if not found:
        raise T2TError(f"No SubwordTextEncoder vocabulary vocab.{problem}.<size>.subwords in "
                       f"{data_dir} (t2t-datagen writes it there); only subword vocabularies "
                       "can be imported.")
    if len(found) > 1:
        raise T2TError(f"Several vocabularies of {problem} in {data_dir}: "
                       f"{', '.join(os.path.basename(p) for p in found)}; keep the one the model "
                       "was trained with.")
    return found[0]


def t2t_checkpoints(output_dir: str, checkpoint_path: str = "", last: int = 1) -> List[str]:
    """The t2t checkpoint prefixes to import, oldest first: `checkpoint_path`, or the
    newest `last` listed in `output_dir/checkpoint` whose index exists."""
    if checkpoint_path:
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            raise T2TError(f"--checkpoint_path {checkpoint_path}: no such checkpoint "
                           f"(no {checkpoint_path}.index).")
        return [checkpoint_path]
    state = tf.train.get_checkpoint_state(output_dir)
    listed = list(state.all_model_checkpoint_paths) if state else []
    complete = [p for p in listed if tf.io.gfile.exists(p + ".index")]
    if not complete:
        raise T2TError(f"No checkpoint listed in {output_dir}/checkpoint.")
    return complete[-last:]


def checkpoint_step(path: str) -> int:
    """t2t's global_step of a checkpoint (its `model.ckpt-N` suffix if it has none)."""
    reader = tf.train.load_checkpoint(path)
    if reader.has_tensor("global_step"):
        return int(reader.get_tensor("global_step"))
    match = re.search(r"-(\d+)$", path)
    if not match:
        raise T2TError(f"{path} has no global_step and no -N step suffix.")
    return int(match.group(1))


def modality_vocab_size(shapes) -> int:
    """The vocabulary size in the checkpoint's `symbol_modality_<V>_<D>` scope."""
    sizes = {int(m.group(1)) for m in map(_MODALITY.match, shapes) if m}
    if len(sizes) != 1:
        raise T2TError("The checkpoint has no single symbol_modality_<vocab>_<hidden> scope "
                       f"(found vocabulary sizes {sorted(sizes)}): not a t2t text model with "
                       "one shared vocabulary.")
    return sizes.pop()


def import_model(t2t_output_dir: str, t2t_data_dir: str, output_dir: str,
                 checkpoint_path: str = "", last: int = 1,
                 target_space_id: Optional[int] = None, log=print) -> List[str]:
    """Imports a t2t Transformer; returns the written checkpoint prefixes.

    Args:
      t2t_output_dir: t2t-trainer's --output_dir (flags.txt, hparams.json, checkpoints).
      t2t_data_dir: t2t-datagen's --data_dir (the vocabulary).
      output_dir: the t2t-lite model directory to write; must not exist yet (or be empty).
      checkpoint_path: one t2t checkpoint prefix instead of the newest.
      last: import the newest `last` checkpoints (for `t2t-avg-checkpoints`).
      target_space_id: the problem's target space (default 0).

    Raises:
      T2TError: anything that stops the import (one line); nothing is written then.
    """
    from t2t_lite.data.t2t_subwords import T2TSubwordVocab  # TensorFlow-heavy
    if last < 1:
        raise T2TError(f"--num_last_checkpoints must be >= 1, got {last}.")
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
        raise T2TError(f"--output_dir {output_dir} exists and is not empty; import into a new "
                       "directory.")
    run = t2t_hparams.read_run(t2t_output_dir)
    hparams = t2t_hparams.to_hparams(run, target_space_id, log)
    log(t2t_hparams.target_space_note(hparams, run.problem, target_space_id is not None))
    log(f"Decoding inputs are not truncated, as by t2t-decoder (t2t's max_length="
        f"{hparams.max_length} only filtered training examples); "
        "--decode_hparams=max_input_length=N truncates them to N subwords.")
    vocab_file = find_vocab(t2t_data_dir, run.problem)
    vocab = T2TSubwordVocab.from_file(vocab_file)
    paths = t2t_checkpoints(t2t_output_dir, checkpoint_path, last)
    first = tf.train.load_checkpoint(paths[0])
    original, shapes = t2t_names.checkpoint_variables(first)
    vocab_size = modality_vocab_size(shapes)
    if vocab_size != vocab.vocab_size:
        raise T2TError(f"The checkpoint's embeddings have {vocab_size} rows, the vocabulary "
                       f"{os.path.basename(vocab_file)} {vocab.vocab_size} subwords: not the "
                       "vocabulary this model was trained with.")
    model = t2t_lite.build_model(hparams, vocab_size)
    targets = t2t_names.weight_map(model, run.values, vocab_size)
    style = t2t_names.naming_style(original.values())

    def fill(tmp: str) -> List[str]:
        atomic.copy_file(vocab_file, os.path.join(tmp, os.path.basename(vocab_file)))
        atomic.write_text(os.path.join(tmp, model_dir_lib.PROBLEM_FILE), json.dumps(
            {"problem": run.problem, "vocab_file": os.path.basename(vocab_file),
             "vocab_size": vocab_size}, indent=2))
        atomic.write_text(os.path.join(tmp, model_dir_lib.HPARAMS_FILE), hparams.to_json())
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), tmp,
                                             max_to_keep=len(paths))
        written, steps = [], []
        for path in paths:
            reader = tf.train.load_checkpoint(path)
            names, available = t2t_names.checkpoint_variables(reader)
            t2t_names.assign(model, targets, lambda name: reader.get_tensor(names[name]),
                             available, path)
            step = checkpoint_step(path)
            written.append(manager.save(checkpoint_number=step))
            steps.append(step)
            log(f"Imported {path} (step {step}, {len(available)} variables, "
                f"{style} names) as ckpt-{step}.")
        atomic.write_text(os.path.join(tmp, IMPORT_FILE), json.dumps({
            "t2t_output_dir": os.path.abspath(t2t_output_dir),
            "t2t_data_dir": os.path.abspath(t2t_data_dir),
            "checkpoints": [os.path.abspath(p) for p in paths], "steps": steps,
            "variable_names": style, "problem": run.problem, "model": run.model,
            "hparams_set": run.hparams_set, "target_space_id": hparams.target_space_id,
            "tensor2tensor": "1.x (variable names of t2t 1.15)"}, indent=2))
        return [os.path.join(output_dir, os.path.basename(p)) for p in written]

    return atomic.write_dir(output_dir, "import", fill)
