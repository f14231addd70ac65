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
from t2t_lite.decode.decoding import DecodeOptions, decode_lines, parse_decode_hparams  # noqa: E402
from t2t_lite.decode.search import SearchParams, search_for_problem  # noqa: E402
from t2t_lite.decode.translator import Translator  # noqa: E402
from t2t_lite.model_dir import ModelDir  # noqa: E402


def exact_match(output_dir: str, checkpoint_path=None, decode_hparams: str = "",
                split: str = "test", checkpoint_average: int = 1):
    """Returns (fraction correct, sentences/s, list of (source, reference, output) errors)."""
    problem = registry.problem("translate_ende_numbers")
    pairs = list(problem.raw_pairs(split, None))
    directory = ModelDir.open(output_dir)
    model, _ = directory.load_model(checkpoint_path, checkpoint_average)
    vocab = directory.vocab()
    params, options = parse_decode_hparams(SearchParams.for_problem(problem), decode_hparams,
                                           DecodeOptions(batch_size=128))
    translator = Translator(search_for_problem(model, problem, vocab, params), vocab)
    start = time.time()
    outputs = decode_lines(translator, [s for s, _ in pairs], options)
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
