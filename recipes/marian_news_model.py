"""A small OPUS-MT-style Marian model, built and trained by Hugging Face transformers on the WMT news sets.

    /path/to/side-venv/bin/python recipes/marian_news_model.py --shared_data=../shared/data \\
        --out_dir=news-marian [--steps=1200] [--threads=1]

No real OPUS-MT model can be fetched on a machine without access to the Hugging Face Hub, so
this script makes a stand-in that has everything an OPUS-MT model has: trained by transformers
itself (`MarianMTModel`, PyTorch), saved with `save_pretrained` in the Hub's layout
(`config.json` with the field set Helsinki-NLP's converted configs carry, `generation_config.json`,
`model.safetensors`, `source.spm` trained on the English side, `target.spm` on the German side,
one `vocab.json` for both, `tokenizer_config.json`), `swish` activation, scaled embeddings, a
tied output layer with a trained `final_logits_bias`. `recipes/marian_finetune.py` imports it
into t2t-lite and fine-tunes it on Multi30k.

It runs in a side environment, not t2t-lite's (t2t-lite never needs PyTorch):

    python3 -m venv side-marian
    side-marian/bin/pip install torch==2.13.0 transformers==5.23.0 sentencepiece==0.2.3 \\
        safetensors protobuf

Training data: the WMT news test sets 2008-2012 en-de (13,573 pairs) from ../shared/data,
batches of about `--batch_tokens` target tokens grouped by length, Adam (0.9, 0.98) with
inverse-square-root decay after `--warmup` steps, label smoothing 0.1, dropout 0.1.
"""

import argparse
import json
import math
import os
import random
import time

import sentencepiece as spm
import torch
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

NEWS_TRAIN = ["news-test2008", "newstest2009", "newstest2010", "newstest2011", "newstest2012",
              "newssyscomb2009"]
# The fields Helsinki-NLP's converted config.json files carry that MarianConfig does not use
# (copied from opus-mt-en-de's): an importer must accept them.
OPUS_EXTRA_FIELDS = {
    "_num_labels": 3, "add_bias_logits": False, "add_final_layer_norm": False,
    "classif_dropout": 0.0, "classifier_dropout": 0.0, "gradient_checkpointing": False,
    "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
    "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}, "normalize_before": False,
    "normalize_embedding": False, "static_position_embeddings": True,
}


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def news_pairs(shared_data):
    """(English, German) training pairs, both sides non-empty."""
    pairs = []
    for stem in NEWS_TRAIN:
        base = os.path.join(shared_data, "wmt_newstest_2008_2012", f"{stem}.en-de")
        if not (os.path.isfile(base + ".en") and os.path.isfile(base + ".de")):
            raise SystemExit(f"marian_news_model: {base}.en/.de not found (--shared_data)")
        en, de = read_lines(base + ".en"), read_lines(base + ".de")
        if len(en) != len(de):
            raise SystemExit(f"marian_news_model: {base}.en and .de differ in length")
        pairs += [(e, d) for e, d in zip(en, de) if e.strip() and d.strip()]
    return pairs


def train_spm(lines, prefix, vocab_size):
    """A SentencePiece unigram model with OPUS-MT's trainer settings (nmt_nfkc, no byte fallback,
    `<unk>` 0 and `</s>` 1, no BOS/PAD pieces). Relative paths: the model stores its prefix."""
    with open(prefix + ".txt", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=prefix + ".txt", model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, bos_id=-1, pad_id=-1, eos_id=1, unk_id=0, num_threads=1,
        minloglevel=2)
    return prefix + ".model"


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def build_tokenizer(pairs, pieces_per_side, work):
    """source.spm (English), target.spm (German) and one vocab.json as OPUS-MT's: `</s>` 0,
    `<unk>` 1, the pieces the training text uses (sorted), `<pad>` last; those `work` holds
    already when it has them."""
    src_model, tgt_model = (os.path.join(work, side + ".model") for side in ("source", "target"))
    if os.path.exists(os.path.join(work, "vocab.json")):  # a resumed run: its tokenizer
        return MarianTokenizer(vocab=os.path.join(work, "vocab.json"), source_spm=src_model,
                               target_spm=tgt_model, source_lang="en", target_lang="de")
    train_spm([e for e, _ in pairs], os.path.join(work, "source"), pieces_per_side)
    train_spm([d for _, d in pairs], os.path.join(work, "target"), pieces_per_side)
    used = set()
    for model, side in ((src_model, 0), (tgt_model, 1)):
        sp = spm.SentencePieceProcessor(model_file=model)
        for pair in pairs:
            used.update(sp.encode(pair[side], out_type=str))
    ordered = ["</s>", "<unk>"] + sorted(used - {"</s>", "<unk>", "<pad>"}) + ["<pad>"]
    write_json(os.path.join(work, "vocab.json"), {p: i for i, p in enumerate(ordered)})
    return MarianTokenizer(vocab=os.path.join(work, "vocab.json"), source_spm=src_model,
                           target_spm=tgt_model, source_lang="en", target_lang="de")


def token_batches(data, batch_tokens, rng):
    """Batches of (source ids, target ids) pairs of similar length, about `batch_tokens`
    target tokens each (padding counted), in random order."""
    order = sorted(range(len(data)), key=lambda i: (len(data[i][1]), len(data[i][0]), rng.random()))
    batches, batch, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, len(data[i][1]), len(data[i][0]))
        if batch and longest_if_added * (len(batch) + 1) > batch_tokens:
            batches.append(batch)
            batch, longest_if_added = [], max(len(data[i][1]), len(data[i][0]))
        batch.append(data[i])
        longest = longest_if_added
    batches.append(batch)
    rng.shuffle(batches)
    return batches


def train(model, data, args, state_path, log):
    """Adam with warm-up and inverse-square-root decay, label smoothing 0.1, gradient norm
    clipped at 1. `final_logits_bias` is a buffer in transformers: a bias trained beside the
    model is added to it at the end, as converted OPUS-MT models hold a non-zero one. The
    whole training state goes to `state_path` every `--save_every` steps; a run that finds
    one there continues from it. Returns the seconds trained (resumed runs' included)."""
    rng = random.Random(args.seed)
    bias = torch.nn.Parameter(torch.zeros_like(model.final_logits_bias))
    params = list(model.parameters()) + [bias]
    opt = torch.optim.Adam(params, lr=args.learning_rate, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / args.warmup, math.sqrt(args.warmup / (s + 1))))
    pad = model.config.pad_token_id
    step, batches, before = 0, [], 0.0
    if os.path.exists(state_path):
        state = torch.load(state_path, weights_only=False)
        model.load_state_dict(state["model"])
        with torch.no_grad():
            bias.copy_(state["bias"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        step, batches, before = state["step"], state["batches"], state["seconds"]
        log(f"resumed at step {step}")
    model.train()
    start, total, count = time.time(), 0.0, 0
    while step < args.steps:
        if not batches:
            batches = token_batches(data, args.batch_tokens, rng)
        batch = batches.pop()
        src_len = max(len(s) for s, _ in batch)
        tgt_len = max(len(t) for _, t in batch)
        input_ids = torch.tensor([s + [pad] * (src_len - len(s)) for s, _ in batch])
        mask = torch.tensor([[1] * len(s) + [0] * (src_len - len(s)) for s, _ in batch])
        labels = torch.tensor([t + [-100] * (tgt_len - len(t)) for _, t in batch])
        logits = model(input_ids=input_ids, attention_mask=mask, labels=labels).logits + bias
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100,
            label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        total, count = total + loss.item(), count + 1
        if step % 100 == 0 or step == args.steps:
            log(f"step {step}/{args.steps}  loss {total / count:.4f}  "
                f"lr {sched.get_last_lr()[0]:.2e}  {time.time() - start:.0f} s")
            total, count = 0.0, 0
        if step % args.save_every == 0 and step < args.steps:
            torch.save({"model": model.state_dict(), "bias": bias.detach(), "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "rng": rng.getstate(),
                        "torch_rng": torch.get_rng_state(), "step": step, "batches": batches,
                        "seconds": before + time.time() - start}, state_path + ".tmp")
            os.replace(state_path + ".tmp", state_path)
    with torch.no_grad():
        model.final_logits_bias.add_(bias)
    model.eval()
    return before + time.time() - start


def distinct_outputs(model, tok, lines):
    """How many different greedy translations `lines` get: a model that has not learned to
    use its source translates every line the same way."""
    enc = tok(lines, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**enc, num_beams=1, max_length=64)
    return len(set(tok.batch_decode(out, skip_special_tokens=True)))


def finish_config(out_dir, pad, num_beams):
    """config.json as Helsinki-NLP's hold it (the ignored fields and generation fields added)
    and their generation_config.json."""
    path = os.path.join(out_dir, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(OPUS_EXTRA_FIELDS)
    config.update(bad_words_ids=[[pad]], max_length=512, num_beams=num_beams,
                  num_hidden_layers=config["encoder_layers"])
    write_json(path, dict(sorted(config.items())))
    write_json(os.path.join(out_dir, "generation_config.json"), {
        "bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad,
        "eos_token_id": 0, "forced_eos_token_id": 0, "max_length": 512, "num_beams": num_beams,
        "pad_token_id": pad, "renormalize_logits": True, "transformers_version": "4.32.0.dev0"})


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shared_data", default="../shared/data")
    p.add_argument("--out_dir", required=True, help="where the Marian model directory goes")
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch_tokens", type=int, default=4096)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=400)
    p.add_argument("--pieces", type=int, default=8000, help="SentencePiece pieces per side")
    p.add_argument("--d_model", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--num_beams", type=int, default=4)
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch threads (on a busy 2-core host 2 ran slower than 1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--save_every", type=int, default=200,
                   help="steps between saves of the training state (OUT_DIR.work/)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    pairs = news_pairs(args.shared_data)
    out_dir = os.path.abspath(args.out_dir)
    if os.path.exists(os.path.join(out_dir, "model.safetensors")):
        raise SystemExit(f"marian_news_model: {out_dir} already holds a model")
    work = out_dir + ".work"  # the tokenizer and the training state, kept for resuming
    os.makedirs(work, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(work)  # SentencePiece stores its model prefix: relative names
    try:
        tok = build_tokenizer(pairs, args.pieces, ".")
    finally:
        os.chdir(cwd)
    data = [(tok(e)["input_ids"], tok(text_target=d)["input_ids"]) for e, d in pairs]
    pad = tok.encoder["<pad>"]
    config = MarianConfig(
        vocab_size=len(tok.encoder), decoder_vocab_size=len(tok.encoder), d_model=args.d_model,
        encoder_layers=args.layers, decoder_layers=args.layers,
        encoder_attention_heads=args.heads, decoder_attention_heads=args.heads,
        encoder_ffn_dim=args.ffn, decoder_ffn_dim=args.ffn, max_position_embeddings=512,
        dropout=0.1, attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True,
        activation_function="swish", pad_token_id=pad, decoder_start_token_id=pad,
        eos_token_id=0, forced_eos_token_id=0, bos_token_id=0,
        architectures=["MarianMTModel"])
    model = MarianMTModel(config)
    print(f"{len(pairs)} pairs, vocabulary {len(tok.encoder)}, "
          f"{sum(p.numel() for p in model.parameters())} parameters", flush=True)
    seconds = train(model, data, args, os.path.join(work, "train_state.pt"),
                    lambda m: print(m, flush=True))
    dev = read_lines(os.path.join(args.shared_data, "wmt14", "newstest2013.en-de.en"))[:16]
    distinct = distinct_outputs(model, tok, dev)
    print(f"{distinct} different greedy translations of newstest2013's first 16 lines", flush=True)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    finish_config(out_dir, pad, args.num_beams)
    write_json(os.path.join(out_dir, "training.json"), {
        "pairs": len(pairs), "train_seconds": round(seconds), "torch": torch.__version__,
        "distinct_greedy_outputs_of_16": distinct,
        **{k: v for k, v in vars(args).items() if k not in ("out_dir", "shared_data")}})
    print(f"saved {out_dir} ({seconds:.0f} s of training)")


if __name__ == "__main__":
    main()
