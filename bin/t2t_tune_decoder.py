"""t2t-tune-decoder: choose decode options (beam size, length penalty, ...) on a dev set.

    t2t-tune-decoder --output_dir=M [--checkpoint_average=5] \\
        --decode_from_file=val.en --decode_reference=val.de \\
        --decode_hparams=batch_size=64 --grid="beam_size=4,5;alpha=0.0,0.2,0.4,0.6,0.8,1.0,1.2" \\
        [--report=tune.json]

Loads the model once and decodes the dev source under every combination of
the grid (each key a --decode_hparams field, ';' between keys; the product in
grid order, the last key varying fastest), with --decode_hparams fixing the
rest. Each combination is scored with the problem's main metric as t2t-decoder
reports it (sacreBLEU for translation, EVALB F1 for parsing). Prints one line
per combination as it is scored, then all of them by score, best first, and
the best as a --decode_hparams line for t2t-decoder, t2t-exporter and
t2t-server; a tie goes to the first in grid order. Alpha is read by the traced
search at run time: the search is traced once per setting of the other keys.
"""

import argparse
import json
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags

PROG = "t2t-tune-decoder"


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True, help="model directory written by t2t-trainer")
    p.add_argument("--checkpoint_path", help="a ckpt-N prefix (default: the latest)")
    p.add_argument("--checkpoint_average", type=int, default=1,
                   help="average the last N checkpoints on the fly")
    p.add_argument("--decode_from_file", help="dev source, one sentence per line")
    p.add_argument("--decode_reference", help="dev references, one per source line")
    p.add_argument("--decode_hparams", default="",
                   help="decode hparams every combination shares (as t2t-decoder's), e.g. "
                        "batch_size=64; none of the grid's keys")
    p.add_argument("--grid", default="",
                   help="decode hparams and their candidate values, e.g. "
                        "\"beam_size=4,5;alpha=0.0,0.6,1.0\" (a tie: the first in grid order "
                        "wins)")
    p.add_argument("--report", help="write every result and the best as JSON (atomically, "
                                    "after each combination)")
    p.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                   help="as t2t-decoder's")
    p.add_argument("--jit_compile", action="store_true", help="as t2t-decoder's")
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    from t2t_lite import model_dir as model_dir_lib
    from t2t_lite.decode import decoding, tuning
    from t2t_lite.decode.search import SearchParams
    from t2t_lite.textio import count_lines, read_lines

    missing = [flag for flag in ("decode_from_file", "decode_reference")
               if not getattr(args, flag)]
    if missing:
        raise cli.T2TError(f"{' and '.join('--' + m for m in missing)} needed: the dev source "
                           "to decode and its references to score against.")
    combinations = tuning.parse_grid(args.grid, args.decode_hparams)
    _, options = decoding.parse_decode_hparams(SearchParams(), args.decode_hparams)
    model_dir = model_dir_lib.ModelDir.open(args.output_dir)  # a wrong one is told first
    lines = read_lines(args.decode_from_file, strip="newline", note=cli.note)
    references = count_lines(args.decode_reference)
    if references != len(lines):
        raise cli.T2TError(f"{args.decode_from_file} has {len(lines)} lines but "
                           f"{args.decode_reference} has {references}; the references must "
                           "match the source line for line.")
    write_report = _reporter(args)
    write_report([])  # an unwritable --report is told before decoding
    decoding.share_cores(options, options.batches(lines))  # before TensorFlow's first op
    model, _ = model_dir.load_model(args.checkpoint_path, args.checkpoint_average,
                                    args.precision)
    vocab, problem = model_dir.vocab(), model_dir.problem()
    print(f"{len(combinations)} combinations of --grid on {len(lines)} lines of "
          f"{args.decode_from_file}", flush=True)
    results = []

    def scored(result):
        results.append(result)
        print(f"{result.decode_hparams}  {result.metric} {result.score:.2f}  "
              f"{result.seconds:.1f} s", flush=True)
        write_report(results)

    tuning.tune(model, problem, vocab, lines, args.decode_reference, args.decode_hparams,
                combinations, jit_compile=args.jit_compile, on_result=scored)
    _print_ranking(results, args.decode_hparams)
    return 0


def _print_ranking(results, fixed: str) -> None:
    """The results by score, best first, and the best as a --decode_hparams line."""
    from t2t_lite.decode import tuning

    metric, ranking = results[0].metric, tuning.ranked(results)
    print(f"\nby {metric}, best first (a tie: the first in grid order):")
    print(f"{'rank':>4}  {metric:>6}  {'seconds':>7}  decode_hparams")
    for rank, result in enumerate(ranking, 1):
        print(f"{rank:>4}  {result.score:>6.2f}  {result.seconds:>7.1f}  {result.decode_hparams}")
    print(f"\nbest: --decode_hparams={tuning.join_hparams(fixed, ranking[0].decode_hparams)}")


def _reporter(args: argparse.Namespace):
    """A function writing --report's JSON for the results so far (nothing without --report)."""
    from t2t_lite import atomic
    from t2t_lite.decode import tuning

    def write(results) -> None:
        if not args.report:
            return
        best = tuning.ranked(results)[0] if results else None
        report = {
            "output_dir": args.output_dir, "checkpoint_path": args.checkpoint_path,
            "checkpoint_average": args.checkpoint_average,
            "decode_from_file": args.decode_from_file, "decode_reference": args.decode_reference,
            "decode_hparams": args.decode_hparams, "grid": args.grid,
            "metric": results[0].metric if results else None,
            "results": [{"decode_hparams": r.decode_hparams, "options": dict(r.options),
                         "score": r.score, "seconds": round(r.seconds, 3)} for r in results],
            "best": best and {"decode_hparams": tuning.join_hparams(args.decode_hparams,
                                                                    best.decode_hparams),
                              "score": best.score},
        }
        try:
            atomic.write_text(args.report, json.dumps(report, indent=2) + "\n")
        except OSError as e:
            raise cli.T2TError(f"Cannot write {args.report}: {e.strerror}.") from None

    return write


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main(PROG, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
