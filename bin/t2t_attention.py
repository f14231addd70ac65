"""t2t-attention: draw what a trained model attends to, for one sentence.

    t2t-attention --output_dir=M --source="A dog runs on the beach ." --png=attention.png \\
        [--target="..."] [--kind=encoder|decoder|cross] [--layer=-1] [--head=all|H] \\
        [--style=heatmap|lines] [--npz=attention.npz]

Without --target the model's own beam-search translation is drawn. Heat maps
show one panel per head (queries down, keys across, subword pieces as
labels); --style=lines draws the paper's figures (lines from each query to
the keys, thickness = weight, one colour per head). --npz writes the raw
weights of every layer and head with the pieces. Sentences of more than 60
pieces are refused.
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-attention", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--checkpoint_average", type=int, default=1,
                   help="average the last N checkpoints on the fly")
    p.add_argument("--source", help="the source sentence")
    p.add_argument("--target", help="the target sentence (default: the model's translation)")
    p.add_argument("--decode_hparams", default="",
                   help="search for the model's own translation (default: the problem's)")
    p.add_argument("--kind", default="encoder", choices=["encoder", "decoder", "cross"],
                   help="encoder self-attention (the paper's figures), decoder "
                        "self-attention or encoder-decoder attention")
    p.add_argument("--layer", type=int, default=-1, help="layer to draw, from 0 (default: last)")
    p.add_argument("--head", default="all", help="a head number, or 'all'")
    p.add_argument("--style", default="heatmap", choices=["heatmap", "lines"],
                   help="heatmap: one per head; lines: the paper's figures, a line from each "
                        "query to each key")
    p.add_argument("--png", help="where to draw the picture")
    p.add_argument("--npz", help="where to write the raw weights and pieces")
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    cli.require(p, args, ["output_dir", "source"])
    if not args.png and not args.npz:
        p.error("give --png and/or --npz")
    if args.head != "all" and not args.head.isdigit():
        p.error(f"--head must be a head number or 'all', got {args.head!r}")
    return args


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    from t2t_lite import model_dir as model_dir_lib
    from t2t_lite.decode.search import SearchParams
    from t2t_lite.visualize import attention

    model_dir = model_dir_lib.ModelDir.open(args.output_dir)
    model, _ = model_dir.load_model(None, args.checkpoint_average)
    vocab, problem = model_dir.vocab(), model_dir.problem()
    search = SearchParams.for_problem(problem).parse(args.decode_hparams)
    maps = attention.attention_maps(model, vocab, args.source, args.target, search)
    if args.npz:
        attention.save_npz(maps, args.npz)
        print(args.npz)
    if args.png:
        heads = None if args.head == "all" else [int(args.head)]
        draw = attention.draw_lines if args.style == "lines" else attention.draw_heatmaps
        draw(maps, args.kind, args.layer, heads, args.png)
        print(args.png)
    print("source: " + " ".join(maps.source), file=sys.stderr)
    print("target: " + " ".join(maps.target), file=sys.stderr)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-attention", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
