"""Exporting a model directory as a CTranslate2 model (t2t-exporter --format=ctranslate2).

    path = export_ctranslate2("runs/ende", "exports/ende-ct2", quantization="int8")
    # -> "exports/ende-ct2/1": config.json, model.bin, shared_vocabulary.json,
    #    sentencepiece.model, t2t_lite/{hparams,problem,export}.json

For a model imported from tensor2tensor (t2t-import), whose vocabulary is
t2t's SubwordTextEncoder file, the version holds that file under its own name
(e.g. vocab.translate_ende_multi30k.8192.subwords) instead of
sentencepiece.model, the CTranslate2 tokens are t2t's subtoken strings plus
one unknown token of their own (`ctranslate2_client.t2t_ctranslate2_tokens`),
and a user needs `ctranslate2` and the pure-Python `t2t_subwords_text` (see
`ctranslate2_client.CT2Translator`). export.json says which ("tokenizer":
"sentencepiece" with "sentencepiece": its file, or "t2t_subwords" with
"t2t_subwords": its file).

For a t2t-lite model a user needs only `ctranslate2` and `sentencepiece`:

    sp = sentencepiece.SentencePieceProcessor(model_file=f"{path}/sentencepiece.model")
    translator = ctranslate2.Translator(path)
    results = translator.translate_batch(sp.encode(lines, out_type=str), **options)
    outputs = [sp.decode(r.hypotheses[0]) for r in results]

with `options` = `translate_options(search_params, hparams)`, also written to
t2t_lite/export.json as "translate_batch". The mapping of t2t-decoder's
--decode_hparams (`SearchParams`) to `translate_batch` arguments:

  beam_size                 -> beam_size
  alpha, length_penalty=... -> length_penalty=alpha: CTranslate2 divides by
                               length ** alpha, length counting EOS, which is
                               t2t-lite's "fairseq" penalty. tensor2tensor's
                               "gnmt" ((5 + length) / 6) ** alpha has no
                               equivalent: alpha is passed as is (the nearest
                               form) and export.json says so.
  min_length                -> min_decoding_length (CTranslate2's default is 1)
  max_input_length          -> max_input_length (both keep the first N - 1
                               pieces and EOS); no limit (-1, imported models)
                               -> the position table's rows, the longest input
                               CTranslate2 can encode (`position_rows`)
  extra_length              -> no equivalent: CTranslate2's maximum output
                               length is one number per call, not input length
                               + extra_length; max_decoding_length is set to the
                               model's max_length.
  sampling_temperature>0    -> sampling_temperature, sampling_topk=top_k (0: all),
                               beam_size=1

Differences of the search itself (not of the model: teacher-forced log
probabilities agree to ~1e-6, tests/export/test_ctranslate2.py): with a length
penalty CTranslate2 collects the first beam_size finished hypotheses (beam_size x
patience) and stops, and with length_penalty=0 (alpha=0) it stops once its best
beam has finished and num_hypotheses are collected (its decoding.cc's early
exit; t2t-lite stops when no alive hypothesis can beat the finished ones); it
registers EOS only among the beam_size best candidates of a step (t2t-lite:
among 2 x beam_size), and counts a hypothesis cut off at the maximum length as
finished. Blank lines: t2t-lite returns "" without decoding; CTranslate2
translates the lone EOS.
"""

import os
import shutil
from typing import Optional, Union

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.data.t2t_subwords import T2TSubwordVocab
from t2t_lite.data.t2t_text_encoders import T2TByteVocab, T2TTokenVocab
from t2t_lite.decode.search import SearchParams, input_limit
from t2t_lite.errors import T2TError
from t2t_lite.export import versions
from t2t_lite.export.ctranslate2_client import (PROVENANCE_DIR, SENTENCEPIECE_FILE, T2T_UNK_TOKEN,
                                                t2t_ctranslate2_tokens)
from t2t_lite.export.ctranslate2_spec import (DEFAULT_MAX_POSITIONS, check_convertible,
                                              transformer_spec, unwritten_options)
from t2t_lite.export.exporter import load_source

QUANTIZATIONS = ("float32", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16",
                 "float16", "bfloat16")
INSTALL_HINT = "pip install -e '.[ctranslate2]'"


def require_ctranslate2():
    """The `ctranslate2` module, or a one-line `T2TError` saying what to install."""
    try:
        import ctranslate2
    except ImportError:
        raise T2TError("--format=ctranslate2 needs the ctranslate2 package, an optional extra: "
                       f"{INSTALL_HINT}") from None
    return ctranslate2


def position_rows(hparams) -> int:
    """Rows of the exported position table: positions the model's outputs (and
    CTranslate2's default inputs) may reach."""
    return max(DEFAULT_MAX_POSITIONS, hparams.max_length)


def translate_options(params: SearchParams, hparams) -> dict:
    """`ctranslate2.Translator.translate_batch` arguments for t2t-decoder's `params`
    (see the module docstring for what maps to what)."""
    options = {"beam_size": params.beam_size, "length_penalty": float(params.alpha),
               "min_decoding_length": params.min_length,
               "max_input_length": (input_limit(params.max_input_length, [hparams.max_length])
                                    or position_rows(hparams)),
               "max_decoding_length": hparams.max_length}
    if params.sampling_temperature > 0:
        options.update(beam_size=1, sampling_temperature=float(params.sampling_temperature),
                       sampling_topk=params.top_k)
    return options


def check_quantization(quantization: str) -> None:
    """Refuses a --quantization CTranslate2's converter does not know, in one line."""
    if quantization not in QUANTIZATIONS:
        raise T2TError(f"Unknown --quantization {quantization!r}; choose from "
                       f"{', '.join(QUANTIZATIONS)}.")


def check_problem(problem, params: SearchParams, vocab) -> None:
    """Refuses a problem whose search CTranslate2 cannot run (a constrained one)."""
    if params.tree_constraint and problem.search_constraint(vocab) is not None:
        raise T2TError(f"{problem.name} constrains its search (see its search_constraint), "
                       "which CTranslate2 cannot run; export a SavedModel instead, or pass "
                       "--decode_hparams=tree_constraint=false to convert the bare model.")


def _joined(items) -> str:
    """The items as one phrase: a; a and b; a, b and c."""
    return " and ".join(filter(None, [", ".join(items[:-1]), items[-1]]))


def _marian_refusal(path: str, hparams, search: dict) -> str:
    """Why t2t-lite cannot convert the imported Marian model of `path` (its `hparams`
    and imported decode hparams `search`), one line; "" if nothing stops it."""
    settings = ([f"stop_rule={search['stop_rule']}"]
                if search.get("stop_rule") == "transformers" else [])
    settings += [name for name in ("forbid_pad", "forced_eos", "renormalize")
                 if search.get(name)]
    reasons = [words for _, words in unwritten_options(hparams)]
    why = ([f"it does not write {_joined(reasons)}"] if reasons else []) + (
        [f"CTranslate2 does not search as transformers does ({', '.join(settings)})"]
        if settings else [])
    if not why:
        return ""
    return (f"{path} holds an imported Marian model, which t2t-lite cannot convert for "
            f"CTranslate2 yet: {', and '.join(why)}; translate it with the TensorFlow engine "
            "(the default --engine) or a SavedModel (t2t-exporter's default --format).")


def check_model_dir(model_dir: model_dir_lib.ModelDir) -> None:
    """Refuses, in one line and before anything is loaded or written, a model directory
    whose model this export cannot write (`check_convertible`); for an imported Marian
    model the line says what of it is not written and which of transformers' search
    settings CTranslate2 does not apply.

    Raises:
      T2TError: the model cannot be converted.
    """
    if model_dir.marian_record is not None:
        refusal = _marian_refusal(model_dir.path, model_dir.hparams,
                                  model_dir.marian_record["decode_hparams"])
        if refusal:
            raise T2TError(refusal)
    check_convertible(model_dir.hparams)


def export_ctranslate2(model_dir: model_dir_lib.ModelDir, export_dir: str,
                       decode_params: Union[SearchParams, str, None] = None,
                       checkpoint_path: Optional[str] = None, checkpoint_average: int = 1,
                       quantization: str = "float32") -> str:
    """Writes a CTranslate2 model of `model_dir` to `export_dir/<next version>/`.

    The version is written into a hidden temporary directory and renamed when
    complete (as the SavedModel export is), so a reader never sees half a model.

    Args:
      model_dir: a model directory written by t2t-trainer or t2t-avg-checkpoints.
      export_dir: the base directory of versions (created if missing).
      decode_params: a `SearchParams` or "beam_size=4,alpha=0.6" overrides: not
        part of a CTranslate2 model; recorded as `translate_batch` arguments in
        t2t_lite/export.json.
      checkpoint_path: a `ckpt-N` prefix (default: the latest).
      checkpoint_average: average the last N checkpoints (up to the chosen one).
      quantization: the weights' type in model.bin (`QUANTIZATIONS`); CTranslate2
        can still convert at load time (`compute_type`).

    Returns:
      The path of the written version, e.g. `export_dir/3`.

    Raises:
      T2TError: ctranslate2 not installed, unknown quantization, a model or
        problem CTranslate2 cannot represent, and `export`'s errors.
    """
    ctranslate2 = require_ctranslate2()
    check_quantization(quantization)  # the package and the flags first, then the model
    check_model_dir(model_dir)
    source = load_source(model_dir, decode_params, checkpoint_path, checkpoint_average)
    if isinstance(source.vocab, (T2TByteVocab, T2TTokenVocab)):  # no CTranslate2 tokenizer
        raise T2TError(f"{model_dir.path}: a model of t2t's {source.vocab.t2t_encoder} "
                       "(CHARACTER/TOKEN vocab_type) cannot be exported for CTranslate2, whose "
                       "clients tokenize with SentencePiece or t2t subwords only; export a "
                       "SavedModel instead.")
    check_problem(source.problem, source.params, source.vocab)
    hparams = source.model.hparams
    versions.prepare_export_dir(export_dir)  # before the slow part
    vocab_path = model_dir.vocab_path
    max_positions = position_rows(hparams)
    if isinstance(source.vocab, T2TSubwordVocab):  # imported from tensor2tensor
        vocab_file = os.path.basename(vocab_path)
        tokens = t2t_ctranslate2_tokens(source.vocab.pieces())  # ends with T2T_UNK_TOKEN
        spec = transformer_spec(source.model, tokens[:-1], max_positions,
                                unk_token=T2T_UNK_TOKEN)
        tokenizer = {"tokenizer": "t2t_subwords", "t2t_subwords": vocab_file}
    else:
        vocab_file = SENTENCEPIECE_FILE
        spec = transformer_spec(source.model, source.vocab.pieces(), max_positions)
        tokenizer = {"tokenizer": "sentencepiece", "sentencepiece": SENTENCEPIECE_FILE}
    spec.optimize(quantization=quantization)
    options = translate_options(source.params, hparams)
    info = dict(source.info, format="ctranslate2", quantization=quantization,
                ctranslate2=ctranslate2.__version__, translate_batch=options, **tokenizer)
    if source.params.length_penalty == "gnmt" and source.params.alpha > 0:
        info["note"] = (f"CTranslate2 has no gnmt length penalty ((5 + length) / 6) ** alpha; "
                        f"exported length_penalty={float(source.params.alpha)} (score / "
                        f"length ** alpha) instead; --decode_hparams=length_penalty=fairseq "
                        f"exports what t2t-decoder computes exactly.")

    def write(tmp: str) -> None:
        spec.save(tmp)
        shutil.copyfile(vocab_path, os.path.join(tmp, vocab_file))
        versions.write_provenance(model_dir, tmp, info, subdir=PROVENANCE_DIR)

    return versions.write_version(export_dir, write)
