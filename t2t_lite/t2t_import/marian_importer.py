"""t2t-import --marian_dir: a Hugging Face Marian directory written as a t2t-lite model directory.

    import_model("opus-mt-en-de", "ende_model")
    # t2t-decoder --output_dir=ende_model decodes as MarianMTModel.generate does

What the model directory holds afterwards (every program reads it as its own):

    hparams.json         the network (`t2t_lite.marian.config`)
    problem.json         {"problem": "marian_SRC_TGT", "vocab_file": "marian_vocab.json",
                          "vocab_size": the target vocabulary's size}
    marian_vocab.json    both SentencePiece models and piece tables, in t2t-lite's ids
                         (`t2t_lite.marian.vocab_file`)
    marian_import.json   where it came from (each file's SHA-256), the generation
                         settings, and the decode hparams they translate to
    ckpt-0.*             the weights, renumbered (`t2t_lite.marian.ids`)

Nothing is downloaded: the user fetches the Hugging Face directory first.
"""

import dataclasses
import hashlib
import json
import os
from typing import Any, Callable, Dict

from t2t_lite import atomic, checkpoints
from t2t_lite.errors import T2TError
from t2t_lite.marian import config as config_lib
from t2t_lite.marian import vocab_file
from t2t_lite.marian.problem import problem_name

RECORD_VERSION = 1
# The files whose SHA-256 the record keeps, when present.
_SOURCE_FILES = ("config.json", "generation_config.json", "tokenizer_config.json",
                 "model.safetensors", "model.safetensors.index.json", "source.spm",
                 "target.spm", "vocab.json", "target_vocab.json")


def decode_hparams(config: config_lib.MarianConfig) -> Dict[str, Any]:
    """The decode hparams (`SearchParams` fields) under which t2t-decoder searches as
    `MarianMTModel.generate` does with `config`'s generation settings."""
    generation, ids = config.generation, config.ids
    return {
        "beam_size": generation.num_beams,
        "alpha": generation.length_penalty,
        "length_penalty": "fairseq",  # transformers: sum / length ** length_penalty
        "stop_rule": "transformers",
        "forbid_pad": generation.bad_words_ids == [[ids.pad]],
        "forced_eos": generation.forced_eos_token_id == ids.eos,
        "renormalize": generation.renormalize_logits,
        "max_output_length": generation.max_length - 1,  # max_length counts the start token
    }


def _unapplied_bad_words(config: config_lib.MarianConfig) -> str:
    """A note when generation's bad_words_ids hold more than <pad> (t2t-lite forbids
    <pad> alone); empty otherwise."""
    bad = config.generation.bad_words_ids
    if bad in (None, [[config.ids.pad]]):
        return ""
    return (f"Note: {config.generation.source} forbids the token sequences {bad}; t2t-lite "
            "forbids only <pad> (forbid_pad), so outputs may differ from transformers' "
            "where the model would write the others.")


def _languages(marian_dir: str):
    """(source_lang, target_lang) of tokenizer_config.json ("" where it names none)."""
    path = os.path.join(marian_dir, "tokenizer_config.json")
    values = config_lib.read_json(path) if os.path.exists(path) else {}
    return tuple(v if isinstance(v, str) else "" for v in
                 (values.get("source_lang"), values.get("target_lang")))


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_model(marian_dir: str, output_dir: str, log: Callable[[str], None] = print) -> str:
    """Imports the Marian model of `marian_dir` into the new model directory `output_dir`;
    returns the written checkpoint prefix.

    Raises:
      T2TError: anything that stops the import (one line); nothing is written then.
    """
    from t2t_lite.marian.loader import load_model  # TensorFlow-heavy
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
        raise T2TError(f"--output_dir {output_dir} exists and is not empty; import into a new "
                       "directory.")
    loaded = load_model(marian_dir)
    config = loaded.config
    stored = vocab_file.read_marian(marian_dir)
    sizes = (len(stored.source_pieces), len(stored.target_pieces))
    if sizes != (config.source_vocab_size, config.vocab_size):
        raise T2TError(f"The vocabularies of {marian_dir} hold {sizes[0]} source and {sizes[1]} "
                       f"target pieces, config.json says {config.source_vocab_size} and "
                       f"{config.vocab_size}: not this model's vocabularies.")
    from t2t_lite import model_dir as model_dir_lib
    languages = _languages(marian_dir)
    name = problem_name(*languages)
    note = _unapplied_bad_words(config)
    if note:
        log(note)
    record = {
        "version": RECORD_VERSION,
        "marian_dir": os.path.abspath(marian_dir),
        "source_language": languages[0], "target_language": languages[1],
        "source_vocab_size": config.source_vocab_size, "shared_vocab": config.shared_vocab,
        "files": {f: _sha256(os.path.join(marian_dir, f)) for f in _SOURCE_FILES
                  if os.path.exists(os.path.join(marian_dir, f))},
        "generation": dataclasses.asdict(config.generation),
        "decode_hparams": decode_hparams(config),
    }

    def fill(tmp: str) -> str:
        vocab_path = vocab_file.write_vocab(marian_dir, tmp)
        atomic.write_text(os.path.join(tmp, model_dir_lib.PROBLEM_FILE), json.dumps(
            {"problem": name, "vocab_file": os.path.basename(vocab_path),
             "vocab_size": config.vocab_size}, indent=2))
        atomic.write_text(os.path.join(tmp, model_dir_lib.HPARAMS_FILE), config.hparams.to_json())
        atomic.write_text(os.path.join(tmp, model_dir_lib.MARIAN_FILE),
                          json.dumps(record, indent=2))
        prefix = checkpoints.save_weights(loaded.model, tmp, 0)
        return os.path.join(output_dir, os.path.basename(prefix))

    written = atomic.write_dir(output_dir, "import", fill)
    log(f"Imported {marian_dir} as problem {name}: {config.source_vocab_size} source and "
        f"{config.vocab_size} target ids, decoding as transformers' generate "
        f"({', '.join(f'{k}={v}' for k, v in record['decode_hparams'].items())}).")
    return written
