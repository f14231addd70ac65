"""t2t-avg-checkpoints: average the weights of the last N checkpoints into a new model dir.

    t2t-avg-checkpoints --output_dir=M --num_last_checkpoints=5 --avg_dir=M/avg
    t2t-decoder --output_dir=M/avg ...

Safe while a trainer writes M (only complete checkpoints are read) and safe to
kill: the average is renamed into place when complete, replacing an earlier
average in --avg_dir.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = cli.ArgumentParser(prog="t2t-avg-checkpoints", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--num_last_checkpoints", type=int, default=5)
    p.add_argument("--checkpoints", default="",
                   help="comma-separated ckpt-N prefixes to average instead of the last N")
    p.add_argument("--avg_dir", help="where to write the averaged model directory")
    args = p.parse_args(argv)
    cli.require(p, args, ["output_dir", "avg_dir"])
    return args


def run(args: argparse.Namespace) -> int:
    from t2t_lite.model_dir import write_average
    paths = [p.strip() for p in args.checkpoints.split(",") if p.strip()]
    if not paths and args.num_last_checkpoints < 1:
        raise cli.T2TError("--num_last_checkpoints must be >= 1.")
    written, paths = write_average(args.output_dir, args.avg_dir, args.num_last_checkpoints,
                                   paths)
    print(f"Averaged {len(paths)} checkpoints ({', '.join(p.rsplit('/', 1)[-1] for p in paths)})"
          f" into {written}.")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-avg-checkpoints", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
