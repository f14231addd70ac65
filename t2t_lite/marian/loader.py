"""A Marian directory as a built t2t-lite Transformer holding its weights.

    loaded = load_model("opus-mt-en-de")
    loaded.model                       # t2t-lite's Transformer, in t2t-lite's ids
    loaded.config.hparams              # its HParams (`t2t_lite.marian.config`)
    loaded.source_ids[marian_id]       # Marian id -> t2t-lite id (`t2t_lite.marian.ids`)
    loaded.target_ids[marian_id]

The renumbering of each vocabulary puts its `<pad>`, `</s>` and `<unk>` (as
tokenizer_config.json names them) at 0, 1, 2. A model with separate vocabularies
has two: vocab.json's (source) and target_vocab.json's (target).
"""

import dataclasses
import os
from typing import Dict

import numpy as np

from t2t_lite.errors import T2TError
from t2t_lite.marian import config as config_lib, ids as ids_lib, weights

SOURCE_VOCAB = "vocab.json"
TARGET_VOCAB = "target_vocab.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
_TOKEN_DEFAULTS = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}


@dataclasses.dataclass(frozen=True)
class LoadedMarian:
    """What `load_model` returns."""
    model: object                 # t2t_lite.model.transformer.Transformer
    config: config_lib.MarianConfig
    source_ids: np.ndarray        # int64 [source vocabulary]: Marian id -> t2t-lite id
    target_ids: np.ndarray        # int64 [target vocabulary] (the same array when shared)


def special_tokens(marian_dir: str) -> Dict[str, str]:
    """{"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}, as
    tokenizer_config.json names them (a token may be {"content": ...} there)."""
    path = os.path.join(marian_dir, TOKENIZER_CONFIG)
    values = config_lib.read_json(path) if os.path.exists(path) else {}
    tokens = {}
    for key, default in _TOKEN_DEFAULTS.items():
        token = values.get(key) or default
        tokens[key] = token.get("content") if isinstance(token, dict) else token
        if not isinstance(tokens[key], str):
            raise T2TError(f"{path}: {key} must be a token, got {token!r}.")
    return tokens


def vocab_renumbering(path: str, size: int, tokens: Dict[str, str]) -> np.ndarray:
    """Marian id -> t2t-lite id for the vocabulary file `path` of `size` ids."""
    vocab = config_lib.read_json(path)
    found = {}
    for key, token in tokens.items():
        if token not in vocab:
            raise T2TError(f"{path} has no {token!r} ({key} of tokenizer_config.json).")
        found[key] = vocab[token]
    return ids_lib.renumbering(size, found["pad_token"], found["eos_token"], found["unk_token"])


def renumberings(marian_dir: str, config: config_lib.MarianConfig):
    """(source_ids, target_ids) of `marian_dir`'s vocabularies.

    Raises:
      T2TError: a vocabulary lacks a special token, or the target's `<pad>` and `</s>`
        are not config.json's pad_token_id and eos_token_id.
    """
    tokens = special_tokens(marian_dir)
    source_path = os.path.join(marian_dir, SOURCE_VOCAB)
    target_path = os.path.join(marian_dir, TARGET_VOCAB)
    if config.shared_vocab or not os.path.exists(target_path):
        target_path = source_path
    target_ids = vocab_renumbering(target_path, config.vocab_size, tokens)
    source_ids = (target_ids if config.shared_vocab else
                  vocab_renumbering(source_path, config.source_vocab_size, tokens))
    for name, marian_id, new_id in [("pad_token_id", config.ids.pad, 0),
                                    ("eos_token_id", config.ids.eos, 1)]:
        if target_ids[marian_id] != new_id:
            raise T2TError(f"config.json's {name} {marian_id} is not "
                           f"{list(tokens.values())[new_id]!r} of {target_path}.")
    return source_ids, target_ids


def load_model(marian_dir: str) -> LoadedMarian:
    """Builds the t2t-lite Transformer of a Marian directory and fills it with its weights.

    Raises:
      T2TError: one line for anything that stops the import (config, vocabularies,
        weights); see `config.read_config` and `weights.assign`.
    """
    from t2t_lite.model.transformer import build  # TensorFlow-heavy
    if not os.path.isdir(marian_dir):
        raise T2TError(f"--marian_dir {marian_dir} is not a directory.")
    config = config_lib.read_config(marian_dir)
    source_ids, target_ids = renumberings(marian_dir, config)
    tensors = weights.read_tensors(marian_dir)
    model = build(config.hparams, config.vocab_size)
    weights.assign(model, tensors, config.shared_vocab, source_ids, target_ids, marian_dir)
    return LoadedMarian(model=model, config=config, source_ids=source_ids,
                        target_ids=target_ids)
