"""The TensorFlow engine: a model directory's `Translator`, one batch at a time.

    engine = TFEngine.load("runs/ende", "beam_size=4,alpha=0.6", checkpoint_average=5)
    engine.translate(["Hello world.", "How are you?"])  # -> [Translation, Translation]

Each `Translation` holds what t2t-decoder writes for that line (`line`) and
what the SavedModel's signatures return for it (`hypotheses`, `scores`: every
beam, best first, raw as the search decodes them). A batch is encoded and
searched exactly as `decoding.decode_lines` does its batches, so a sentence
gets the decoder's output. Several threads may call `translate` at once.
"""

import dataclasses
from typing import Callable, List, Optional, Sequence

import tensorflow as tf

from t2t_lite import checkpoints
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode import decoding
from t2t_lite.decode.search import SearchParams, search_for_problem
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError
from t2t_lite.tf_api_lock import TF_API_LOCK

WARM_UP_SENTENCE = "Hello world."


def warm_up_sentence(vocab) -> str:
    """The sentence an engine warms up with: WARM_UP_SENTENCE, after the first language
    token of a multilingual Marian model's vocabulary, which refuses a line without one
    (`Vocabulary.language_tokens`)."""
    tokens = vocab.language_tokens
    return f"{tokens[0]} {WARM_UP_SENTENCE}" if tokens else WARM_UP_SENTENCE


def decode_settings(model_dir: model_dir_lib.ModelDir, decode_hparams: str,
                    alignments_refusal: str):
    """(problem, `SearchParams`, `DecodeOptions`) of `model_dir` under t2t-decoder's
    --decode_hparams, for an engine that writes no alignments.

    Raises:
      T2TError: bad decode hparams, or `alignments=true` (`alignments_refusal`).
    """
    problem = model_dir.problem()
    params, options = decoding.parse_decode_hparams(SearchParams.for_problem(problem),
                                                    decode_hparams)
    if options.alignments:
        raise T2TError(alignments_refusal)
    return problem, params, options


@dataclasses.dataclass(frozen=True)
class Translation:
    """One sentence's result."""

    line: str                 # t2t-decoder's output line for it
    hypotheses: List[str]     # every beam, best first (the SavedModel's `nbest` outputs)
    scores: List[float]       # their scores

    @classmethod
    def blank(cls, beams: int) -> "Translation":
        """The result of an empty or whitespace-only line (not searched)."""
        return cls("", [""] * beams, [0.0] * beams)

    @property
    def best(self) -> str:
        """The SavedModel's `serving_default` output."""
        return self.hypotheses[0]


def subword_lengths(vocab, texts: Sequence[str], limit: Optional[int]) -> List[int]:
    """Each text's length in `vocab`'s subwords, EOS included, at most `limit` (None:
    no limit), as an in-graph search encodes it."""
    with TF_API_LOCK:  # a request's thread, beside the batch workers
        lengths = vocab.encode_inputs(
            tf.constant(list(texts), dtype=tf.string)).row_lengths().numpy().tolist()
    return [min(n, limit) if limit else n for n in lengths]


def translate_nonblank(texts: Sequence[str], blank: Translation,
                       translate: Callable[[List[str]], List[Translation]]) -> List[Translation]:
    """Each text's result: `blank` for an empty or whitespace-only one (not searched),
    `translate` of the others (one call, in order, not made if there are none)."""
    results = [blank] * len(texts)
    todo = [i for i, text in enumerate(texts) if text.strip()]
    if todo:
        for i, result in zip(todo, translate([texts[i] for i in todo])):
            results[i] = result
    return results


def written_translation(problem, options: decoding.DecodeOptions, text: str,
                        hypotheses: Sequence[str], scores: Sequence[float]) -> Translation:
    """`text`'s result from its beams (best first): the line t2t-decoder writes
    (the problem's `postprocess`, `decoding.format_hypotheses`), and the raw beams."""
    written = [problem.postprocess(h, text) for h in hypotheses]
    return Translation(decoding.format_hypotheses(written, scores, options), list(hypotheses),
                       [float(s) for s in scores])


class TFEngine:
    """Translates batches with t2t-lite's own search (TensorFlow).

    Args:
      translator: the search and vocabulary.
      problem: the model's problem (its `postprocess` shapes the decoder's lines).
      options: the decode options that format a line (`return_beams`, `write_beam_scores`).
      version: the model's version (the step of the checkpoint it was restored from).
    """

    def __init__(self, translator: Translator, problem, options: decoding.DecodeOptions,
                 version: int):
        self.translator = translator
        self.problem = problem
        self.options = options
        self.version = version
        self.beams = 1 if translator.search.params.sampling_temperature > 0 else \
            translator.search.params.beam_size

    @classmethod
    def load(cls, model_dir: model_dir_lib.ModelDir, decode_hparams: str = "",
             checkpoint_average: int = 1, checkpoint_path: Optional[str] = None,
             precision: str = "float32") -> "TFEngine":
        """The engine of `model_dir`, as t2t-decoder would load it with these flags.

        Raises:
          T2TError: a missing model directory or checkpoint, bad decode hparams, or
            `alignments=true` (not served).
        """
        problem, params, options = decode_settings(
            model_dir, decode_hparams, "alignments=true is not served: t2t-server writes "
            "translations (and scores) only.")
        model, used = model_dir.load_model(checkpoint_path, checkpoint_average, precision)
        vocab = model_dir.vocab()
        version = max(checkpoints.checkpoint_step(path) for path in used)
        search = search_for_problem([model], problem, vocab, params)
        return cls(Translator(search, vocab), problem, options, version)

    def token_lengths(self, texts: Sequence[str]) -> List[int]:
        """Each text's length in subwords as the search sees it (EOS included, truncated
        to the input limit)."""
        return subword_lengths(self.translator.vocab, texts, self.translator.max_input_length)

    def blank(self) -> Translation:
        """The result of an empty or whitespace-only line (not searched)."""
        return Translation.blank(self.beams)

    def translate(self, texts: Sequence[str]) -> List[Translation]:
        """Translates one batch; blank texts give `blank()`."""
        return translate_nonblank(texts, self.blank(), self._search)

    def _search(self, texts: List[str]) -> List[Translation]:
        inputs = self.translator.encode(texts)  # [B, S]
        hypotheses, scores, _ = self.translator.nbest(inputs)
        return [written_translation(self.problem, self.options, text, hyps, sc)
                for text, hyps, sc in zip(texts, hypotheses, scores)]

    def warm_up(self) -> None:
        """Translates one sentence (the search's first call traces its graph)."""
        self.translate([warm_up_sentence(self.translator.vocab)])
