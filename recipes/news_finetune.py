"""Fine-tuning a Multi30k model on news, against a news-only model of the same total steps.

    python recipes/news_finetune.py --pretrained=m30k/model --shared_data=../shared/data \\
        --work_dir=news --finetune_steps=800 [--mixed_weight=1] [--skip_scratch]

runs, as a user would type them:

    t2t-datagen --problem=translate_ende --tmp_dir=<news files> --vocab_from=PRETRAINED ...
    t2t-datagen --problem=translate_ende_multi30k --tmp_dir=<multi30k> --vocab_from=PRETRAINED ...
    t2t-trainer --warm_start_from=PRETRAINED --problem=translate_ende --train_steps=F ...
    t2t-trainer --warm_start_from=PRETRAINED --problem=translate_ende --train_steps=F \\
        --train_mix=translate_ende=1,translate_ende_multi30k=W ...   (with --mixed_weight=W)
    t2t-trainer --problem=translate_ende --hparams_set=<PRETRAINED's set> --train_steps=P+F ...
    t2t-decoder ... (greedy) on newstest2013, newstest2014 and Multi30k test_2016_flickr

and measures every model's per-token dev loss on both domains (newstest2013 and
Multi30k val, both encoded with PRETRAINED's vocabulary in one data directory):
at this data size news BLEU is near zero, so the loss shows what BLEU cannot,
how much of Multi30k a fine-tuning forgets. Mixed fine-tuning (Chu et al.
2017) draws a share W/(1+W) of each fine-tuning batch's examples from the
Multi30k training data, the rest from news.

The news data: the WMT news test sets 2008-2012 en-de (13,573 pairs) for
training, newstest2013 (dev) and newstest2014 (test) from ../shared/data.
PRETRAINED is a model directory of recipes/multi30k_ende.py (P steps); the
news-only model trains P + F steps, the steps the fine-tuned model has in all,
on the same vocabulary (PRETRAINED's), so that the two differ only in where
their weights start. Steps rather than minutes make the comparison hold on a
machine shared with other work; wall times are printed beside them.
"""

import argparse
import functools
import json
import math
import os
import re
import sys
import time
from typing import Dict, List, Optional

from multi30k_ende import run_command

NEWS_TRAIN = ["news-test2008", "newstest2009", "newstest2010", "newstest2011", "newstest2012",
              "newssyscomb2009"]
DEV_SETS = {"newstest2013": "translate_ende", "multi30k_val": "translate_ende_multi30k"}
TEST_SETS = {  # name -> (source, reference) relative to --shared_data
    "newstest2013": ("wmt14/newstest2013.en-de.en", "wmt14/newstest2013.en-de.de"),
    "newstest2014": ("wmt14/newstest2014-full.en-de.en", "wmt14/newstest2014-full.en-de.de"),
    "multi30k_test2016": ("multi30k/test_2016_flickr.en", "multi30k/test_2016_flickr.de"),
}


def news_tmp_dir(shared: str, work_dir: str) -> str:
    """A --tmp_dir for translate_ende: links to the news training, dev and test files."""
    tmp = os.path.join(work_dir, "news_raw")
    os.makedirs(tmp, exist_ok=True)
    links = {f"{stem}.en-de.{lang}": os.path.join(shared, "wmt_newstest_2008_2012",
                                                    f"{stem}.en-de.{lang}")
             for stem in NEWS_TRAIN for lang in ("en", "de")}
    for name in ("newstest2013.en-de", "newstest2014-full.en-de"):
        for lang in ("en", "de"):
            links[f"{name}.{lang}"] = os.path.join(shared, "wmt14", f"{name}.{lang}")
    for name, target in links.items():
        if not os.path.exists(target):
            sys.exit(f"recipe: missing {target}")
        path = os.path.join(tmp, name)
        if not os.path.lexists(path):
            os.symlink(os.path.abspath(target), path)
    return tmp


def decoder_bleu(model_dir: str, source: str, reference: str, out: str, decode_hparams: str,
                 log_path: str) -> float:
    """sacreBLEU of t2t-decoder's translation of `source` (written to `out`) with
    `--decode_hparams=decode_hparams`."""
    stderr = run_command(["t2t-decoder", f"--output_dir={model_dir}",
                          f"--decode_hparams={decode_hparams}",
                          f"--decode_from_file={source}", f"--decode_to_file={out}",
                          f"--decode_reference={reference}"], log_path)
    match = re.search(r"^BLEU = ([0-9.]+)", stderr, re.M)
    if not match:
        sys.exit(f"recipe: no BLEU line from t2t-decoder (log: {log_path})")
    return float(match.group(1))


def decode(model_dir: str, test: str, args, log_path: str) -> float:
    source, reference = (os.path.join(args.shared_data, p) for p in TEST_SETS[test])
    out = os.path.join(args.work_dir, f"{os.path.basename(model_dir)}.{test}.de")
    return decoder_bleu(model_dir, source, reference, out,
                        f"beam_size={args.beam_size},alpha=0.6", log_path)


def dev_losses(model_dir: str, data_dir: str,
               dev_sets: Dict[str, str] = DEV_SETS) -> Dict[str, Dict[str, float]]:
    """Per-token dev loss of the model's last checkpoint on each domain's dev set
    (`dev_sets`: domain -> problem, all in `data_dir`): {domain: {"nll": cross-entropy per target subword (nats), "loss": label-smoothed
    as in training, "accuracy"}}, from the trainer's own evaluation."""
    from t2t_lite.data.pipeline import make_dataset
    from t2t_lite.model_dir import ModelDir
    from t2t_lite.train.evaluation import Evaluator
    directory = ModelDir.open(model_dir)
    model, _ = directory.load_model()
    hp = directory.hparams
    out = {}
    for domain, problem in dev_sets.items():
        dev = functools.partial(make_dataset, data_dir, problem, "dev", hp.batch_size,
                                hp.max_length, training=False)
        metrics = Evaluator(model, hp, dev)()
        out[domain] = {"nll": math.log(metrics["perplexity"]), "loss": metrics["loss"],
                       "accuracy": metrics["accuracy"]}
    return out


def train(args_list: List[str], log_path: str) -> float:
    start = time.time()
    run_command(["t2t-trainer", *args_list, "--eval_every=0", "--eval_bleu_sentences=0",
                 "--save_checkpoints_secs=0", "--save_checkpoints_steps=100000",
                 "--log_every=100"], log_path)
    return time.time() - start


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pretrained", required=True, help="a Multi30k model directory")
    p.add_argument("--shared_data", default="../shared/data")
    p.add_argument("--work_dir", required=True)
    p.add_argument("--finetune_steps", type=int, default=800)
    p.add_argument("--finetune_hparams", default="learning_rate_warmup_steps=200")
    p.add_argument("--hparams_set", default="transformer_multi30k",
                   help="the pretrained model's set, for the news-only model")
    p.add_argument("--beam_size", type=int, default=1)
    p.add_argument("--mixed_weight", type=float, default=0,
                   help="also fine-tune with Multi30k mixed in at this weight against news' 1 "
                        "(0: not run)")
    p.add_argument("--skip_scratch", action="store_true",
                   help="do not train the news-only model from scratch")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    log_path = os.path.join(args.work_dir, "log.txt")
    pretrained = os.path.abspath(args.pretrained)
    from t2t_lite import checkpoints, model_dir, registry
    pretrain_steps = checkpoints.checkpoint_step(checkpoints.list_checkpoints(pretrained)[-1])
    theirs = model_dir.ModelDir.open(pretrained).hparams.to_dict()
    differ = {k for k, v in registry.hparams(args.hparams_set).to_dict().items()
              if k != "train_steps" and theirs[k] != v}
    if differ:
        sys.exit(f"recipe: {pretrained} was not trained with {args.hparams_set} "
                 f"(differs in {sorted(differ)}); the news-only model must have its hparams.")
    data_dir = os.path.join(args.work_dir, "news_data")
    run_command(["t2t-datagen", "--problem=translate_ende",
                 f"--tmp_dir={news_tmp_dir(args.shared_data, args.work_dir)}",
                 f"--data_dir={data_dir}", f"--vocab_from={pretrained}"], log_path)
    run_command(["t2t-datagen", "--problem=translate_ende_multi30k",
                 f"--tmp_dir={os.path.join(args.shared_data, 'multi30k')}",
                 f"--data_dir={data_dir}", f"--vocab_from={pretrained}"], log_path)
    common = ["--problem=translate_ende", f"--data_dir={data_dir}"]
    finetuned = os.path.join(args.work_dir, "finetuned")
    scratch = os.path.join(args.work_dir, "scratch")
    results = {"pretrain_steps": pretrain_steps, "finetune_steps": args.finetune_steps,
               "finetune_hparams": args.finetune_hparams, "beam_size": args.beam_size}
    results["finetune_seconds"] = train(
        [*common, f"--warm_start_from={pretrained}", f"--output_dir={finetuned}",
         f"--train_steps={args.finetune_steps}", f"--hparams={args.finetune_hparams}"], log_path)
    models = [("pretrained", pretrained), ("finetuned", finetuned)]
    if args.mixed_weight > 0:
        mixed = os.path.join(args.work_dir, "finetuned_mixed")
        results["mixed_weight"] = args.mixed_weight
        results["finetune_mixed_seconds"] = train(
            [*common, f"--warm_start_from={pretrained}", f"--output_dir={mixed}",
             f"--train_steps={args.finetune_steps}", f"--hparams={args.finetune_hparams}",
             f"--train_mix=translate_ende=1,translate_ende_multi30k={args.mixed_weight}"],
            log_path)
        models.append(("finetuned_mixed", mixed))
    if not args.skip_scratch:
        results["scratch_seconds"] = train(
            [*common, f"--hparams_set={args.hparams_set}", f"--output_dir={scratch}",
             f"--train_steps={pretrain_steps + args.finetune_steps}"], log_path)
        models.append(("scratch", scratch))
    rows, losses = {}, {}
    for name, model in models:
        losses[name] = dev_losses(model, data_dir)
        rows[name] = {test: decode(model, test, args, log_path) for test in TEST_SETS}
        print(name, losses[name], rows[name], flush=True)
    results["bleu"] = rows
    results["dev_loss"] = losses
    with open(os.path.join(args.work_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
