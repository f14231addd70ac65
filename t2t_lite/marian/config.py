"""A Marian directory's `config.json` (and `generation_config.json`) as t2t-lite values.

    config = read_config("opus-mt-en-de")
    config.hparams             # HParams of the same network (post-norm, biases, ...)
    config.ids.pad, .eos       # Marian's ids (before `t2t_lite.marian.ids` renumbers them)
    config.generation.num_beams, .max_length, .renormalize_logits, ...

What is read is what transformers' `MarianMTModel` (5.23) computes with: a field
missing from config.json takes `MarianConfig`'s default, as in transformers.
Fields transformers keeps but never reads (`normalize_before`,
`static_position_embeddings`, `add_final_layer_norm`, `normalize_embedding`,
`add_bias_logits`, ... which Helsinki-NLP's converted configs carry) are accepted
and ignored. Refused, in one line each, are only values with which
`MarianMTModel` computes something t2t-lite's Transformer does not: another
`model_type`, an activation other than relu/swish/silu/gelu, encoder and decoder of
different widths or head counts, an untied output layer, a decoder start other
than `<pad>`, several end ids.

Dropouts (`dropout`, `attention_dropout`, `activation_dropout`) become the hparams
a fine-tuning run uses; `encoder_layerdrop`/`decoder_layerdrop` (training only) have
no t2t-lite equivalent and are not used.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

CONFIG_FILE = "config.json"
GENERATION_CONFIG_FILE = "generation_config.json"

# MarianConfig's defaults (transformers 5.23), used for fields config.json lacks.
MARIAN_DEFAULTS: Dict[str, Any] = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024,
    "encoder_layers": 12, "encoder_ffn_dim": 4096, "encoder_attention_heads": 16,
    "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "dropout": 0.1,
    "attention_dropout": 0.0, "activation_dropout": 0.0, "decoder_start_token_id": 58100,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "bos_token_id": None, "forced_eos_token_id": 0,
    "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
}
# Hugging Face's ACT2FN names -> t2t-lite's ffn_activation ("swish" and "silu" are
# both torch's SiLU; "gelu" is torch's exact, erf-based GELU).
ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish", "gelu": "gelu"}
# transformers' GenerationConfig defaults for the settings decoding needs.
GENERATION_DEFAULTS: Dict[str, Any] = {
    "num_beams": 1, "max_length": 20, "bad_words_ids": None, "forced_eos_token_id": None,
    "renormalize_logits": False, "length_penalty": 1.0,
}


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    """Marian's ids from config.json (target vocabulary), before renumbering."""
    pad: int
    eos: int
    decoder_start: int  # always `pad` here (anything else is refused)


@dataclasses.dataclass(frozen=True)
class GenerationSettings:
    """What `generate()` reads: generation_config.json when the directory has one,
    else config.json, else transformers' defaults. Ids are Marian's."""
    num_beams: int
    max_length: int             # of the output, counting the start token
    bad_words_ids: Optional[List[List[int]]]
    forced_eos_token_id: Optional[int]
    renormalize_logits: bool
    length_penalty: float
    source: str                 # the file they came from


@dataclasses.dataclass(frozen=True)
class MarianConfig:
    """A Marian model's shape and settings, read once from its directory."""
    hparams: HParams
    vocab_size: int             # target vocabulary (the decoder's and the logits')
    source_vocab_size: int      # = vocab_size when the embeddings are shared
    shared_vocab: bool          # share_encoder_decoder_embeddings
    max_position_embeddings: int
    ids: SpecialIds
    generation: GenerationSettings


def read_json(path: str) -> Dict[str, Any]:
    """The JSON object in `path`; a missing, unreadable or malformed file is a T2TError."""
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except OSError as e:
        raise T2TError(f"Cannot read {path}: {e.strerror or e}.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise T2TError(f"{path} is not valid JSON: {e}.") from None
    if not isinstance(values, dict):
        raise T2TError(f"{path} is not a JSON object.")
    return values


def _typed(values: Dict[str, Any], key: str, kind, path: str, defaults=MARIAN_DEFAULTS):
    """values[key] (or its default), checked to be of `kind` (int, float, bool, str)."""
    value = values.get(key, defaults.get(key))
    ok = (isinstance(value, bool) if kind is bool else
          isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else
          isinstance(value, int) and not isinstance(value, bool) if kind is int else
          isinstance(value, kind))
    if not ok:
        raise T2TError(f"{path}: {key!r} must be {kind.__name__}, got {value!r}.")
    return value


def _one_id(values: Dict[str, Any], key: str, path: str, defaults) -> Optional[int]:
    """An id field that transformers also accepts as a list: a list of one id is that id."""
    value = values.get(key, defaults.get(key))
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise T2TError(f"{path}: {key!r} must be one token id, got {value!r} (several end "
                       "ids are not supported).")
    return value


def _same(values: Dict[str, Any], a: str, b: str, path: str, what: str) -> int:
    if _typed(values, a, int, path) != _typed(values, b, int, path):
        raise T2TError(f"{path}: {a} {values.get(a, MARIAN_DEFAULTS[a])} differs from {b} "
                       f"{values.get(b, MARIAN_DEFAULTS[b])}; t2t-lite's Transformer has one "
                       f"{what} for encoder and decoder.")
    return values.get(a, MARIAN_DEFAULTS[a])


def to_hparams(values: Dict[str, Any], path: str = CONFIG_FILE) -> Tuple[HParams, int, int, bool]:
    """config.json's values -> (HParams, target vocabulary size, source vocabulary size,
    shared vocabulary).

    Raises:
      T2TError: a value with which MarianMTModel computes what t2t-lite cannot.
    """
    model_type = values.get("model_type")
    if model_type != "marian":
        raise T2TError(f"{path}: model_type is {model_type!r}, not 'marian'; only Marian "
                       "(OPUS-MT) models can be imported.")
    activation = _typed(values, "activation_function", str, path)
    if activation not in ACTIVATIONS:
        raise T2TError(f"{path}: activation_function {activation!r} is not supported; "
                       f"supported: {', '.join(ACTIVATIONS)}.")
    if not _typed(values, "tie_word_embeddings", bool, path):
        raise T2TError(f"{path}: tie_word_embeddings is false (an output layer of its own, "
                       "and in transformers 5 encoder and decoder tables of their own); only "
                       "tied Marian models can be imported.")
    shared = _typed(values, "share_encoder_decoder_embeddings", bool, path)
    vocab_size = _typed(values, "vocab_size", int, path)
    decoder_vocab = values.get("decoder_vocab_size") or vocab_size
    if not isinstance(decoder_vocab, int) or isinstance(decoder_vocab, bool):
        raise T2TError(f"{path}: 'decoder_vocab_size' must be int, got {decoder_vocab!r}.")
    # Shared: the decoder's table is tied to the shared one, of vocab_size rows
    # (decoder_vocab_size then only shapes the training loss).
    target_vocab = vocab_size if shared else decoder_vocab
    heads = _same(values, "encoder_attention_heads", "decoder_attention_heads", path,
                  "number of attention heads")
    ffn = _same(values, "encoder_ffn_dim", "decoder_ffn_dim", path, "feed-forward width")
    dropouts = {name: float(_typed(values, key, float, path)) for name, key in [
        ("layer_prepostprocess_dropout", "dropout"), ("attention_dropout", "attention_dropout"),
        ("relu_dropout", "activation_dropout")]}
    max_positions = _typed(values, "max_position_embeddings", int, path)
    encoder_layers = _typed(values, "encoder_layers", int, path)
    try:
        hparams = HParams(
            hidden_size=_typed(values, "d_model", int, path), filter_size=ffn, num_heads=heads,
            num_hidden_layers=encoder_layers, num_encoder_layers=encoder_layers,
            num_decoder_layers=_typed(values, "decoder_layers", int, path),
            pos="timing", timing_signal="marian",
            layer_preprocess_sequence="", layer_postprocess_sequence="dan",
            layer_norm_epsilon=1e-5,  # torch's nn.LayerNorm default, which Marian keeps
            shared_embedding=shared, shared_embedding_and_softmax_weights=True,
            source_vocab_size=0 if shared else vocab_size,
            attention_bias=True, ffn_activation=ACTIVATIONS[activation],
            scale_embedding=_typed(values, "scale_embedding", bool, path),
            logits_bias=True, embed_padding=True, max_length=max_positions, **dropouts)
    except T2TError as e:
        raise T2TError(f"{path}: {e}") from None
    return hparams, target_vocab, vocab_size, shared


def special_ids(values: Dict[str, Any], path: str = CONFIG_FILE) -> SpecialIds:
    """The pad (= decoder start) and end ids of config.json (Marian's numbering)."""
    pad = _one_id(values, "pad_token_id", path, MARIAN_DEFAULTS)
    eos = _one_id(values, "eos_token_id", path, MARIAN_DEFAULTS)
    start = _one_id(values, "decoder_start_token_id", path, MARIAN_DEFAULTS)
    if pad is None or eos is None:
        raise T2TError(f"{path}: pad_token_id and eos_token_id must be set, got {pad!r} and "
                       f"{eos!r}.")
    if start != pad:
        raise T2TError(f"{path}: decoder_start_token_id {start} is not pad_token_id {pad}; "
                       "t2t-lite decodes from the padding id's row (Marian's <pad> start).")
    return SpecialIds(pad=pad, eos=eos, decoder_start=start)


def generation_settings(marian_dir: str, values: Dict[str, Any]) -> GenerationSettings:
    """generation_config.json's settings if the directory has that file, else config.json's
    (`values`), as transformers' `from_pretrained` takes them; defaults for the rest."""
    path = os.path.join(marian_dir, GENERATION_CONFIG_FILE)
    if os.path.exists(path):
        values = read_json(path)
    else:
        path = os.path.join(marian_dir, CONFIG_FILE)
    defaults = GENERATION_DEFAULTS
    bad_words = values.get("bad_words_ids")
    if bad_words is not None and not (
            isinstance(bad_words, list) and all(
                isinstance(ids, list) and ids and all(
                    isinstance(i, int) and not isinstance(i, bool) for i in ids)
                for ids in bad_words)):
        raise T2TError(f"{path}: 'bad_words_ids' must be a list of lists of token ids, got "
                       f"{bad_words!r}.")
    return GenerationSettings(
        num_beams=_typed(values, "num_beams", int, path, defaults),
        max_length=_typed(values, "max_length", int, path, defaults),
        bad_words_ids=bad_words,
        forced_eos_token_id=_one_id(values, "forced_eos_token_id", path, defaults),
        renormalize_logits=_typed(values, "renormalize_logits", bool, path, defaults),
        length_penalty=float(_typed(values, "length_penalty", float, path, defaults)),
        source=os.path.basename(path))


def read_config(marian_dir: str) -> MarianConfig:
    """Reads `marian_dir`/config.json (and generation_config.json when present).

    Raises:
      T2TError: a missing or malformed file, or a value the import cannot compute
        as MarianMTModel does (one line, naming the field).
    """
    path = os.path.join(marian_dir, CONFIG_FILE)
    values = read_json(path)
    hparams, vocab_size, source_vocab_size, shared = to_hparams(values, path)
    ids = special_ids(values, path)
    for name, value in [("pad_token_id", ids.pad), ("eos_token_id", ids.eos)]:
        if not 0 <= value < vocab_size:
            raise T2TError(f"{path}: {name} {value} is outside the target vocabulary of "
                           f"{vocab_size} ids.")
    if not shared and ids.pad >= source_vocab_size:  # transformers' padding_idx check
        raise T2TError(f"{path}: pad_token_id {ids.pad} is outside the source vocabulary of "
                       f"{source_vocab_size} ids (transformers cannot build this model).")
    return MarianConfig(hparams=hparams, vocab_size=vocab_size,
                        source_vocab_size=source_vocab_size, shared_vocab=shared,
                        max_position_embeddings=_typed(values, "max_position_embeddings", int,
                                                       path),
                        ids=ids, generation=generation_settings(marian_dir, values))
