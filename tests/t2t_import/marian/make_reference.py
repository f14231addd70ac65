"""Builds small Marian models with Hugging Face transformers and records transformers' own outputs.

Runs in a side environment (torch, transformers 5.23.0, sentencepiece, num2words: see README.md),
never in t2t-lite's. From this directory:

    /path/to/side-venv/bin/python make_reference.py [OUT_DIR [MODEL,MODEL...]]

OUT_DIR defaults to this directory; all models are made unless some are named. Everything is rebuilt from nothing: the training text (English,
German and French number words from num2words), SentencePiece models, MarianTokenizer vocabularies,
MarianMTModel training on the CPU, then every file in `<model>/expected/`. Seeds are fixed; torch uses
one thread. The number-word corpus is `reference_corpus.py`'s; what is recorded in `expected/` is
written by `reference_outputs.py`.
"""

import json
import lzma
import math
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np
import sentencepiece as spm
import torch
from safetensors.torch import save_file
from transformers import MarianConfig, MarianMTModel, MarianTokenizer

# This directory's parts (sys.path[0] when the script runs): the corpus, the recorded outputs.
from reference_corpus import SEED, source_line, split_numbers, words
from reference_outputs import check_same, record

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_THREADS = 1           # 2 threads ran 20x slower on the shared 2-core host (spin-waiting)

# The OPUS-MT field set of config.json (Helsinki-NLP/opus-mt-en-de as converted by transformers 4.x):
# fields MarianConfig does not use are still written there and must import.
OPUS_EXTRA_FIELDS = {
    "_num_labels": 3,
    "add_bias_logits": False,
    "add_final_layer_norm": False,
    "classif_dropout": 0.0,
    "classifier_dropout": 0.0,
    "gradient_checkpointing": False,
    "id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"},
    "label2id": {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2},
    "normalize_before": False,
    "normalize_embedding": False,
    "static_position_embeddings": True,
}

MODELS = {
    # name: languages, vocabularies, architecture and generation settings
    "shared_swish": dict(
        pairs=[("en", "de")], lang_tokens=[], separate_vocabs=False, source_pieces=250,
        target_pieces=None, activation="swish", num_beams=4, steps=1500, full_state_copy=True),
    "separate_relu": dict(
        pairs=[("en", "fr")], lang_tokens=[], separate_vocabs=True, source_pieces=160,
        target_pieces=130, activation="relu", num_beams=4, steps=1500, full_state_copy=False),
    "multilingual_gelu": dict(
        pairs=[("en", "de"), ("en", "fr")], lang_tokens=[">>deu<<", ">>fra<<", ">>spa<<"],
        separate_vocabs=False, source_pieces=160, target_pieces=300, activation="gelu",
        num_beams=6, steps=2000, full_state_copy=False),
}
ARCH = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
            max_position_embeddings=512, dropout=0.1, attention_dropout=0.0, activation_dropout=0.0,
            scale_embedding=True, init_std=0.02)


def train_spm(lines, prefix, vocab_size):
    """A SentencePiece unigram model with the trainer's defaults (nmt_nfkc, no byte fallback), as
    OPUS-MT's; `</s>` and `<unk>` only, no BOS/PAD pieces."""
    path = prefix + ".txt"
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(
        input=path, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, bos_id=-1, pad_id=-1, eos_id=1, unk_id=0,
        seed_sentencepiece_size=100000, num_threads=1, minloglevel=2)
    return prefix + ".model"


def used_pieces(model_path, lines):
    """The pieces the model produces for `lines`, as Marian's vocabulary holds what training used."""
    sp = spm.SentencePieceProcessor(model_file=model_path)
    seen = set()
    for line in lines:
        seen.update(sp.encode(line, out_type=str))
    return seen, sp


def make_vocab(pieces, extra_tokens, unused=()):
    """vocab.json as MarianTokenizer expects: `</s>` 0, `<unk>` 1, language tokens, the pieces
    sorted by code point (so the ids are not the SentencePiece ids), then `unused` pieces (sorted),
    `<pad>` last."""
    special = {"</s>", "<unk>", "<pad>"} | set(extra_tokens)
    ordered = ["</s>", "<unk>"] + list(extra_tokens)
    ordered += sorted(p for p in pieces if p not in special)
    ordered += sorted(p for p in unused if p not in special and p not in pieces)
    ordered.append("<pad>")
    return {p: i for i, p in enumerate(ordered)}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def build_tokenizer(name, spec, train_nums, work):
    """Trains the SentencePiece models, writes vocab.json (and target_vocab.json) and returns a
    MarianTokenizer plus the notes for the README."""
    src_lines = [source_line(n, s, t, False) for s, t in spec["pairs"] for n in train_nums]
    tgt_lines = [words(n, t) for _, t in spec["pairs"] for n in train_nums]
    notes = {}
    if spec["target_pieces"] is None:         # one SentencePiece model for both sides
        model = train_spm(src_lines + tgt_lines, os.path.join(work, name + ".joint"), spec["source_pieces"])
        src_model = tgt_model = model
    else:
        src_model = train_spm(src_lines, os.path.join(work, name + ".src"), spec["source_pieces"])
        tgt_model = train_spm(tgt_lines, os.path.join(work, name + ".tgt"), spec["target_pieces"])
    src_used, src_sp = used_pieces(src_model, src_lines)
    tgt_used, tgt_sp = used_pieces(tgt_model, tgt_lines)
    notes["spm_sizes"] = (src_sp.get_piece_size(), tgt_sp.get_piece_size())
    vocab_dir = os.path.join(work, name + ".vocab")
    os.makedirs(vocab_dir, exist_ok=True)
    kwargs = dict(source_spm=src_model, target_spm=tgt_model, source_lang=spec["pairs"][0][0],
                  target_lang="+".join(t for _, t in spec["pairs"]))
    if spec["separate_vocabs"]:
        # The source vocabulary also holds the SentencePiece pieces training never produced (placed
        # before `<pad>`): MarianMTModel uses the target's `<pad>` id as the encoder embedding's
        # padding_idx, which must lie inside the source vocabulary (zero row, never trained).
        all_src = [src_sp.id_to_piece(i) for i in range(src_sp.get_piece_size())]
        vocab = make_vocab(src_used, [], unused=all_src)
        target_vocab = make_vocab(tgt_used, [])
        if len(vocab) <= len(target_vocab):
            raise SystemExit(f"{name}: source vocabulary {len(vocab)} must be larger than target's {len(target_vocab)}")
        write_json(os.path.join(vocab_dir, "vocab.json"), vocab)
        write_json(os.path.join(vocab_dir, "target_vocab.json"), target_vocab)
        tok = MarianTokenizer(vocab=os.path.join(vocab_dir, "vocab.json"),
                              target_vocab_file=os.path.join(vocab_dir, "target_vocab.json"),
                              separate_vocabs=True, **kwargs)
        notes["vocab_sizes"] = (len(vocab), len(target_vocab))
    else:
        vocab = make_vocab(src_used | tgt_used, spec["lang_tokens"])
        write_json(os.path.join(vocab_dir, "vocab.json"), vocab)
        tok = MarianTokenizer(vocab=os.path.join(vocab_dir, "vocab.json"), **kwargs)
        notes["vocab_sizes"] = (len(vocab), len(vocab))
    src_vocab = tok.encoder
    tgt_vocab = tok.target_encoder if spec["separate_vocabs"] else tok.encoder
    notes["spm_pieces_not_in_vocab"] = (
        [p for p in map(src_sp.id_to_piece, range(src_sp.get_piece_size())) if p not in src_vocab],
        [p for p in map(tgt_sp.id_to_piece, range(tgt_sp.get_piece_size())) if p not in tgt_vocab])
    return tok, notes


def encode_pairs(tok, spec, nums):
    """(source ids with `</s>`, target ids with `</s>`) for every number and language pair."""
    multilingual = bool(spec["lang_tokens"])
    out = []
    for s, t in spec["pairs"]:
        for n in nums:
            enc = tok(source_line(n, s, t, multilingual), text_target=words(n, t))
            out.append((enc["input_ids"], enc["labels"]))
    return out


def make_model(spec, tok):
    src_vocab = len(tok.encoder)
    tgt_vocab = len(tok.target_encoder) if spec["separate_vocabs"] else src_vocab
    tgt_pad = (tok.target_encoder if spec["separate_vocabs"] else tok.encoder)["<pad>"]
    config = MarianConfig(
        vocab_size=src_vocab, decoder_vocab_size=tgt_vocab,
        share_encoder_decoder_embeddings=not spec["separate_vocabs"],
        activation_function=spec["activation"], pad_token_id=tgt_pad,
        decoder_start_token_id=tgt_pad, eos_token_id=0, forced_eos_token_id=0, bos_token_id=0,
        architectures=["MarianMTModel"], **ARCH)
    torch.manual_seed(SEED)
    return MarianMTModel(config)


def train(model, data, steps, log):
    """Adam with warmup and inverse-sqrt decay, batches of 64 pairs, cross-entropy on the target
    tokens. `final_logits_bias` is a buffer in transformers (never trained): a bias trained beside
    the model is added to it at the end, so the saved model carries a non-zero logits bias as
    converted OPUS-MT models do."""
    rng = random.Random(SEED)
    bias = torch.nn.Parameter(torch.zeros_like(model.final_logits_bias))
    params = list(model.parameters()) + [bias]
    opt = torch.optim.Adam(params, lr=3e-3, betas=(0.9, 0.98), eps=1e-9)
    warmup = 200
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, math.sqrt(warmup / (s + 1))))
    model.train()
    start = time.time()
    for step in range(steps):
        batch = [data[rng.randrange(len(data))] for _ in range(64)]
        src_len = max(len(s) for s, _ in batch)
        tgt_len = max(len(t) for _, t in batch)
        src_pad = model.config.vocab_size - 1      # the source vocabulary's `<pad>` (last id)
        input_ids = torch.tensor([s + [src_pad] * (src_len - len(s)) for s, _ in batch])
        mask = torch.tensor([[1] * len(s) + [0] * (src_len - len(s)) for s, _ in batch])
        labels = torch.tensor([t + [-100] * (tgt_len - len(t)) for _, t in batch])
        out = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        logits = out.logits + bias
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if step % 250 == 0 or step == steps - 1:
            log(f"  step {step} loss {loss.item():.4f} ({time.time() - start:.0f} s)")
    with torch.no_grad():
        model.final_logits_bias.add_(bias)
    model.eval()
    return time.time() - start


def finish_config(out_dir, spec, pad):
    """Adds OPUS-MT's generation fields and ignored fields to the config.json save_pretrained wrote,
    and writes generation_config.json as Helsinki-NLP's hold it."""
    path = os.path.join(out_dir, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(OPUS_EXTRA_FIELDS)
    config.update(bad_words_ids=[[pad]], max_length=512, num_beams=spec["num_beams"],
                  num_hidden_layers=config["encoder_layers"])
    write_json(path, dict(sorted(config.items())))
    # Helsinki-NLP's generation_config.json today (main branch, "set renormalize_logits=True for
    # better performance"): the same fields, renormalize_logits true, no _from_model_config.
    write_json(os.path.join(out_dir, "generation_config.json"), {
        "bad_words_ids": [[pad]], "bos_token_id": 0, "decoder_start_token_id": pad, "eos_token_id": 0,
        "forced_eos_token_id": 0, "max_length": 512, "num_beams": spec["num_beams"], "pad_token_id": pad,
        "renormalize_logits": True, "transformers_version": "4.32.0.dev0"})


def save_full_state(model, src_dir, out_dir):
    """A copy of the model whose model.safetensors holds the whole state_dict, tied aliases and
    sinusoidal position tables included (each alias stored as its own equal tensor), as older
    conversions' pytorch_model.bin files do."""
    shutil.copytree(src_dir, out_dir)
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    os.remove(os.path.join(out_dir, "model.safetensors"))
    save_file(state, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    return sorted(state)


def main():
    out_root = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else HERE
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(MODELS)
    torch.set_num_threads(NUM_THREADS)
    torch.use_deterministic_algorithms(True)
    train_nums, held_out = split_numbers()
    summary = {}
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        # SentencePiece stores its training input and model prefix in the model: relative names
        # keep source.spm / target.spm the same from run to run.
        os.chdir(tmp)
        work = "."
        for name in only:
            spec = MODELS[name]
            random.seed(SEED)
            np.random.seed(SEED)
            torch.manual_seed(SEED)
            print(f"{name}:", flush=True)
            tok, notes = build_tokenizer(name, spec, train_nums, work)
            print(f"  spm pieces {notes['spm_sizes']}, vocab.json sizes {notes['vocab_sizes']}, "
                  f"spm pieces left out of the vocabularies {notes['spm_pieces_not_in_vocab']}", flush=True)
            model = make_model(spec, tok)
            data = encode_pairs(tok, spec, train_nums)
            steps = int(os.environ.get("MAKE_REFERENCE_STEPS", spec["steps"]))   # smoke tests only
            seconds = train(model, data, steps, lambda m: print(m, flush=True))
            out_dir = os.path.join(out_root, name)
            if os.path.exists(out_dir):
                shutil.rmtree(out_dir)
            model.save_pretrained(out_dir)
            tok.save_pretrained(out_dir)
            finish_config(out_dir, spec, model.config.pad_token_id)
            correct, total = record(out_dir, spec, held_out, lambda m: print(m, flush=True))
            summary[name] = dict(steps=steps, train_seconds=round(seconds), greedy_right=f"{correct}/{total}",
                                 **notes)
            if spec["full_state_copy"]:
                full_dir = out_dir + "_full_state"
                if os.path.exists(full_dir):
                    shutil.rmtree(full_dir)
                keys = save_full_state(model, out_dir, full_dir)
                shutil.rmtree(os.path.join(full_dir, "expected"))
                check_same(out_dir, full_dir)
                compress(os.path.join(full_dir, "model.safetensors"))
                summary[name]["full_state_keys"] = len(keys)
        os.chdir(cwd)
    print(json.dumps(summary, indent=1, ensure_ascii=False))


def compress(path):
    """`path` -> `path`.xz (xz -9e), the original removed: the full-state copy repeats tensors
    (aliases, two equal position tables), and the tests decompress it
    (tests/t2t_import/marian_references.py)."""
    with open(path, "rb") as f, lzma.open(path + ".xz", "wb", preset=9 | lzma.PRESET_EXTREME) as g:
        g.write(f.read())
    os.remove(path)


if __name__ == "__main__":
    main()
