"""t2t-avg-checkpoints: average the weights of the last N checkpoints into a new model dir.

    t2t-avg-checkpoints --output_dir=M --num_last_checkpoints=5 --avg_dir=M/avg
    t2t-decoder --output_dir=M/avg ...

With --select=best_dev_loss --data_dir=D it averages the N checkpoints of
lowest per-token dev loss instead (among those --checkpoints names, if it does;
scores kept in M/dev_losses.json; see
t2t_lite.train.best_checkpoints).

Safe while a trainer writes M (only complete checkpoints are read) and safe to
kill: the average is renamed into place when complete, replacing an earlier
average in --avg_dir.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags

PROG = "t2t-avg-checkpoints"
SELECT_RULES = ("last", "best_dev_loss")  # --select


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--num_last_checkpoints", type=int, default=5,
                   help="how many checkpoints to average")
    p.add_argument("--checkpoints", default="",
                   help="comma-separated ckpt-N prefixes to average instead of the last N "
                        "(with --select=best_dev_loss: the candidates)")
    p.add_argument("--avg_dir", help="where to write the averaged model directory")
    p.add_argument("--select", default="last",
                   help="which checkpoints: last (the last N) or best_dev_loss (the N of "
                        "lowest per-token dev loss; needs --data_dir)")
    p.add_argument("--data_dir", default="",
                   help="--select=best_dev_loss: t2t-datagen's output holding the dev split")
    p.add_argument("--candidates", type=int, default=0,
                   help="--select=best_dev_loss: score only the last N checkpoints (0: all)")
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    cli.require(p, args, ["output_dir", "avg_dir"])
    return args


def check_args(args: argparse.Namespace) -> int:
    """Refuses flag combinations that cannot work, before TensorFlow is imported."""
    if args.select not in SELECT_RULES:
        raise cli.T2TError(f"Unknown --select={args.select!r}: choose one of "
                           f"{', '.join(SELECT_RULES)}.")
    if args.select == "last":
        if args.data_dir or args.candidates:
            raise cli.T2TError("--data_dir and --candidates apply to --select=best_dev_loss "
                               "only.")
        return 0
    if not args.data_dir:
        raise cli.T2TError("--select=best_dev_loss needs --data_dir: the t2t-datagen output "
                           "holding the model's problem's dev split.")
    if args.checkpoints and args.candidates:
        raise cli.T2TError("--checkpoints and --candidates both name the candidates: give "
                           "one or the other.")
    if args.candidates < 0:
        raise cli.T2TError(f"--candidates must be >= 0 (0: all), got {args.candidates}.")
    return 0


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    from t2t_lite.average_dir import write_average
    from t2t_lite.model_dir import ModelDir
    model_dir = ModelDir.open(args.output_dir)
    model_dir.check_usr_dir()  # its problem's user directory, if it had one
    if args.select == "best_dev_loss":
        from t2t_lite.train.best_checkpoints import average_best
        written, paths, losses = average_best(model_dir, args.avg_dir, args.data_dir,
                                              args.num_last_checkpoints, args.candidates,
                                              named=_listed(args.checkpoints))
        chosen = ", ".join(f"{p.rsplit('/', 1)[-1]} {losses[p]:.4f}" for p in paths)
        print(f"Averaged the {len(paths)} of lowest dev loss of {len(losses)} checkpoints "
              f"({chosen}) into {written}.")
        return 0
    paths = _listed(args.checkpoints)
    if not paths and args.num_last_checkpoints < 1:
        raise cli.T2TError("--num_last_checkpoints must be >= 1.")
    written, paths = write_average(model_dir, args.avg_dir, args.num_last_checkpoints,
                                   paths)
    print(f"Averaged {len(paths)} checkpoints ({', '.join(p.rsplit('/', 1)[-1] for p in paths)})"
          f" into {written}.")
    return 0


def _listed(flag: str) -> List[str]:
    """The checkpoint prefixes of a comma-separated --checkpoints."""
    return [p.strip() for p in flag.split(",") if p.strip()]


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    code = cli.main(PROG, lambda: check_args(args), tensorflow=False)
    return code or cli.main(PROG, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
