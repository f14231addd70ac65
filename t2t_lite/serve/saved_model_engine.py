"""The SavedModel engine: t2t-server --export_dir=E serves t2t-exporter's SavedModel.

    engine = SavedModelEngine.load("exports/ende")   # the newest version, e.g. exports/ende/3
    engine.translate(["Hello world.", ""])            # -> [Translation, Translation]

The engine calls the SavedModel's `nbest` signature (every beam and its score,
best first; `serving_default` is its first column) on each batch of strings,
as a TF Serving client would: the search settings are those fixed at export
(assets.extra/export.json records them), and a parsing model's outputs are
its linearized trees, as the export returns them (no `postprocess`). A
sentence's line is its best output on one line (`decoding.one_line`), as
t2t-decoder writes it without return_beams or write_beam_scores. The version
is the version directory's number.

Batches group sentences by length: their length in subwords by the export's
own vocabulary (the asset t2t-exporter stores in assets/, tokenized as the
graph does; capped at the export's input limit), or, in a SavedModel without
that asset, their whitespace-separated words + 1.

Versions: TF Serving's layout, integer-named subdirectories of E, each
written by t2t-exporter under a hidden temporary name and renamed when
complete (`t2t_lite.export.versions`), so a version directory that exists is
whole; `newest_version` also requires its saved_model.pb.
"""

import json
import os
from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode.decoding import DecodeOptions, format_hypotheses
from t2t_lite.decode.search import input_limit
from t2t_lite.errors import T2TError
from t2t_lite.serve.engine import (Translation, subword_lengths, translate_nonblank,
                                   warm_up_sentence)

SAVED_MODEL_FILE = "saved_model.pb"


def newest_version(export_dir: str) -> Tuple[int, str]:
    """(number, path) of the newest version of `export_dir`: its largest integer-named
    subdirectory holding a saved_model.pb.

    Raises:
      T2TError: `export_dir` is missing or has no such version.
    """
    if not os.path.isdir(export_dir):
        raise T2TError(f"Export directory {export_dir!r} does not exist.")
    found = [int(name) for name in os.listdir(export_dir) if name.isascii() and name.isdigit()
             and os.path.isfile(os.path.join(export_dir, name, SAVED_MODEL_FILE))]
    if not found:
        raise T2TError(f"No SavedModel version in {export_dir!r} (a subdirectory named by an "
                       f"integer, holding {SAVED_MODEL_FILE}); write one with t2t-exporter "
                       f"--export_dir={export_dir}.")
    version = max(found)
    return version, os.path.join(export_dir, str(version))


def _read_json(path: str) -> Optional[dict]:
    """The JSON object in `path`, or None without the file.

    Raises:
      T2TError: the file is not a JSON object Python reads (also an integer of more than
        4,300 digits, a ValueError that is not a JSONDecodeError).
    """
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError) as e:  # ValueError: JSONDecodeError, UnicodeDecodeError too
        raise T2TError(f"Corrupt {path}: {e}") from None
    if not isinstance(value, dict):
        raise T2TError(f"Corrupt {path}: expected a JSON object, got {type(value).__name__}.")
    return value


class SavedModelEngine:
    """Translates batches with a SavedModel's `nbest` signature (see the module docstring).

    Args:
      path: the version directory.
      version: its number.
      nbest: the signature: inputs tf.string [B] -> {outputs: tf.string [B, beam],
        scores: float32 [B, beam]}.
      beams: the beam width of its outputs.
      vocab: the export's vocabulary asset (for lengths), or None.
      max_input: the longest input the export searches, in subwords with EOS (None: no limit).
      loaded: the loaded SavedModel (kept: its variables outlive the signature's uses).
    """

    def __init__(self, path: str, version: int, nbest, beams: int, vocab=None,
                 max_input: Optional[int] = None, loaded=None):
        self.path = path
        self.version = version
        self.nbest = nbest
        self.beams = beams
        self.vocab = vocab
        self.max_input = max_input
        self.loaded = loaded

    @classmethod
    def load(cls, export_dir: str) -> "SavedModelEngine":
        """The engine of the newest version of `export_dir` (`newest_version`).

        Raises:
          T2TError: no version, or one that does not load or has no `nbest` signature.
        """
        version, path = newest_version(export_dir)
        try:
            loaded = tf.saved_model.load(path)
        except (OSError, ValueError, tf.errors.OpError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise T2TError(f"Cannot load the SavedModel {path}: {first}") from None
        nbest = loaded.signatures.get("nbest")
        if nbest is None:
            raise T2TError(f"The SavedModel {path} has no 'nbest' signature (signatures: "
                           f"{', '.join(loaded.signatures) or 'none'}); export it with "
                           "t2t-exporter.")
        beams = nbest.structured_outputs["outputs"].shape[1]
        vocab, max_input = cls._lengths_of(path)
        return cls(path, version, nbest, beams, vocab, max_input, loaded)

    @staticmethod
    def _lengths_of(path: str):
        """(the vocabulary asset or None, the export's input limit) of a version."""
        extra = os.path.join(path, "assets.extra")
        export = _read_json(os.path.join(extra, "export.json")) or {}
        problem = _read_json(os.path.join(extra, model_dir_lib.PROBLEM_FILE)) or {}
        hparams = _read_json(os.path.join(extra, model_dir_lib.HPARAMS_FILE)) or {}
        asset = os.path.join(path, "assets", problem.get("vocab_file") or "-")
        vocab = model_dir_lib.load_vocab_file(asset) if os.path.isfile(asset) else None
        setting = export.get("decode_params", {}).get("max_input_length", 0)
        limit = input_limit(setting, [hparams["max_length"]]) if "max_length" in hparams \
            else None
        return vocab, limit

    def token_lengths(self, texts: Sequence[str]) -> List[int]:
        """Each text's length in the export's subwords (EOS included, capped at its input
        limit), or its words + 1 without a vocabulary asset."""
        if self.vocab is None:
            return [len(text.split()) + 1 for text in texts]
        return subword_lengths(self.vocab, texts, self.max_input)

    def blank(self) -> Translation:
        """The result of an empty or whitespace-only line (the export's answer: "", 0.0)."""
        return Translation.blank(self.beams)

    def translate(self, texts: Sequence[str]) -> List[Translation]:
        """Translates one batch with the `nbest` signature; blank texts give `blank()`."""
        return translate_nonblank(texts, self.blank(), self._search)

    def _search(self, texts: List[str]) -> List[Translation]:
        out = self.nbest(inputs=tf.constant(texts, dtype=tf.string))  # [B]
        results = []
        for hyps, sc in zip(out["outputs"].numpy().tolist(),   # [B, beam] bytes
                            out["scores"].numpy().tolist()):   # [B, beam]
            hypotheses = [h.decode("utf-8") for h in hyps]
            results.append(Translation(format_hypotheses(hypotheses, sc, DecodeOptions()),
                                       hypotheses, [float(s) for s in sc]))
        return results

    def warm_up(self) -> None:
        """Translates one sentence (the first call of a loaded function sets it up)."""
        self.translate([warm_up_sentence(self.vocab)])
