"""t2t-decoder beside its CTranslate2 export on a test set: speed, BLEU, identical lines.

    python bench/ctranslate2_vs_decoder.py --output_dir=M --source=test.en \\
        --reference=test.de [--decode_hparams=beam_size=4,alpha=0.6,length_penalty=fairseq] \\
        [--batch_size=32] [--precisions=float32,bfloat16] \\
        [--compute_types=float32,int8] [--threads=2] [--parallel_batches=0]
        [--uncompacted] [--xla] [--diffs=diffs.txt]

Converts the model directory with t2t-exporter's converter
(`export_ctranslate2`, float32 weights, into a temporary directory), then
translates the source file with:
  - t2t-lite as t2t-decoder does (`decode_lines`: sorted by length, batches of
    `--batch_size`, `--parallel_batches` of them at once, default one per
    thread, each TensorFlow op on its share of `--threads`), computing in each
    of `--precisions`;
  - CTranslate2 as a user of the export does (`CT2Translator`: SentencePiece
    in Python, `translate_batch` with the arguments t2t-exporter recorded for
    `--decode_hparams`), in each of `--compute_types`, once with all threads
    on one batch (`intra_threads`, its default use) and once with as many
    batches at once as t2t-lite (`inter_threads`, each on its share).
Prints sentences/s (wall time of the whole file after one warm-up batch),
cased sacreBLEU, and the share of lines identical to t2t-lite float32's; with
`--diffs`, writes each differing line (source, t2t-lite, CTranslate2) there.
Also counts the lines whose SentencePiece pieces differ between
tensorflow-text (t2t-lite) and Python sentencepiece (the export's users).
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from t2t_lite import model_dir as model_dir_lib  # noqa: E402
from t2t_lite.data.vocab import SubwordVocab  # noqa: E402
from t2t_lite.decode.decoding import DecodeOptions, decode_lines  # noqa: E402
from t2t_lite.decode.search import SearchParams, search_for_problem  # noqa: E402
from t2t_lite.decode.translator import Translator  # noqa: E402
from t2t_lite.export.ctranslate2_client import CT2Translator  # noqa: E402
from t2t_lite.export.ctranslate2_export import export_ctranslate2  # noqa: E402
from t2t_lite.metrics.bleu import corpus_bleu  # noqa: E402
from t2t_lite.textio import read_lines  # noqa: E402
from t2t_lite.threads import usable_cores  # noqa: E402


def timed(fn, warm_up):
    """(result of fn(), seconds), after calling warm_up() once (tracing, allocation)."""
    warm_up()
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def t2t_lite_outputs(model_dir, lines, params, batch_size, precision, compact=None,
                     jit_compile=False, parallel_batches=0):
    """((outputs, work), seconds): work is the search's useful/computed decoder rows.
    With `jit_compile`, as `t2t-decoder --jit_compile` (batches padded to
    `batch_size` rows); the seconds include compiling the shapes after the first."""
    model, _ = model_dir.load_model(precision=precision)
    vocab, problem = model_dir.vocab(), model_dir.problem()
    search = search_for_problem(model, problem, vocab, params, jit_compile=jit_compile,
                                compact=compact)
    translator = Translator(search, vocab, pad_rows=batch_size if jit_compile else 0)
    options = DecodeOptions(batch_size=batch_size, parallel_batches=parallel_batches)

    def decode():
        search.work.update(useful=0, computed=0)
        return decode_lines(translator, lines, options), dict(search.work)

    return timed(decode, lambda: decode_lines(translator, lines[:batch_size], options))


def ct2_outputs(path, lines, batch_size, compute_type, threads, extra_length,
                inter_threads=1):
    translator = CT2Translator(path, compute_type=compute_type, threads=threads,
                               inter_threads=inter_threads)
    (outputs, seconds) = timed(
        lambda: translator.translate(lines, batch_size, extra_length),
        lambda: translator.translate(lines[:batch_size], batch_size, extra_length))
    return (outputs, None), seconds


def tokenization_differences(model_dir, lines, ct2_path) -> int:
    """Lines whose pieces differ between tensorflow-text and Python sentencepiece."""
    vocab = SubwordVocab.from_file(model_dir.vocab_path)
    tf_pieces = [vocab.pieces(ids[:-1]) for ids in vocab.encode_texts(lines)]
    py_pieces = CT2Translator(ct2_path).tokenize(lines)
    return sum(a != b for a, b in zip(tf_pieces, py_pieces))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,length_penalty=fairseq")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--precisions", default="float32,bfloat16")
    p.add_argument("--compute_types", default="float32,int8")
    p.add_argument("--threads", type=int, default=usable_cores())
    p.add_argument("--parallel_batches", type=int, default=0,
                   help="t2t-lite batches at once (0: one per thread, t2t-decoder's default)")
    p.add_argument("--t2t_max_length", action="store_true",
                   help="CTranslate2 outputs capped at input length + extra_length as "
                        "t2t-decoder's (sources grouped by length); default: one "
                        "max_decoding_length for all, as a plain translate_batch call")
    p.add_argument("--bleu_tokenize", default="13a",
                   help="sacreBLEU tokenizer (char for one-word outputs such as numbers)")
    p.add_argument("--uncompacted", action="store_true",
                   help="also time t2t-lite float32 with finished sentences kept in the batch")
    p.add_argument("--xla", action="store_true",
                   help="also time t2t-lite float32 compiled with XLA (t2t-decoder --jit_compile)")
    p.add_argument("--diffs", help="write the lines that differ from t2t-lite float32 here")
    args = p.parse_args()
    concurrent = args.parallel_batches or args.threads
    tf.config.threading.set_intra_op_parallelism_threads(max(1, args.threads // concurrent))
    lines = read_lines(args.source, strip="newline")
    references = read_lines(args.reference, strip="newline")
    model_dir = model_dir_lib.ModelDir.open(args.output_dir)
    problem = model_dir.problem()
    params = SearchParams.for_problem(problem).parse(args.decode_hparams)
    export_base = tempfile.mkdtemp(prefix="ct2-export-")
    ct2_path = export_ctranslate2(model_dir, export_base, params)

    runs = {}
    for precision in args.precisions.split(","):
        runs[f"t2t-lite {precision}"] = t2t_lite_outputs(
            model_dir, lines, params, args.batch_size, precision,
            parallel_batches=concurrent)
    if args.uncompacted:
        runs["t2t-lite float32 uncompacted"] = t2t_lite_outputs(
            model_dir, lines, params, args.batch_size, "float32", compact=False,
            parallel_batches=concurrent)
    if args.xla:
        runs["t2t-lite float32 XLA"] = t2t_lite_outputs(
            model_dir, lines, params, args.batch_size, "float32", jit_compile=True,
            parallel_batches=concurrent)
    for compute_type in args.compute_types.split(","):
        extra_length = params.extra_length if args.t2t_max_length else None
        runs[f"CTranslate2 {compute_type}"] = ct2_outputs(
            ct2_path, lines, args.batch_size, compute_type, args.threads, extra_length)
        if concurrent > 1:
            runs[f"CTranslate2 {compute_type} x{concurrent} batches"] = ct2_outputs(
                ct2_path, lines, args.batch_size, compute_type,
                max(1, args.threads // concurrent), extra_length, inter_threads=concurrent)
    baseline = next(iter(runs.values()))[0][0]
    print(f"{len(lines)} lines, {args.threads} threads, batch {args.batch_size}, "
          f"t2t-lite {concurrent} batches at once, "
          f"decode_hparams {args.decode_hparams}, CTranslate2 max length: "
          + ("input + extra_length" if args.t2t_max_length else "max_decoding_length"))
    print(f"{'system':<30} {'sentences/s':>11} {'BLEU':>6} {'identical to first':>19} "
          f"{'useful/computed rows':>24}")
    for name, ((outputs, work), seconds) in runs.items():
        bleu, _ = corpus_bleu(outputs, references, args.bleu_tokenize)
        same = sum(a == b for a, b in zip(outputs, baseline))
        rows = (f"{work['useful']}/{work['computed']} "
                f"({100 * work['useful'] / max(work['computed'], 1):.0f}%)" if work else "")
        print(f"{name:<30} {len(lines) / seconds:>11.1f} {bleu.score:>6.2f} "
              f"{same:>9}/{len(lines)} ({100 * same / len(lines):.1f}%) {rows:>24}")
    print("lines tokenized differently by Python sentencepiece:",
          tokenization_differences(model_dir, lines, ct2_path))
    if args.diffs:
        ct2_float32 = runs.get("CTranslate2 float32", ((baseline, None), 0))[0][0]
        with open(args.diffs, "w", encoding="utf-8") as f:
            for source, a, b in zip(lines, baseline, ct2_float32):
                if a != b:
                    f.write(f"SRC {source}\nT2T {a}\nCT2 {b}\n\n")


if __name__ == "__main__":
    main()
