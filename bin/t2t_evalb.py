"""t2t-evalb: score test trees against gold trees with EVALB's rules and report layout.

    t2t-evalb GOLD TEST [-p PRM] [-c N] [-e N] [-d]

GOLD and TEST hold one tree per line, e.g. `(TOP (S (NP (DT The) (NN dog)) ...))`.
Without `-p`, the built-in COLLINS.prm settings are used (labeled brackets,
CUTOFF_LEN 40, MAX_ERROR 10, DELETE_LABEL TOP -NONE- , : `` '' .,
DELETE_LABEL_FOR_LENGTH -NONE-, EQ_LABEL ADVP PRT), the standard for WSJ F1;
EVALB's own binary would use no deletions at all without a `.prm` file.
A `.prm` with QUOTE_LABEL lines (like EVALB's new.prm) turns on EVALB 2006's
repair of quote words that only one tree deletes.

The report goes to stdout as EVALB prints it; EVALB's per-line error messages
(`12 : Length unmatch (20|19)`) go to stderr. Like EVALB, scoring stops when
more than MAX_ERROR + 1 errors were met; this program then exits 1 after the
rows so far, with a one-line `t2t-evalb: error:` message.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Optional, Sequence

from t2t_lite.bin import cli
from t2t_lite.errors import T2TError
from t2t_lite.parsing.evalb import COLLINS_PARAMS, read_params
from t2t_lite.parsing.evalb_report import evaluate_files, format_report

PROG = "t2t-evalb"


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    parser = cli.ArgumentParser(
        prog=PROG,
        description="Evaluate bracketing in TEST against GOLD (EVALB-compatible): recall, "
        "precision, F-measure, complete match, crossing brackets, tagging accuracy.",
    )
    parser.add_argument("gold", metavar="GOLD", help="gold trees, one per line")
    parser.add_argument("test", metavar="TEST", help="test trees, one per line, same order")
    parser.add_argument("-p", dest="prm", metavar="PRM",
                        help="EVALB parameter file (default: built-in COLLINS.prm settings)")
    parser.add_argument("-c", dest="cutoff_len", type=int, metavar="N",
                        help="cut-off length for the second summary block (default: the "
                             "PRM's CUTOFF_LEN, 40 in COLLINS.prm)")
    parser.add_argument("-e", dest="max_error", type=int, metavar="N",
                        help="number of errors to stop at (default: the PRM's MAX_ERROR, 10 "
                             "in COLLINS.prm)")
    parser.add_argument("-d", dest="debug", action="store_true",
                        help="debug mode: print each sentence's words and brackets")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs t2t-evalb; returns the exit code (0 ok, 1 user error, 2 bad usage)."""
    args = parse_args(argv)
    try:
        params = read_params(args.prm) if args.prm else COLLINS_PARAMS
        overrides = {}
        if args.cutoff_len is not None:
            overrides["cutoff_len"] = args.cutoff_len
        if args.max_error is not None:
            overrides["max_error"] = args.max_error
        if args.debug:
            overrides["debug"] = 1
        params = dataclasses.replace(params, **overrides)
        result = evaluate_files(args.gold, args.test, params, stop_at_max_error=True)
    except T2TError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(format_report(result))
    for message in result.messages:
        print(message, file=sys.stderr)
    if result.stopped:
        print(f"{PROG}: error: stopped after {len(result.messages)} errors (MAX_ERROR is "
              f"{params.max_error}); last: {result.messages[-1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
