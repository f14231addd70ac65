"""t2t-exporter: write a model directory as a SavedModel for TF Serving (text in, text out).

    t2t-exporter --output_dir=M --export_dir=exports/ende \\
        --decode_hparams="beam_size=4,alpha=0.6" --checkpoint_average=5

Writes exports/ende/<next version>/ (saved_model.pb, variables/, assets/,
assets.extra/) and prints its path. Signature `serving_default`: `inputs`
tf.string [batch] -> `outputs` tf.string [batch], `scores` float32 [batch];
`nbest` returns all beams. Load it with `import tensorflow_text` first.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = cli.ArgumentParser(prog="t2t-exporter", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--export_dir", help="base directory of the numbered SavedModel versions")
    p.add_argument("--decode_hparams", default="",
                   help="beam_size, alpha, extra_length, length_penalty, max_input_length "
                        "(fixed in the SavedModel; default: the problem's)")
    p.add_argument("--checkpoint_path", help="a ckpt-N prefix (default: the latest)")
    p.add_argument("--checkpoint_average", type=int, default=1,
                   help="average the last N checkpoints (up to --checkpoint_path)")
    args = p.parse_args(argv)
    cli.require(p, args, ["output_dir", "export_dir"])
    return args


def run(args: argparse.Namespace) -> int:
    from t2t_lite.export.exporter import export

    path = export(args.output_dir, args.export_dir, args.decode_hparams,
                  checkpoint_path=args.checkpoint_path,
                  checkpoint_average=args.checkpoint_average)
    print(path)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-exporter", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
