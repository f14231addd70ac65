"""t2t-import: turn a tensor2tensor Transformer or a Hugging Face Marian model into a t2t-lite model.

    t2t-import --t2t_output_dir=T --t2t_data_dir=D --output_dir=M
    t2t-decoder --output_dir=M --decode_hparams=beam_size=4,alpha=0.6 < input.en

    t2t-import --marian_dir=opus-mt-en-de --output_dir=M
    t2t-decoder --output_dir=M < input.en

T is t2t-trainer's --output_dir (flags.txt, hparams.json, model.ckpt-N), D is
t2t-datagen's --data_dir (vocab.<problem>.<size>.subwords). Checkpoints of t2t
1.x under TF 1.x or TF 2.x (both variable naming styles) are read; optimizer
slots are ignored.

With --marian_dir: a Hugging Face Marian directory (OPUS-MT's `Helsinki-NLP/opus-mt-*`:
config.json, model.safetensors, source.spm, target.spm, vocab.json), fetched
beforehand; M then decodes as transformers' `generate` with the model's
generation_config.json. M is written only when the import is complete.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-import", description=__doc__.split("\n")[0])
    p.add_argument("--t2t_output_dir", help="tensor2tensor's model directory (t2t-trainer "
                   "--output_dir)")
    p.add_argument("--t2t_data_dir", help="tensor2tensor's data directory (the vocabulary)")
    p.add_argument("--marian_dir", help="a Hugging Face Marian model's directory (OPUS-MT), "
                   "instead of --t2t_output_dir and --t2t_data_dir")
    p.add_argument("--output_dir", help="the t2t-lite model directory to write (new)")
    p.add_argument("--checkpoint_path", default="",
                   help="a t2t checkpoint prefix (model.ckpt-N) instead of the newest")
    p.add_argument("--num_last_checkpoints", type=int, default=1,
                   help="import the newest N checkpoints (to average them)")
    p.add_argument("--target_space_id", type=int, default=None,
                   help="the problem's target space id (t2t's problem_hparams; default 0)")
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    if args.marian_dir:
        given = [f"--{f}" for f in ("t2t_output_dir", "t2t_data_dir", "checkpoint_path",
                                    "target_space_id") if getattr(args, f)]
        if given:
            p.error(f"--marian_dir imports a Hugging Face Marian model; {', '.join(given)} "
                    "belong to a tensor2tensor import.")
        cli.require(p, args, ["output_dir"])
    else:
        cli.require(p, args, ["t2t_output_dir", "t2t_data_dir", "output_dir"])
    return args


def run(args: argparse.Namespace) -> int:
    if args.marian_dir:
        from t2t_lite.t2t_import.marian_importer import import_model as import_marian
        import_marian(args.marian_dir, args.output_dir)
        print(f"Wrote {args.output_dir}; decode it with t2t-decoder --output_dir="
              f"{args.output_dir}.")
        return 0
    from t2t_lite.t2t_import.importer import import_model
    written = import_model(args.t2t_output_dir, args.t2t_data_dir, args.output_dir,
                           args.checkpoint_path, args.num_last_checkpoints,
                           args.target_space_id)
    print(f"Wrote {args.output_dir} ({len(written)} checkpoint(s)); decode it with "
          f"t2t-decoder --output_dir={args.output_dir}.")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-import", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
