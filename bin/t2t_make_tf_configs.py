"""t2t-make-tf-configs: the TF_CONFIG of each worker of a multi-machine training run.

    t2t-make-tf-configs --workers=host1:2222,host2:2222

prints one line per worker, ready to paste on that worker before starting the
same t2t-trainer command there:

    export TF_CONFIG='{"cluster":{"worker":["host1:2222","host2:2222"]},"task":{"type":"worker","index":0}}'

Worker 0 is the chief: it writes the model directory. --format=json prints
the JSON values alone.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-make-tf-configs", description=__doc__.split("\n")[0])
    p.add_argument("--workers", required=True, help="host:port of each worker, comma-separated")
    p.add_argument("--format", default="export", choices=["export", "json"],
                   help="export: shell `export TF_CONFIG=...` lines; json: the values alone")
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> int:
    from t2t_lite.train.tf_config import parse_workers, tf_configs
    for config in tf_configs(parse_workers(args.workers)):
        print(f"export TF_CONFIG='{config}'" if args.format == "export" else config)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    return cli.main("t2t-make-tf-configs", lambda: run(args), tensorflow=False)


if __name__ == "__main__":
    sys.exit(main())
