"""t2t-exporter: write a model directory as a SavedModel for TF Serving or a CTranslate2 model.

    t2t-exporter --output_dir=M --export_dir=exports/ende \\
        --decode_hparams="beam_size=4,alpha=0.6" --checkpoint_average=5
    t2t-exporter --format=ctranslate2 --quantization=int8 --output_dir=M \\
        --export_dir=exports/ende-ct2

Writes exports/ende/<next version>/ and prints its path.
SavedModel (default): saved_model.pb, variables/, assets/, assets.extra/;
signature `serving_default`: `inputs` tf.string [batch] -> `outputs` tf.string
[batch], `scores` float32 [batch]; `nbest` returns all beams. Load it with
`import tensorflow_text` first.
CTranslate2: config.json, model.bin, shared_vocabulary.json, sentencepiece.model
and t2t_lite/export.json, whose "translate_batch" holds the arguments that
search as --decode_hparams says (needs `pip install -e '.[ctranslate2]'`).
"""

import argparse
import sys
from typing import List, Optional

from t2t_lite.bin import cli, problem_flags


def build_parser() -> argparse.ArgumentParser:
    """The program's flags (also read by the docs' generated reference)."""
    p = cli.ArgumentParser(prog="t2t-exporter", description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="model directory written by t2t-trainer")
    p.add_argument("--format", choices=["saved_model", "ctranslate2"], default="saved_model",
                   help="saved_model (TF Serving) or ctranslate2 (a CTranslate2 model directory)")
    p.add_argument("--quantization", default=None,
                   help="ctranslate2 only: the weights' type, float32 (default), int8, "
                        "int8_float32, int8_float16, int8_bfloat16, int16, float16 or bfloat16")
    p.add_argument("--export_dir", help="base directory of the numbered export versions")
    p.add_argument("--decode_hparams", default="",
                   help="beam_size, alpha, extra_length, length_penalty, max_input_length "
                        "(fixed in the SavedModel; recorded as translate_batch arguments "
                        "for ctranslate2; default: the problem's)")
    p.add_argument("--checkpoint_path", help="a ckpt-N prefix (default: the latest)")
    p.add_argument("--checkpoint_average", type=int, default=1,
                   help="average the last N checkpoints (up to --checkpoint_path)")
    problem_flags.add_usr_dir_flag(p)
    return p


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = build_parser()
    args = p.parse_args(argv)
    cli.require(p, args, ["output_dir", "export_dir"])
    if args.quantization is not None and args.format != "ctranslate2":
        p.error("--quantization applies to --format=ctranslate2 only")
    return args


def run(args: argparse.Namespace) -> int:
    problem_flags.import_usr_dir(args)
    from t2t_lite.model_dir import ModelDir
    model_dir = ModelDir.open(args.output_dir)
    if args.format == "ctranslate2":
        from t2t_lite.export.ctranslate2_client import read_export_info
        from t2t_lite.export.ctranslate2_export import export_ctranslate2
        path = export_ctranslate2(model_dir, args.export_dir, args.decode_hparams,
                                  checkpoint_path=args.checkpoint_path,
                                  checkpoint_average=args.checkpoint_average,
                                  quantization=args.quantization or "float32")
        note = read_export_info(path).get("note")
        if note:  # a search CTranslate2 cannot run exactly: say so where the user looks
            print(f"t2t-exporter: note: {note}", file=sys.stderr)
    else:
        from t2t_lite.export.exporter import export
        path = export(model_dir, args.export_dir, args.decode_hparams,
                      checkpoint_path=args.checkpoint_path,
                      checkpoint_average=args.checkpoint_average)
    print(path)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)  # before importing TensorFlow: --help stays instant
    return cli.main("t2t-exporter", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
