"""t2t-decoder: translate with a trained model directory.

    t2t-decoder --output_dir=M --decode_hparams="beam_size=4,alpha=0.6" \\
        --decode_from_file=newstest2014.en --decode_to_file=out.de \\
        --decode_reference=newstest2014.de --checkpoint_average=5

Without --decode_from_file it reads standard input and writes standard output.
`--output_dir=M1,M2` decodes with an ensemble: at each step the search uses the
log of the mean of the models' probabilities (fairseq's rule); the models must
share the problem and the vocabulary. (t2t-exporter exports one model.)
The problem decides what is written and scored: for a parsing problem each
output line is a tree over the input's words, and --decode_reference (gold
trees) prints EVALB's summary instead of BLEU.

`--engine=ctranslate2 [--quantization=int8]` translates with CTranslate2: the
model is converted once by t2t-exporter's converter into a cache beside it
(`ctranslate2_cache/`, or the user's cache directory when the model directory
is read-only) and reused while its checkpoints are unchanged. The output has
the same format; the decode options CTranslate2 searches differently are
mapped as the CTranslate2 export documents and named in one line at start-up
(`t2t-decoder: note: ...`); alignments, ensembles, --score_file,
--decode_interactive, --jit_compile and --precision=bfloat16 are refused.
"""

import argparse
import os
import sys
import time
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-decoder", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir",
                   help="model directory written by t2t-trainer; several, comma-separated, "
                        "decode as an ensemble (the mean of their probabilities)")
    p.add_argument("--checkpoint_path", help="a ckpt-N prefix (default: the latest)")
    p.add_argument("--checkpoint_average", type=int, default=1,
                   help="average the last N checkpoints on the fly (the paper: 5)")
    p.add_argument("--decode_hparams", default="",
                   help="beam_size, alpha, extra_length, min_length, length_penalty, batch_size, "
                        "max_input_length, return_beams, write_beam_scores, alignments "
                        "(append a TAB and Pharaoh word alignments), alignment_layer, "
                        "sampling_temperature, top_k, sampling_seed, stop_rule (t2t, beam_full, "
                        "transformers), forbid_pad, forced_eos, renormalize, max_output_length "
                        "(Hugging Face transformers' generation settings), tree_constraint "
                        "(parsing: only well-formed trees; on by default for parsing problems), "
                        "parallel_batches (batches translated at once, default one per CPU "
                        "core, at most the input's number of batches; one on a GPU)")
    p.add_argument("--decode_from_file", help="one source sentence per line (default: stdin)")
    p.add_argument("--decode_to_file", help="one translation per line (default: stdout)")
    p.add_argument("--decode_reference",
                   help="reference translations: print sacreBLEU (parsing: gold trees, EVALB)")
    p.add_argument("--decode_interactive", action="store_true",
                   help="translate each line typed at the prompt")
    p.add_argument("--score_file", help="score 'source<TAB>target' lines: log P(target|source), "
                                        "batch_size pairs at a time")
    p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                   help="bfloat16: bfloat16 matmuls and cache (CPUs with AVX512-BF16, GPUs)")
    p.add_argument("--jit_compile", action="store_true",
                   help="compile the search with XLA (inputs padded to multiples of 8 tokens)")
    cli.add_engine_flags(p)
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    cli.check_engine_flags(p, args)
    if not args.output_dir and not args.checkpoint_path:
        p.error("give --output_dir (model directory) or --checkpoint_path")
    args.model_dirs = ([d.strip() for d in args.output_dir.split(",") if d.strip()]
                       if args.output_dir else [os.path.dirname(args.checkpoint_path)])
    if len(args.model_dirs) > 1 and args.checkpoint_path:
        p.error("--checkpoint_path names one checkpoint: not with several --output_dir")
    return args


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    if args.engine == "ctranslate2":
        return _run_ctranslate2(args)
    from t2t_lite import model_dir as model_dir_lib
    from t2t_lite.decode import decoding
    from t2t_lite.decode.scoring import score_pairs
    from t2t_lite.decode.search import SearchParams, search_for_problem
    from t2t_lite.decode.translator import Translator
    from t2t_lite.data.problem import Problem
    from t2t_lite.data.t2t_subwords import T2TSubwordVocab
    from t2t_lite.textio import read_lines

    # Each directory read once; a wrong one is told before reading stdin.
    directories = [model_dir_lib.ModelDir.open(path) for path in args.model_dirs]
    if not (args.score_file or args.decode_interactive):
        # The input first, then the thread pools, before TensorFlow's first op fixes
        # them: decode_lines runs as many batches at once as the input makes (up to
        # one per core), each op on its share of the cores (one batch: all of them).
        _, options = decoding.parse_decode_hparams(SearchParams(), args.decode_hparams)
        lines = _read_input(args)
        decoding.share_cores(options, options.batches(lines))
    if len(directories) == 1:
        models = [directories[0].load_model(args.checkpoint_path, args.checkpoint_average,
                                            args.precision)[0]]
    else:  # an ensemble: each directory averaged on the fly as asked
        models = model_dir_lib.load_ensemble(directories, args.checkpoint_average,
                                             args.precision)
    vocab = directories[0].vocab()
    problem = directories[0].problem()
    params, options = decoding.parse_decode_hparams(SearchParams.for_problem(problem),
                                                    args.decode_hparams)
    if options.alignments and isinstance(vocab, T2TSubwordVocab):
        raise cli.T2TError("alignments=true needs a SentencePiece vocabulary: the output words "
                           "of t2t's subtokens (escaped, '_'-terminated) are not mapped yet.")
    if options.alignments and problem.postprocess.__func__ is not Problem.postprocess:
        raise cli.T2TError(f"alignments=true is for translation: {problem.name} rewrites its "
                           "outputs (postprocess), so their words are not the model's.")

    if args.score_file:
        pairs = [line.split("\t") for line in read_lines(args.score_file, strip="newline")]
        bad = next((n for n, pair in enumerate(pairs, 1) if len(pair) != 2), None)
        if bad:
            raise cli.T2TError(f"{args.score_file} line {bad}: expected 'source<TAB>target'.")
        scores = score_pairs(models, vocab, [s for s, _ in pairs], [t for _, t in pairs],
                             params.max_input_length, options.batch_size)
        _write(args.decode_to_file, [f"{s:.4f}" for s in scores])
        return 0
    search = search_for_problem(models, problem, vocab, params, jit_compile=args.jit_compile)
    translator = Translator(search, vocab, pad_rows=options.batch_size)
    if args.decode_interactive:
        return _interactive(translator, problem)
    outputs = decoding.decode_lines(translator, lines, options, postprocess=problem.postprocess,
                                    progress=decoding.stderr_progress)
    _write(args.decode_to_file, outputs)
    if args.decode_reference:
        print(problem.report(outputs, args.decode_reference), file=sys.stderr)
    return 0


def _read_input(args: argparse.Namespace) -> List[str]:
    from t2t_lite.textio import read_lines, read_stream_lines

    if args.decode_from_file:
        return read_lines(args.decode_from_file, strip="newline", note=cli.note)
    return read_stream_lines(sys.stdin.buffer, "standard input", strip="newline", note=cli.note)


def _ctranslate2_refusal(args: argparse.Namespace) -> Optional[str]:
    """Why CTranslate2 cannot do what these flags ask (None: it can)."""
    refused = [(len(args.model_dirs) > 1, "ensembles (several --output_dir)"),
               (args.score_file, "--score_file"), (args.decode_interactive, "--decode_interactive"),
               (args.jit_compile, "--jit_compile"),
               (args.precision != "float32", f"--precision={args.precision} (use --quantization)")]
    names = [name for condition, name in refused if condition]
    return (f"--engine=ctranslate2 cannot run {', '.join(names)}; drop them or use "
            "--engine=tensorflow."
            if names else None)


def _run_ctranslate2(args: argparse.Namespace) -> int:
    """Decodes the input with `CT2Engine` (see the module docstring)."""
    from t2t_lite import model_dir as model_dir_lib
    from t2t_lite.decode import decoding
    from t2t_lite.decode.search import SearchParams
    from t2t_lite.serve.ctranslate2_engine import CT2Engine

    refusal = _ctranslate2_refusal(args)
    if refusal:
        raise cli.T2TError(refusal)
    _, options = decoding.parse_decode_hparams(SearchParams(), args.decode_hparams)
    # read once; a wrong directory is told before reading stdin
    model_dir = model_dir_lib.ModelDir.open(args.model_dirs[0])
    lines = _read_input(args)
    engine = CT2Engine.load(model_dir, args.decode_hparams, args.checkpoint_average,
                            args.checkpoint_path, args.quantization or "float32",
                            workers=options.concurrent_batches(  # CTranslate2 runs on the CPU
                                options.batches(lines), accelerator=False))
    print(f"t2t-decoder: note: {engine.notice}", file=sys.stderr, flush=True)
    start = time.time()
    outputs = [translation.line for translation in engine.translate(lines)]
    decoded = sum(1 for line in lines if line.strip())
    if decoded:
        decoding.stderr_progress(decoded, decoded, time.time() - start)
    _write(args.decode_to_file, outputs)
    if args.decode_reference:
        print(engine.problem.report(outputs, args.decode_reference), file=sys.stderr)
    return 0


def _write(path: Optional[str], lines: List[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if path:
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise cli.T2TError(f"Cannot write {path}: {e.strerror}.") from None
    else:
        sys.stdout.write(text)


def _interactive(translator, problem) -> int:
    from t2t_lite.decode.decoding import one_line

    print("Type a sentence and press Enter (Ctrl-D to quit).", file=sys.stderr)
    while True:
        try:
            line = input("> ")
        except EOFError:
            return 0
        output = translator.translate([line])[0]
        print(one_line(problem.postprocess(output, line)) if line.strip() else "", flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-decoder", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
