"""Translating with an exported CTranslate2 model, as its users do: no TensorFlow.

    translator = CT2Translator("exports/ende-ct2/1", compute_type="int8")
    outputs = translator.translate(["A man sleeps.", ""])  # one output per line

This is the README's six lines (tokens in, `translate_batch`, tokens out) with
what t2t-decoder adds around them: the search arguments recorded at export time
(t2t_lite/export.json, "translate_batch"), and blank lines translated to ""
without decoding, as t2t-decoder and the SavedModel do.

The tokenizer is the one export.json names ("tokenizer"):

  "sentencepiece"  a t2t-lite model: its SentencePiece model, copied beside the
                   CTranslate2 model as `sentencepiece.model` (export.json
                   "sentencepiece"); the CTranslate2 tokens are its pieces.
                   Exports written before "tokenizer" was recorded are this kind.
  "t2t_subwords"   a model imported from tensor2tensor (t2t-import): t2t's
                   SubwordTextEncoder file, copied beside the model under its
                   own name (export.json "t2t_subwords", e.g.
                   `vocab.translate_ende_multi30k.8192.subwords`), applied by
                   the pure-Python `t2t_subwords_text.T2TSubwordText`. Lines are
                   stripped of the whitespace at both ends first (t2t-decoder's
                   rule for imported models), and outputs decoded by t2t's rules.
                   The CTranslate2 tokens are t2t's subtoken strings, id for id
                   (`t2t_ctranslate2_tokens`), and one more: the unknown token.

Why the t2t vocabulary needs its own unknown token: CTranslate2 requires one
(`config.unk_token`; a vocabulary without it gets it appended at load time, one
id past the model's rows). SentencePiece has one at id 2; t2t has none (its id 2
is an ordinary subtoken such as '._', and every character can be escaped). So
the export registers `T2T_UNK_TOKEN` as an extra last token with a row of its
own (zero embeddings; a logit far below any other, so no probability changes;
see `ctranslate2_spec.transformer_spec`), and t2t's ids stay CTranslate2's.
Its string holds a "\\n", which no t2t subtoken can (t2t splits its file at
"\\n"), so no text ever tokenizes to it.

Imports only ctranslate2, and sentencepiece or this package's pure-Python
t2t_subwords_text module (and this package's name).
"""

import dataclasses
import json
import math
import os
from typing import Dict, List, Optional, Sequence

from t2t_lite.data.t2t_subwords_text import T2TSubwordText  # the standard library only

SENTENCEPIECE_FILE = "sentencepiece.model"  # copied beside the model by t2t-exporter
PROVENANCE_DIR = "t2t_lite"                 # hparams.json, problem.json, export.json
EXPORT_INFO = os.path.join(PROVENANCE_DIR, "export.json")
TOKENIZERS = ("sentencepiece", "t2t_subwords")  # export.json "tokenizer"
# CTranslate2's unknown token for a t2t vocabulary: never equal to a t2t subtoken (those
# never hold a "\n"), registered as one extra last token (see the module docstring).
T2T_UNK_TOKEN = "<unk>\n"
VOCABULARY_FILE = "shared_vocabulary.json"  # CTranslate2's, source and target alike


# How far below its own cap a source's longest hypothesis must end for a translation
# under a larger cap to stand for it (`CT2Translator.translate_results`): where
# `joint_hypotheses` allows the joint call, the search stops at the step where a
# returned hypothesis ends, the end token one past its tokens.
_CAP_MARGIN = 2
_JOINT_MIN_EXTRA = 10  # extra_length from which one joint call is tried first


def _longest_hypothesis(result) -> int:
    """Tokens of the longest hypothesis of a CTranslate2 result (0 if none)."""
    return max((len(h) for h in result.hypotheses), default=0)


def _samples(options: dict) -> bool:
    """Whether `translate_batch` draws tokens at random with these options (CTranslate2
    samples unless sampling_topk is 1 or the temperature 0): a second call draws other
    tokens, so no call stands for another."""
    return (options.get("sampling_topk", 1) != 1
            and options.get("sampling_temperature", 1.0) != 0)


def beam_stop_count(options: dict) -> int:
    """round(beam_size x patience): the finished hypotheses at which CTranslate2's beam
    search stops a source when it takes no early exit (its decoding.cc
    `get_max_candidates`, C++ rounding: halves away from zero)."""
    return int(math.floor(options.get("beam_size", 2) * options.get("patience", 1.0) + 0.5))


def joint_hypotheses(options: dict) -> Optional[int]:
    """The `num_hypotheses` under which one call under a larger `max_decoding_length`
    gives a source what a call under its own cap gives, whenever its returned
    hypotheses all end `_CAP_MARGIN` tokens below that cap; None where no number does.

    The cap only ends a search (at its last step every beam counts as finished), so
    the two calls agree while the search stops before that step. Where it stops is
    CTranslate2's decoding.cc's rule (for these `translate_batch` options, its
    defaults where absent):

    - Greedy search (beam_size 1) stops where its one hypothesis ends: the
      requested number.
    - Beam search with a length penalty and no coverage penalty stops once
      round(beam_size x patience) hypotheses have finished, and returns the best
      `num_hypotheses` of them: asked for at least that many (`beam_stop_count`),
      it returns one that ended at the step where the search stopped. Their best,
      cut to the requested number, are what that number returns.
    - With length_penalty=0 or a coverage penalty it takes an early exit, once its
      top beam has finished and `num_hypotheses` are collected: a source may stop
      past its cap with every returned hypothesis short of it (9 of the 23 sources
      of tests/export/test_ctranslate2_joint.py at beam 4), so None.
    - Sampling: None, a second call draws other tokens.
    """
    if _samples(options):
        return None
    requested = options.get("num_hypotheses", 1)
    if options.get("beam_size", 2) == 1 and not options.get("prefix_bias_beta", 0):
        return requested  # CTranslate2's greedy search
    if options.get("length_penalty", 1.0) == 0 or options.get("coverage_penalty", 0) != 0:
        return None
    return max(requested, beam_stop_count(options))


@dataclasses.dataclass(frozen=True)
class TrimmedResult:
    """A CTranslate2 result cut to its best hypotheses (its fields, best first)."""

    hypotheses: list
    scores: list      # empty unless return_scores
    attention: list   # empty unless return_attention


def _trimmed(result, count: int) -> TrimmedResult:
    """`result` cut to its `count` best hypotheses (CTranslate2 sorts them best first)."""
    return TrimmedResult(result.hypotheses[:count], result.scores[:count],
                         result.attention[:count])


def t2t_ctranslate2_tokens(subtokens: Sequence[str]) -> List[str]:
    """CTranslate2's token strings for t2t's subtokens, id for id, then `T2T_UNK_TOKEN`.

    Each token is the subtoken string itself, except where a later id has the
    same string: t2t encodes that string to the later id, CTranslate2 would map
    it to the first, so the earlier id gets "<subtoken>\\n<id>" (a string no
    subtoken equals, with a "\\n"), and every token maps back to its own id.
    """
    last = {s: i for i, s in enumerate(subtokens)}
    tokens = [s if last[s] == i else f"{s}\n{i}" for i, s in enumerate(subtokens)]
    return tokens + [T2T_UNK_TOKEN]


def read_export_info(path: str) -> dict:
    """What t2t-exporter recorded for the export version `path` (export.json)."""
    with open(os.path.join(path, EXPORT_INFO), encoding="utf-8") as f:
        return json.load(f)


def recorded_options(path: str) -> dict:
    """The `translate_batch` arguments written by t2t-exporter for `path`."""
    return dict(read_export_info(path)["translate_batch"])


class T2TTokenizer:
    """t2t's SubwordTextEncoder as CTranslate2 tokens, with the two methods of
    `sentencepiece.SentencePieceProcessor` the client uses (`encode(lines,
    out_type=str)`, `decode(tokens)`), so callers treat both kinds alike.

    Args:
      subwords_path: the t2t `*.subwords` file.
      tokens: CTranslate2's vocabulary, id for id (`t2t_ctranslate2_tokens`).
    """

    def __init__(self, subwords_path: str, tokens: Sequence[str]):
        self.text = T2TSubwordText.from_file(subwords_path)
        if len(tokens) != self.text.vocab_size + 1 or tokens[-1] != T2T_UNK_TOKEN:
            raise ValueError(f"{subwords_path} has {self.text.vocab_size} subtokens; the "
                             f"CTranslate2 vocabulary has {len(tokens)} tokens (expected one "
                             f"more, {T2T_UNK_TOKEN!r} last).")
        self.tokens = list(tokens)
        self.ids: Dict[str, int] = {}
        for i, token in enumerate(self.tokens):
            self.ids.setdefault(token, i)  # as CTranslate2 maps them: the first id wins

    def encode(self, lines: Sequence[str], out_type=str) -> List[List[str]]:
        """CTranslate2 tokens of each line by t2t's rules, as written (no EOS: the
        model adds it; `CT2Translator.tokenize` strips lines first)."""
        if out_type is not str:
            raise ValueError("T2TTokenizer.encode gives tokens (out_type=str) only.")
        tokens = self.tokens
        return [[tokens[i] for i in self.text.encode(line)] for line in lines]

    def decode(self, tokens: Sequence[str]) -> str:
        """The text of CTranslate2 output tokens by t2t's rules (up to EOS, PAD dropped;
        the unknown token, which the model never outputs, spells nothing)."""
        unk = len(self.tokens) - 1
        ids = [self.ids.get(token, unk) for token in tokens]
        return self.text.decode_output([i for i in ids if i != unk])


class CT2Translator:
    """An exported CTranslate2 model with its tokenizer (the one export.json names:
    SentencePiece, or t2t's SubwordTextEncoder for a model imported from t2t).

    Args:
      path: an export version directory (`export_dir/<version>`).
      compute_type: CTranslate2's compute type ("default": the saved weights' type,
        "float32", "int8", ...).
      threads: intra-op threads (0: CTranslate2's default).
      inter_threads: batches translated at once (CTranslate2's default: 1).
      **overrides: `translate_batch` arguments replacing the recorded ones.

    Attributes:
      tokenizer: a `sentencepiece.SentencePieceProcessor` or a `T2TTokenizer`;
        both have `encode(lines, out_type=str)` and `decode(tokens)`.
      strip_inputs: whether `tokenize` strips each line first (t2t vocabularies:
        t2t-decoder did, and t2t-lite's decoder does for imported models).
    """

    def __init__(self, path: str, compute_type: str = "default", threads: int = 0,
                 inter_threads: int = 1, **overrides):
        import ctranslate2

        info = read_export_info(path)
        kind = info.get("tokenizer", "sentencepiece")  # exports from before it was recorded
        if kind == "sentencepiece":
            import sentencepiece

            self.tokenizer = sentencepiece.SentencePieceProcessor(
                model_file=os.path.join(path, info.get("sentencepiece", SENTENCEPIECE_FILE)))
        elif kind == "t2t_subwords":
            with open(os.path.join(path, VOCABULARY_FILE), encoding="utf-8") as f:
                tokens = json.load(f)
            self.tokenizer = T2TTokenizer(os.path.join(path, info["t2t_subwords"]), tokens)
        else:
            raise ValueError(f"{os.path.join(path, EXPORT_INFO)} names the tokenizer {kind!r}; "
                             f"this client knows {', '.join(TOKENIZERS)}.")
        self.tokenizer_kind = kind
        self.strip_inputs = kind == "t2t_subwords"
        self.translator = ctranslate2.Translator(path, device="cpu", compute_type=compute_type,
                                                 intra_threads=threads,
                                                 inter_threads=inter_threads)
        self.options = {**info["translate_batch"], **overrides}

    def tokenize(self, lines: Sequence[str]) -> List[List[str]]:
        """CTranslate2 tokens of each line (no EOS: the model adds it): SentencePiece
        pieces of the line as written, or t2t subtokens of the stripped line."""
        if self.strip_inputs:
            lines = [line.strip() for line in lines]
        return self.tokenizer.encode(list(lines), out_type=str)

    def source_lengths(self, pieces: Sequence[Sequence[str]]) -> List[int]:
        """Each source's length as the search sees it: its pieces and the EOS,
        truncated to `max_input_length` (0 or absent: no limit)."""
        limit = self.options.get("max_input_length") or 0
        return [min(len(p) + 1, limit) if limit else len(p) + 1 for p in pieces]

    def translate_results(self, pieces: Sequence[Sequence[str]], batch_size: int = 32,
                          extra_length: Optional[int] = None, **options) -> list:
        """CTranslate2's result of each source (pieces), `options` passed on to
        `translate_batch` (e.g. `num_hypotheses`, `return_scores`).

        `extra_length`: cap each output at its source's length (`source_lengths`:
        both t2t-decoder and CTranslate2 truncate so) + `extra_length` tokens,
        t2t-decoder's rule; None: the recorded `max_decoding_length` for all.

        CTranslate2 takes one `max_decoding_length` per call. Each source gets the
        result of a call under its own cap: one call per distinct cap, or, where
        that is provably the same (`joint_hypotheses`: greedy, or beam search with
        a length penalty and no coverage penalty, not sampling), the sources are
        translated together under the largest cap, asking for at least
        round(beam_size x patience) hypotheses, and only a source whose search came
        within `_CAP_MARGIN` tokens of its own cap is translated again under that
        cap. Such a result never met its cap: its search stopped where one of those
        hypotheses ended. One call per cap cut a batch of 20 Multi30k sentences
        into about 10 calls of 2: 3.9x slower at extra_length=50. Below
        `_JOINT_MIN_EXTRA`, one call per cap.

        Returns:
          Per source, CTranslate2's result, or a `TrimmedResult` with its fields
          where the joint call asked for more hypotheses than `num_hypotheses`.
        """
        options = dict(self.options, **options)
        longest = options["max_decoding_length"]
        caps = [longest if extra_length is None else min(length + extra_length, longest)
                for length in self.source_lengths(pieces)]
        requested = options.get("num_hypotheses", 1)
        # Under a small extra_length most searches meet their cap, so the joint pass
        # would mostly be redone (measured: 0.9x at 5 tokens, 1.4x at 10, 3.9x at 50).
        count = (joint_hypotheses(options)
                 if (extra_length or 0) >= _JOINT_MIN_EXTRA and len(set(caps)) > 1 else None)
        if count is not None:
            options["num_hypotheses"] = count
        results = [None] * len(pieces)
        redo = list(range(len(pieces)))
        # Passes of (cap, the cap whose sources it takes; None: every source left).
        passes = ([(max(caps), None)] if count is not None else []) + [
            (cap, cap) for cap in dict.fromkeys(caps)]  # caps in order of first use
        for cap, only in passes:
            rows = [i for i in redo if only is None or caps[i] == only]
            if not rows:
                continue
            translated = self.translator.translate_batch(
                [pieces[i] for i in rows], max_batch_size=batch_size,
                **dict(options, max_decoding_length=cap))
            for i, result in zip(rows, translated):
                if caps[i] == cap or _longest_hypothesis(result) + _CAP_MARGIN < caps[i]:
                    results[i] = result
            redo = [i for i in redo if results[i] is None]
        if count is not None and count > requested:
            results = [_trimmed(result, requested) for result in results]
        return results

    def translate_pieces(self, pieces: Sequence[Sequence[str]], batch_size: int = 32,
                         extra_length: Optional[int] = None) -> List[List[str]]:
        """Best hypothesis (pieces) of each source (pieces); `extra_length` as in
        `translate_results`."""
        return [result.hypotheses[0]
                for result in self.translate_results(pieces, batch_size, extra_length)]

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
