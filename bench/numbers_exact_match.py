"""Exact match of a model trained on translate_ende_numbers, on its held-out test split.

    python bench/numbers_exact_match.py --output_dir=M [--checkpoint_path=M/ckpt-1000]
        [--decode_hparams=beam_size=4] [--split=test]

Prints the exact-match rate, the decoding speed and a few errors.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from t2t_lite import registry  # noqa: E402
from t2t_lite.decode.checkpoints import load_model  # noqa: E402
from t2t_lite.decode.decoding import decode_lines  # noqa: E402
from t2t_lite.decode.translator import DecodeParams, Translator  # noqa: E402


def exact_match(output_dir: str, checkpoint_path=None, decode_hparams: str = "",
                split: str = "test", checkpoint_average: int = 1):
    """Returns (fraction correct, sentences/s, list of (source, reference, output) errors)."""
    problem = registry.problem("translate_ende_numbers")
    pairs = list(problem.raw_pairs(split, None))
    model, vocab, _, _ = load_model(output_dir, checkpoint_path, checkpoint_average)
    params = DecodeParams(beam_size=problem.beam_size, alpha=problem.alpha,
                          extra_length=problem.extra_length, batch_size=128).parse(decode_hparams)
    translator = Translator(model, vocab, params)
    start = time.time()
    outputs = decode_lines(translator, [s for s, _ in pairs])
    seconds = time.time() - start
    errors = [(s, t, o) for (s, t), o in zip(pairs, outputs) if o != t]
    return 1 - len(errors) / len(pairs), len(pairs) / seconds, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--checkpoint_path")
    parser.add_argument("--checkpoint_average", type=int, default=1)
    parser.add_argument("--decode_hparams", default="")
    parser.add_argument("--split", default="test")
    args = parser.parse_args()
    accuracy, speed, errors = exact_match(args.output_dir, args.checkpoint_path,
                                          args.decode_hparams, args.split,
                                          args.checkpoint_average)
    print(f"exact match {accuracy:.2%} on {args.split} ({speed:.0f} sentences/s)")
    for source, reference, output in errors[:5]:
        print(f"  {source!r}: expected {reference!r}, got {output!r}")


if __name__ == "__main__":
    main()
