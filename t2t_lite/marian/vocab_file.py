"""A Marian vocabulary as one file of a t2t-lite model directory (`marian_vocab.json`).

A Hugging Face Marian directory spreads its vocabulary over four or five files:
`source.spm` and `target.spm` (SentencePiece models, whose ids are NOT the
model's) and `vocab.json` (piece -> model id; with `separate_vocabs` in
`tokenizer_config.json`, `vocab.json` is the source's and `target_vocab.json`
the target's). `write_vocab` stores all of it as ONE file, because every reader
of a model directory treats its vocabulary as one file: `ModelDir.vocab_path`,
`copy_metadata`, `load_ensemble`'s byte comparison, datagen's hash and the
SavedModel asset the exporter writes and t2t-server reads back.

The file is UTF-8 JSON, one value a line:

    {"format": "t2t-lite Marian vocabulary", "version": 1,
     "separate_vocabs": false,
     "source_spm": "<base64 of source.spm>", "target_spm": "<base64 of target.spm>",
     "source_pieces": ["<pad>", "</s>", "<unk>", ...],
     "target_pieces": [...]}

The piece tables are in t2t-lite's ids (`t2t_lite.marian.ids`): the piece of
id i is entry i (`<pad>` 0, `</s>` 1, `<unk>` 2, the others in Marian's order).
For a shared vocabulary both tables are `vocab.json`'s.
"""

import base64
import binascii
import dataclasses
import json
import os
from typing import Any, Dict, List

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_model_pb2

from t2t_lite import atomic
from t2t_lite.data.layout import MARIAN_VOCAB_FILE
from t2t_lite.errors import T2TError
from t2t_lite.marian.ids import renumbered_pieces, renumbering

VOCAB_FILE = MARIAN_VOCAB_FILE  # its name in a model directory; a data directory's copy
                                # ends with it (`load_vocab_file` looks for either)
FORMAT = "t2t-lite Marian vocabulary"
VERSION = 1
# MarianTokenizer's defaults; tokenizer_config.json may name others.
_SPECIAL_DEFAULTS = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


@dataclasses.dataclass
class StoredVocab:
    """What `marian_vocab.json` holds (see the module docstring)."""
    separate_vocabs: bool
    source_spm: bytes
    target_spm: bytes
    source_pieces: List[str]  # index = t2t-lite id
    target_pieces: List[str]


def is_vocab_file(path: str) -> bool:
    """Whether `path` names a stored Marian vocabulary (by its name)."""
    return os.path.basename(str(path)).endswith(VOCAB_FILE)


def _read_json(path: str) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        raise T2TError(f"{path} is missing: not a Hugging Face Marian directory.") from None
    except OSError as e:
        raise T2TError(f"Cannot read {path}: {e.strerror}.") from None
    except ValueError as e:  # JSONDecodeError, bad UTF-8
        raise T2TError(f"Corrupt {path}: {e}") from None


def _checked_table(table: Any, path: str) -> Dict[str, int]:
    """vocab.json's {piece: Marian id}, its ids each of 0 .. V-1 once."""
    if not isinstance(table, dict) or not table \
            or not all(type(i) is int for i in table.values()):
        raise T2TError(f"Corrupt {path}: expected a JSON object of pieces and integer ids.")
    if sorted(table.values()) != list(range(len(table))):
        raise T2TError(f"Corrupt {path}: the ids of its {len(table)} pieces are not "
                       f"0 .. {len(table) - 1}, each once.")
    return table


def _special_tokens(config: Dict[str, Any]) -> Dict[str, str]:
    """{"eos_token", "unk_token", "pad_token"} -> their piece strings."""
    tokens = {}
    for key, default in _SPECIAL_DEFAULTS.items():
        value = config.get(key, default)
        if isinstance(value, dict):  # an AddedToken written as {"content": ...}
            value = value.get("content")
        tokens[key] = value if isinstance(value, str) else default
    return tokens


def table_renumbering(table: Dict[str, int], specials: Dict[str, str], path: str) -> np.ndarray:
    """The t2t-lite id of each Marian id of `table` (`ids.renumbering`), its pad, eos and
    unk ids read from the table under the names `specials` gives."""
    for key, piece in specials.items():
        if piece not in table:
            raise T2TError(f"Corrupt {path}: no {key.split('_')[0]} piece {piece!r}.")
    return renumbering(len(table), pad_id=table[specials["pad_token"]],
                       eos_id=table[specials["eos_token"]], unk_id=table[specials["unk_token"]])


def _checked_spm(data: bytes, name: str) -> bytes:
    """`data` if it is a SentencePiece model t2t-lite can join pieces of."""
    try:
        proto = sp_model_pb2.ModelProto.FromString(data)
        spm.SentencePieceProcessor(model_proto=data)
    except Exception as e:  # DecodeError, sentencepiece's RuntimeError
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise T2TError(f"Corrupt {name}: not a SentencePiece model ({message}).") from None
    if proto.denormalizer_spec.precompiled_charsmap:
        raise T2TError(f"{name} has a denormalization rule, which t2t-lite's decoding "
                       "(the pieces joined, as MarianTokenizer does) does not apply.")
    return data


def _read_spm(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return _checked_spm(f.read(), path)
    except FileNotFoundError:
        raise T2TError(f"{path} is missing: not a Hugging Face Marian directory.") from None
    except OSError as e:
        raise T2TError(f"Cannot read {path}: {e.strerror}.") from None


def read_marian(marian_dir: str) -> StoredVocab:
    """The vocabulary of the Hugging Face Marian directory `marian_dir`, renumbered.

    Raises:
      T2TError: (one line) a missing or unreadable file, a damaged vocab.json or
        target_vocab.json (not an object of integer ids, ids not a permutation of
        0 .. V-1, no `</s>`, `<unk>` or `<pad>`), or a damaged SentencePiece model.
    """
    config_path = os.path.join(marian_dir, "tokenizer_config.json")
    config = _read_json(config_path) if os.path.exists(config_path) else {}
    if not isinstance(config, dict):
        raise T2TError(f"Corrupt {config_path}: expected a JSON object.")
    separate = config.get("separate_vocabs", False) is True
    specials = _special_tokens(config)
    tables = []
    for name in ("vocab.json", "target_vocab.json") if separate else ("vocab.json",):
        path = os.path.join(marian_dir, name)
        table = _checked_table(_read_json(path), path)
        tables.append(renumbered_pieces(table, table_renumbering(table, specials, path)))
    return StoredVocab(separate, _read_spm(os.path.join(marian_dir, "source.spm")),
                       _read_spm(os.path.join(marian_dir, "target.spm")),
                       tables[0], tables[-1])


def write_vocab(marian_dir: str, out_dir: str) -> str:
    """Writes `marian_dir`'s vocabulary into `out_dir` as `VOCAB_FILE` (atomically).

    Returns:
      The path written.
    Raises:
      T2TError: see `read_marian`.
    """
    stored = read_marian(marian_dir)
    value = {"format": FORMAT, "version": VERSION, "separate_vocabs": stored.separate_vocabs,
             "source_spm": base64.b64encode(stored.source_spm).decode("ascii"),
             "target_spm": base64.b64encode(stored.target_spm).decode("ascii"),
             "source_pieces": stored.source_pieces, "target_pieces": stored.target_pieces}
    path = os.path.join(out_dir, VOCAB_FILE)
    atomic.write_text(path, json.dumps(value, ensure_ascii=False, indent=0) + "\n")
    return path


def _checked_pieces(pieces: Any, name: str, source: str) -> List[str]:
    if not isinstance(pieces, list) or len(pieces) < 3 \
            or not all(isinstance(p, str) for p in pieces):
        raise T2TError(f"Corrupt {source}: {name} is not a list of at least 3 pieces.")
    if len(set(pieces)) != len(pieces):
        raise T2TError(f"Corrupt {source}: {name} holds a piece twice.")
    return pieces


def parse_vocab(data: bytes, source: str) -> StoredVocab:
    """The content of a `VOCAB_FILE`'s bytes (`source` names it in errors).

    Raises:
      T2TError: (one line) not such a file, or a damaged one.
    """
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError as e:
        raise T2TError(f"Corrupt {source}: {e}") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise T2TError(f"Corrupt {source}: not a {FORMAT} (written by t2t-import).")
    if value.get("version") != VERSION:
        raise T2TError(f"{source} is a {FORMAT} of version {value.get('version')!r}; this "
                       f"t2t-lite reads version {VERSION}.")
    spms = []
    for key in ("source_spm", "target_spm"):
        try:
            spms.append(_checked_spm(base64.b64decode(value.get(key, ""), validate=True),
                                     f"{source} ({key})"))
        except (binascii.Error, TypeError, ValueError):
            raise T2TError(f"Corrupt {source}: {key} is not base64.") from None
    return StoredVocab(value.get("separate_vocabs") is True, spms[0], spms[1],
                       _checked_pieces(value.get("source_pieces"), "source_pieces", source),
                       _checked_pieces(value.get("target_pieces"), "target_pieces", source))
