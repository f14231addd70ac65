"""The CTranslate2 engine: t2t-server's and t2t-decoder's --engine=ctranslate2.

    engine = CT2Engine.load("runs/ende", "beam_size=4,alpha=0.6", quantization="int8",
                            workers=2)
    print(engine.notice)  # what CTranslate2 does differently from t2t-decoder, one line
    engine.translate(["Hello world.", ""])  # -> [Translation, Translation]

The model is converted once by t2t-exporter's converter into a cache
(`t2t_lite.export.ctranslate2_cache`), then translated by CTranslate2 with the
`translate_batch` arguments the export documents for these --decode_hparams
(`ctranslate2_export.translate_options`), with every beam and its score
(`num_hypotheses`, `return_scores`). What t2t-decoder adds around a search is
kept: blank lines give "" without decoding, the problem's `postprocess`, the
written line (`decoding.format_hypotheses`), and extra_length (each output at
most its source's length + extra_length: `CT2Translator.translate_results` gives
each source the result of a call under its own cap, by one call under the
batch's largest cap and again under its own cap only for a source whose search
came near it where that is provably the same, i.e. with a length penalty, and
by one call per cap at alpha=0, where CTranslate2's early exit would let a
sentence's answer depend on its batch-mates).

Where CTranslate2's search cannot do what t2t-decoder does (see
ctranslate2_export's docstring), the option is mapped as the export documents
and `mapped_options` names it (`notice`, printed at start-up); alignments are
refused. It has `TFEngine`'s methods, so the batcher and the HTTP app use it
unchanged. Several threads may call `translate` at once: CTranslate2 runs
`workers` batches at once (`inter_threads`), each on its share of the cores.
"""

from typing import List, Optional, Sequence

from t2t_lite import checkpoints
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.decode import decoding
from t2t_lite.decode.search import SearchParams, input_limit
from t2t_lite.export import ctranslate2_cache, ctranslate2_export
from t2t_lite.export.ctranslate2_client import CT2Translator
from t2t_lite.serve.engine import (WARM_UP_SENTENCE, Translation, decode_settings,
                                   written_translation)
from t2t_lite.threads import usable_cores


def mapped_options(params: SearchParams, hparams) -> List[str]:
    """The decode options CTranslate2 does not honour as t2t-decoder does, each with
    what it becomes (the mapping of ctranslate2_export's docstring); [] if none."""
    mapped = []
    sampling = params.sampling_temperature > 0
    if params.length_penalty == "gnmt" and params.alpha > 0 and not sampling:
        mapped.append(f"alpha={params.alpha:g} with length_penalty=gnmt -> length_penalty="
                      f"{params.alpha:g} (score / length ** alpha: CTranslate2 has no gnmt "
                      "penalty; length_penalty=fairseq is exact)")
    if params.beam_size > 1 and not sampling:
        if params.alpha == 0:  # CTranslate2's early exit without a length penalty
            mapped.append(f"stop_rule={params.stop_rule} -> CTranslate2's rule at alpha=0 "
                          "(stop once its best beam has finished)")
        elif params.stop_rule != "beam_full":
            mapped.append(f"stop_rule={params.stop_rule} -> CTranslate2's rule (stop at "
                          "beam_size finished hypotheses, as stop_rule=beam_full)")
        mapped.append(f"beam_size={params.beam_size} -> CTranslate2's beam search (EOS only "
                      "among the beam_size best candidates of a step, t2t-lite's among 2 x "
                      "beam_size; a hypothesis cut at the maximum length counts as finished)")
    if not input_limit(params.max_input_length, [hparams.max_length]):
        mapped.append(f"max_input_length={params.max_input_length} (no limit) -> "
                      f"max_input_length={ctranslate2_export.position_rows(hparams)} (the "
                      "longest input CTranslate2 can encode)")
    if sampling:
        mapped.append(f"sampling_seed={params.sampling_seed} -> CTranslate2's random "
                      "generator seeded with it (not t2t-decoder's samples)")
    for name in ("forbid_pad", "forced_eos", "renormalize", "max_output_length"):
        if getattr(params, name):
            mapped.append(f"{name}={getattr(params, name)} -> not applied (transformers' "
                          "rule; CTranslate2's search and limits decide)")
    if params.t2t_scores:
        mapped.append("t2t_scores=true -> CTranslate2's scores (tensor2tensor's are not "
                      "reproduced)")
    return mapped


class CT2Engine:
    """Translates batches with CTranslate2 (see the module docstring).

    Args:
      path: the converted model, an entry of the conversion cache.
      client: that model, its tokenizer and `translate_batch` arguments.
      problem: the model's problem (its `postprocess` shapes the decoder's lines).
      options: the decode options that format a line (`return_beams`, `write_beam_scores`).
      version: the step of the (last) checkpoint the model was converted from.
      extra_length: each output at most its source's length + this many tokens.
      notice: one line: the model's path and the options mapped (`mapped_options`),
        or that none are.
    """

    def __init__(self, path: str, client: CT2Translator, problem,
                 options: decoding.DecodeOptions, version: int, extra_length: int,
                 notice: str):
        self.path = path
        self.client = client
        self.problem = problem
        self.options = options
        self.version = version
        self.extra_length = extra_length
        self.notice = notice
        self.beams = client.options["beam_size"]

    @classmethod
    def load(cls, model_dir: model_dir_lib.ModelDir, decode_hparams: str = "",
             checkpoint_average: int = 1, checkpoint_path: Optional[str] = None,
             quantization: str = "float32", workers: int = 1) -> "CT2Engine":
        """The engine of `model_dir` with these t2t-decoder flags, converting the model
        unless the cache holds it.

        Args:
          quantization: the converted weights' type (t2t-exporter's --quantization).
          workers: batches CTranslate2 translates at once (`inter_threads`); each
            gets an equal share of the usable cores (`intra_threads`).

        Raises:
          T2TError: bad decode hparams, `alignments=true`, and the conversion's errors.
        """
        problem, params, options = decode_settings(
            model_dir, decode_hparams, "alignments=true needs the TF engine: CTranslate2's "
            "attention is not mapped to words; drop --engine=ctranslate2.")
        path, used = ctranslate2_cache.cached_conversion(
            model_dir, checkpoint_path, checkpoint_average, quantization, params.tree_constraint)
        hparams = model_dir.hparams
        mapped = mapped_options(params, hparams)
        if params.sampling_temperature > 0:
            import ctranslate2

            ctranslate2.set_random_seed(params.sampling_seed)
        search = ctranslate2_export.translate_options(params, hparams)
        client = CT2Translator(path, threads=max(1, usable_cores() // max(1, workers)),
                               inter_threads=max(1, workers), **search)
        notice = (f"CTranslate2 model {path}; " +
                  ("; ".join(mapped) if mapped else "every decode option as t2t-decoder's"))
        return cls(path, client, problem, options, max(map(checkpoints.checkpoint_step, used)),
                   params.extra_length, notice)

    def token_lengths(self, texts: Sequence[str]) -> List[int]:
        """Each text's length in CTranslate2 tokens as the search sees it (EOS included,
        truncated to the input limit)."""
        return self.client.source_lengths(self.client.tokenize(texts))

    def blank(self) -> Translation:
        """The result of an empty or whitespace-only line (not searched)."""
        return Translation.blank(self.beams)

    def translate(self, texts: Sequence[str]) -> List[Translation]:
        """Translates `texts` (batches of the decode options' `batch_size`, each output
        capped at its source's length + extra_length); blank texts give `blank()`."""
        results = [self.blank()] * len(texts)
        todo = [i for i, text in enumerate(texts) if text.strip()]
        outputs = self.client.translate_results(
            self.client.tokenize([texts[i] for i in todo]), self.options.batch_size,
            self.extra_length, num_hypotheses=self.beams, return_scores=True)
        for i, output in zip(todo, outputs):
            hypotheses = [self.client.tokenizer.decode(h) for h in output.hypotheses]
            results[i] = written_translation(self.problem, self.options, texts[i], hypotheses,
                                             output.scores)
        return results

    def warm_up(self) -> None:
        """Translates one sentence (loads CTranslate2's kernels before the first request)."""
        self.translate([WARM_UP_SENTENCE])
