"""Exporting a model directory as a SavedModel that TF Serving loads as is.

    path = export("runs/ende", "exports/ende", SearchParams(beam_size=4, alpha=0.6))
    # -> "exports/ende/3" (the next integer version)

One graph does everything a client would otherwise have to do:

    raw text --SentencePiece--> ids --encoder + beam search--> ids --SentencePiece--> text

Signatures:
  serving_default: inputs  tf.string [batch]  raw sentences (UTF-8)
                   -> outputs tf.string  [batch]  best translation
                      scores  float32    [batch]  its log probability / length penalty
  nbest:           inputs  tf.string [batch]
                   -> outputs tf.string  [batch, beam]  all beams, best first
                      scores  float32    [batch, beam]

Behaviour (the same as `Translator.translate` and t2t-decoder):
  - the search parameters (`SearchParams`: beam_size, alpha, extra_length,
    min_length, length_penalty, max_input_length, sampling, tree_constraint)
    are fixed at export time; t2t-decoder's output options (batch_size,
    return_beams, write_beam_scores) are not decode hparams here (an error):
    `nbest` returns every beam with its score;
  - the problem's search constraint (parsing: well-formed trees) runs in the
    graph; its post-processing does not (a parsing model returns linearized
    trees: de-linearize on the client);
  - an input longer than `max_input_length` subwords (default: the model's
    `max_length`, EOS included; none for a model imported from t2t) keeps its
    first `max_input_length - 1` subwords and the EOS; the rest is not translated;
  - an empty or whitespace-only input (Python's `str.isspace` set) gives an
    empty output with score 0.0 (every beam, in `nbest`);
  - a batch may mix lengths; padding does not change any translation.

Only TensorFlow and tensorflow-text ops are in the graph (no py_function): a
client needs `import tensorflow_text` before loading it, TF Serving a build
that includes tensorflow-text's ops. The SentencePiece model proto is an
attribute of the tokenizer op, i.e. embedded in saved_model.pb; its file is
also stored in assets/ and the model directory's hparams.json / problem.json
in assets.extra/ for provenance, with export.json (decode hparams,
checkpoints, versions).
"""

import dataclasses
import os
import time
from typing import Optional, Union

import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode.search import Search, SearchParams, search_for_problem
from t2t_lite.decode.translator import truncate
from t2t_lite.export import versions

# Python's str.isspace() set in RE2 syntax: \t..\r, \x1c..\x1f, \x85 and Unicode separators.
_BLANK_PATTERN = r"[\t-\r\x{1c}-\x{1f}\x{85}\p{Z}]*"


class TranslationModule(tf.Module):
    """Model weights, tokenizer and search in one `tf.Module` with serving signatures.

    Args:
      search: the search over the model's weights, its parameters fixed in the graph.
      vocab: the model's `SubwordVocab`.
      vocab_file: the vocabulary file to store as an asset (optional).
    """

    def __init__(self, search: Search, vocab, vocab_file: Optional[str] = None):
        super().__init__(name="t2t_lite_translation")
        # The TF1/C++ loader (TF Serving, saved_model_cli run) restores variables by
        # the graph's handles: tracking the tf.Variables beneath Keras 3's variables
        # saves them as plain resource variables (see STACK-NOTES.md). The Keras model
        # itself is not tracked: it only adds unused functions to the SavedModel.
        self.model_variables = [v.value for model in search.models for v in model.variables]
        self.vocab = vocab  # tracks the SentencepieceOp resource (re-created on load)
        if vocab_file:
            self.vocab_file = tf.saved_model.Asset(vocab_file)
        max_input_length = search.max_input_length

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
                     autograph=False)
        def nbest(inputs):
            """inputs tf.string [B] -> {outputs: tf.string [B, beam], scores: float32 [B, beam]}."""
            # [B, (S)], EOS last, truncated as Translator.encode does (imported models:
            # no limit, as t2t's exporter)
            ids = truncate(vocab.encode_inputs(inputs), max_input_length)
            ids, scores = search.search(ids.to_tensor())  # [B, beam, T], [B, beam]
            shape = tf.shape(ids)
            texts = tf.reshape(vocab.decode(tf.reshape(ids, [-1, shape[2]])), shape[:2])
            blank = tf.strings.regex_full_match(inputs, _BLANK_PATTERN)[:, tf.newaxis]  # [B, 1]
            texts = tf.where(blank, tf.constant(""), texts)  # [B, beam]
            scores = tf.where(blank, tf.constant(0.0), scores)
            return {"outputs": texts, "scores": scores}

        nbest_fn = nbest.get_concrete_function()

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
                     autograph=False)
        def serve(inputs):
            """inputs tf.string [B] -> {outputs: tf.string [B], scores: float32 [B]}."""
            result = nbest_fn(inputs)  # calls the one traced graph, not a second trace
            return {"outputs": result["outputs"][:, 0], "scores": result["scores"][:, 0]}

        # Plain attributes would make tf.saved_model.save trace both functions a second
        # time (as object methods), doubling the graph; the signatures are enough.
        object.__setattr__(self, "_signatures", {"serving_default": serve.get_concrete_function(),
                                                 "nbest": nbest_fn})

    def signatures(self) -> dict:
        """The signatures to save: `serving_default` and `nbest` (concrete functions)."""
        return dict(self._signatures)


def _resolve_params(problem, decode_params: Union[SearchParams, str, None]) -> SearchParams:
    """A `SearchParams` as given, or the problem's defaults with "a=1,b=2" overrides."""
    if isinstance(decode_params, SearchParams):
        return decode_params
    return SearchParams.for_problem(problem).parse(decode_params or "")


@dataclasses.dataclass
class ExportSource:
    """What an export is made of: the loaded model and where it came from."""

    problem: object        # the registered `Problem`
    params: SearchParams   # the search parameters (fixed in a SavedModel)
    model: object          # the Keras model, weights restored or averaged
    vocab: object          # its `SubwordVocab`
    info: dict             # provenance for export.json


def load_source(model_dir: model_dir_lib.ModelDir, decode_params: Union[SearchParams, str, None] = None,
                checkpoint_path: Optional[str] = None,
                checkpoint_average: int = 1) -> ExportSource:
    """Loads `model_dir`'s model (the chosen or averaged checkpoints) for an export.

    Raises:
      T2TError: missing model directory or checkpoint, bad decode hparams.
    """
    problem = model_dir.problem()
    params = _resolve_params(problem, decode_params)
    # the checkpoints actually read
    model, used = model_dir.load_model(checkpoint_path, checkpoint_average)
    vocab = model_dir.vocab()
    info = {"model_dir": os.path.abspath(model_dir.path), "checkpoints": used,
            "decode_params": dataclasses.asdict(params),
            "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return ExportSource(problem, params, model, vocab, info)


def export(model_dir: model_dir_lib.ModelDir, export_dir: str,
           decode_params: Union[SearchParams, str, None] = None,
           checkpoint_path: Optional[str] = None, checkpoint_average: int = 1) -> str:
    """Writes a servable SavedModel of `model_dir` to `export_dir/<next version>/`.

    The SavedModel is written into a hidden temporary directory inside
    `export_dir` and renamed to its version number when complete, so a server
    polling `export_dir` never sees a half-written version.

    Args:
      model_dir: a model directory written by t2t-trainer or t2t-avg-checkpoints.
      export_dir: the base directory of versions (created if missing).
      decode_params: a `SearchParams`, or "beam_size=4,alpha=0.6"-style overrides
        of the problem's decode defaults (None: the defaults).
      checkpoint_path: a `ckpt-N` prefix (default: the latest).
      checkpoint_average: average the last N checkpoints (up to the chosen one).

    Returns:
      The path of the written version, e.g. `export_dir/3`.

    Raises:
      T2TError: missing model directory or checkpoint, unwritable export directory,
        bad decode hparams.
    """
    source = load_source(model_dir, decode_params, checkpoint_path, checkpoint_average)
    versions.prepare_export_dir(export_dir)  # before the slow part
    module = TranslationModule(
        search_for_problem(source.model, source.problem, source.vocab, source.params),
        source.vocab, model_dir.vocab_path)
    info = dict(source.info, tensorflow=tf.__version__)

    def write(tmp: str) -> None:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        versions.write_provenance(model_dir, tmp, info)

    return versions.write_version(export_dir, write)
