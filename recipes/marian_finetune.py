"""Fine-tuning an imported Marian (OPUS-MT-style) model on Multi30k, against the model as imported.

    python recipes/marian_finetune.py --marian_dir=news-marian --shared_data=../shared/data \\
        --work_dir=marian-m30k --finetune_steps=1000

runs, as a user would type them:

    t2t-import --marian_dir=MARIAN --output_dir=WORK/imported
    t2t-datagen --problem=translate_ende_multi30k --tmp_dir=<multi30k> --vocab_from=WORK/imported ...
    t2t-trainer --warm_start_from=WORK/imported --problem=translate_ende_multi30k \\
        --train_steps=F --hparams=<--finetune_hparams> ...
    t2t-decoder --output_dir=<each model> --decode_hparams=max_output_length=128 (otherwise the
        imported generation settings: transformers' beam search with the model's num_beams) on
        Multi30k val and test_2016_flickr

and measures both models' per-token dev loss on Multi30k val (the trainer's own evaluation,
label smoothing aside) and their sacreBLEU on val and test_2016_flickr. MARIAN is a Hugging Face
Marian directory: a real OPUS-MT model (`Helsinki-NLP/opus-mt-en-de`) or the stand-in
`recipes/marian_news_model.py` trains on the WMT news sets where the Hub is out of reach.
"""

import argparse
import json
import os
import time
from typing import List, Optional

from multi30k_ende import run_command
from news_finetune import decoder_bleu, dev_losses, train

PROBLEM = "translate_ende_multi30k"
EVAL_SETS = {"val": ("multi30k/val.en", "multi30k/val.de"),
             "test_2016_flickr": ("multi30k/test_2016_flickr.en", "multi30k/test_2016_flickr.de")}


def decode_bleu(model_dir: str, name: str, args, log_path: str) -> float:
    """sacreBLEU of `model_dir`'s translation of one Multi30k set, decoded with the model's
    own generation settings, outputs cut at `--max_output_length` pieces."""
    source, reference = (os.path.join(args.shared_data, p) for p in EVAL_SETS[name])
    if args.eval_sentences:
        source, reference = (first_lines(path, args.eval_sentences, args.work_dir)
                             for path in (source, reference))
    out = os.path.join(args.work_dir, f"{os.path.basename(model_dir)}.{name}.de")
    return decoder_bleu(model_dir, source, reference, out,
                        f"max_output_length={args.max_output_length}", log_path)


def first_lines(path: str, count: int, work_dir: str) -> str:
    """A copy of the first `count` lines of `path` in `work_dir`; returns its path."""
    out = os.path.join(work_dir, f"head{count}.{os.path.basename(path)}")
    with open(path, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
        for _, line in zip(range(count), f):
            g.write(line)
    return out


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--marian_dir", required=True,
                   help="a Hugging Face Marian model directory (config.json, model.safetensors, "
                        "source.spm, target.spm, vocab.json, ...)")
    p.add_argument("--shared_data", default="../shared/data")
    p.add_argument("--work_dir", required=True)
    p.add_argument("--finetune_steps", type=int, default=1000)
    p.add_argument("--finetune_hparams",
                   default="learning_rate_warmup_steps=200,tokens_per_step=0,batch_size=4096",
                   help="overrides of the imported hparams for fine-tuning (the import's "
                        "schedule warms up over 4,000 steps; its steps gather 25,000 tokens)")
    p.add_argument("--max_output_length", type=int, default=128,
                   help="longest output in pieces (the imported setting, 511, lets a weak "
                        "model repeat itself for minutes per line; Multi30k's longest "
                        "reference is far shorter)")
    p.add_argument("--eval_sentences", type=int, default=0,
                   help="score only the first N lines of each Multi30k set (0: all)")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    start = time.time()
    os.makedirs(args.work_dir, exist_ok=True)
    log_path = os.path.join(args.work_dir, "log.txt")
    imported = os.path.join(args.work_dir, "imported")
    finetuned = os.path.join(args.work_dir, "finetuned")
    data_dir = os.path.join(args.work_dir, "data")
    if not os.path.exists(imported):
        run_command(["t2t-import", f"--marian_dir={args.marian_dir}",
                     f"--output_dir={imported}"], log_path)
    run_command(["t2t-datagen", f"--problem={PROBLEM}",
                 f"--tmp_dir={os.path.join(args.shared_data, 'multi30k')}",
                 f"--data_dir={data_dir}", f"--vocab_from={imported}"], log_path)
    results = {"finetune_steps": args.finetune_steps, "finetune_hparams": args.finetune_hparams}
    results["finetune_seconds"] = train(
        [f"--problem={PROBLEM}", f"--data_dir={data_dir}", f"--warm_start_from={imported}",
         f"--output_dir={finetuned}", f"--train_steps={args.finetune_steps}",
         f"--hparams={args.finetune_hparams}"], log_path)
    for name, model in (("imported", imported), ("finetuned", finetuned)):
        results[name] = {"dev_loss": dev_losses(model, data_dir, {"multi30k_val": PROBLEM}),
                         "bleu": {s: decode_bleu(model, s, args, log_path) for s in EVAL_SETS}}
        print(name, results[name], flush=True)
    results["recipe_seconds"] = round(time.time() - start)
    with open(os.path.join(args.work_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
