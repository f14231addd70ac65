"""Translating with an exported CTranslate2 model, as its users do: no TensorFlow.

    translator = CT2Translator("exports/ende-ct2/1", compute_type="int8")
    outputs = translator.translate(["A man sleeps.", ""])  # one output per line

This is the README's six lines (SentencePiece pieces in, `translate_batch`,
pieces out) with what t2t-decoder adds around them: the search arguments
recorded at export time (t2t_lite/export.json, "translate_batch"), and blank
lines translated to "" without decoding, as t2t-decoder and the SavedModel do.
Imports only ctranslate2 and sentencepiece (and this package's name).
"""

import json
import os
from typing import List, Optional, Sequence

SENTENCEPIECE_FILE = "sentencepiece.model"  # copied beside the model by t2t-exporter
PROVENANCE_DIR = "t2t_lite"                 # hparams.json, problem.json, export.json
EXPORT_INFO = os.path.join(PROVENANCE_DIR, "export.json")


def read_export_info(path: str) -> dict:
    """What t2t-exporter recorded for the export version `path` (export.json)."""
    with open(os.path.join(path, EXPORT_INFO), encoding="utf-8") as f:
        return json.load(f)


def recorded_options(path: str) -> dict:
    """The `translate_batch` arguments written by t2t-exporter for `path`."""
    return dict(read_export_info(path)["translate_batch"])


class CT2Translator:
    """An exported CTranslate2 model with its SentencePiece model.

    Args:
      path: an export version directory (`export_dir/<version>`).
      compute_type: CTranslate2's compute type ("default": the saved weights' type,
        "float32", "int8", ...).
      threads: intra-op threads (0: CTranslate2's default).
      **overrides: `translate_batch` arguments replacing the recorded ones.
    """

    def __init__(self, path: str, compute_type: str = "default", threads: int = 0,
                 **overrides):
        import ctranslate2
        import sentencepiece

        self.tokenizer = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(path, SENTENCEPIECE_FILE))
        self.translator = ctranslate2.Translator(path, device="cpu", compute_type=compute_type,
                                                 intra_threads=threads)
        self.options = {**recorded_options(path), **overrides}

    def tokenize(self, lines: Sequence[str]) -> List[List[str]]:
        """SentencePiece pieces of each line (no EOS: the model adds it)."""
        return self.tokenizer.encode(list(lines), out_type=str)

    def translate_pieces(self, pieces: Sequence[Sequence[str]], batch_size: int = 32,
                         extra_length: Optional[int] = None) -> List[List[str]]:
        """Best hypothesis (pieces) of each source (pieces).

        `extra_length`: cap each output at its source's length (EOS included,
        after truncation to `max_input_length`, as both t2t-decoder and
        CTranslate2 truncate) + `extra_length` tokens, t2t-decoder's rule, by
        translating the sources of each length with their own
        `max_decoding_length` (CTranslate2 takes one per call); None: the
        recorded `max_decoding_length` for all.
        """
        if extra_length is None:
            groups = {None: list(range(len(pieces)))}
        else:
            max_input = self.options.get("max_input_length") or float("inf")  # 0: no limit
            groups = {}
            for i, source in enumerate(pieces):
                source_length = min(len(source) + 1, max_input)
                groups.setdefault(source_length + extra_length, []).append(i)
        hypotheses = [None] * len(pieces)
        for max_length, rows in groups.items():
            options = dict(self.options)
            if max_length is not None:
                options["max_decoding_length"] = min(max_length, options["max_decoding_length"])
            results = self.translator.translate_batch([pieces[i] for i in rows],
                                                      max_batch_size=batch_size, **options)
            for i, result in zip(rows, results):
                hypotheses[i] = result.hypotheses[0]
        return hypotheses

    def translate(self, lines: Sequence[str], batch_size: int = 32,
                  extra_length: Optional[int] = None) -> List[str]:
        """One translation per line; blank lines give "" (`extra_length`: see
        `translate_pieces`)."""
        todo = [i for i, line in enumerate(lines) if line.strip()]
        outputs = [""] * len(lines)
        hypotheses = self.translate_pieces(self.tokenize([lines[i] for i in todo]), batch_size,
                                           extra_length)
        for i, pieces in zip(todo, hypotheses):
            outputs[i] = self.tokenizer.decode(pieces)
        return outputs
