"""transformers' outputs recorded for make_reference.py's models (`record`: every file in
`<model>/expected/`), and the check that the full-state copy loads to the same logits
(`check_same`)."""

import json
import os

import numpy as np
import torch
from transformers import MarianMTModel, MarianTokenizer

from reference_corpus import LANG_TOKEN, source_line, words


def gen_kwargs(config, num_beams, renormalize=True):
    pad = config.pad_token_id
    return dict(max_length=512, num_beams=num_beams, do_sample=False, bad_words_ids=[[pad]],
                renormalize_logits=renormalize,
                forced_eos_token_id=0, eos_token_id=0, pad_token_id=pad, decoder_start_token_id=pad,
                length_penalty=1.0, early_stopping=False, num_return_sequences=num_beams if num_beams > 1 else 1,
                return_dict_in_generate=True, output_scores=True)


def edge_lines(spec):
    """Hand-made input lines: empty, characters outside the vocabularies, spaces at both ends, a long
    number, repeated words; multilingual models also get a missing and an unknown language token."""
    if spec["lang_tokens"]:
        tag = LANG_TOKEN[spec["pairs"][0][1]]
        return ["", f"{tag} ", f"{tag} twenty-one €", f"{tag}   seven hundred  ",
                f"{tag} {words(987654321, 'en')}", f"{tag} ÉCHO forty-two", f"{tag} one one one one",
                "three hundred and twelve", ">>spa<< thirty", ">>ita<< thirty", " >>fra<< thirty",
                f"{tag}thirty"]
    return ["", " ", "twenty-one €", "  seven hundred  ", words(987654321, "en"), "ÉCHO forty-two",
            "one one one one", "Forty-Two", "twenty\tthree", "fifty_five"]


def record(model_dir, spec, held_out, log):
    """transformers' outputs with the model as loaded back from `model_dir` (eval mode, float32)."""
    tok = MarianTokenizer.from_pretrained(model_dir)
    model = MarianMTModel.from_pretrained(model_dir, dtype=torch.float32)
    model.eval()
    config = model.config
    exp = os.path.join(model_dir, "expected")
    os.makedirs(exp, exist_ok=True)
    multilingual = bool(spec["lang_tokens"])

    lines = []
    per_pair = 50 // len(spec["pairs"])
    for s, t in spec["pairs"]:
        lines += [source_line(n, s, t, multilingual) for n in held_out[:per_pair]]
    lines += edge_lines(spec)
    with open(os.path.join(exp, "input.txt"), "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))

    src_ids = [tok(line)["input_ids"] for line in lines]
    write_lines(os.path.join(exp, "input.ids"), [ids_text(ids) for ids in src_ids])

    correct = total = 0
    refs = {}
    for s, t in spec["pairs"]:
        for n in held_out[:per_pair]:
            refs[source_line(n, s, t, multilingual)] = words(n, t)
    for beams, renormalize in ((1, True), (spec["num_beams"], True), (spec["num_beams"], False)):
        kw = gen_kwargs(config, beams, renormalize)
        ids_out, txt_out, score_out, nbest = [], [], [], []
        for ids in src_ids:
            x = torch.tensor([ids])
            with torch.no_grad():
                out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), **kw)
            seqs = out.sequences.tolist()
            hyps = [strip_hyp(seq) for seq in seqs]
            ids_out.append(ids_text(hyps[0]))
            txt_out.append(tok.decode(hyps[0], skip_special_tokens=True))
            if beams > 1:
                scores = out.sequences_scores.tolist()
                score_out.append(repr(scores[0]))
                nbest.append("\t".join(f"{ids_text(h)}|{sc!r}" for h, sc in zip(hyps, scores)))
        stem = "greedy" if beams == 1 else f"beam{beams}" + ("" if renormalize else ".no_renormalize")
        write_lines(os.path.join(exp, stem + ".ids"), ids_out)
        write_lines(os.path.join(exp, stem + ".txt"), txt_out)
        if beams > 1:
            write_lines(os.path.join(exp, stem + ".scores"), score_out)
            write_lines(os.path.join(exp, stem + ".nbest"), nbest)
        good = sum(refs[line] == txt for line, txt in zip(lines, txt_out) if line in refs)
        log(f"  {stem}: {good}/{len(refs)} held-out lines exactly right")
        if beams == 1:
            correct, total = good, len(refs)

    # Does generate() with no settings (reading generation_config.json) give the recorded beam output?
    beam_ids = open(os.path.join(exp, f"beam{spec['num_beams']}.ids"), encoding="utf-8").read().splitlines()
    same = 0
    for ids, want in zip(src_ids[:10], beam_ids):
        with torch.no_grad():
            got = model.generate(input_ids=torch.tensor([ids])).tolist()[0]
        same += ids_text(strip_hyp(got)) == want
    log(f"  generate() with generation_config.json's settings: {same}/10 lines equal beam{spec['num_beams']}.ids")

    # Teacher-forced log-probabilities of given pairs (30 held-out numbers; the multilingual model
    # alternates target languages).
    pair_nums = held_out[60:90]
    pairs = []
    for i, n in enumerate(pair_nums):
        s, t = spec["pairs"][i % len(spec["pairs"])]
        pairs.append((source_line(n, s, t, multilingual), words(n, t)))
    arrays = {}
    for i, (src, tgt) in enumerate(pairs):
        enc = tok(src, text_target=tgt)
        src_i, tgt_i = enc["input_ids"], enc["labels"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([src_i]), attention_mask=torch.ones(1, len(src_i), dtype=torch.long),
                           labels=torch.tensor([tgt_i])).logits[0]
        logp = torch.log_softmax(logits, dim=-1)
        arrays[f"src_{i}"] = np.array(src_i, dtype=np.int32)
        arrays[f"tgt_{i}"] = np.array(tgt_i, dtype=np.int32)
        arrays[f"logp_{i}"] = logp[torch.arange(len(tgt_i)), torch.tensor(tgt_i)].numpy().astype(np.float32)
    write_lines(os.path.join(exp, "pairs.tsv"), [f"{s}\t{t}" for s, t in pairs])
    np.savez(os.path.join(exp, "logprobs.npz"), **arrays)
    with open(os.path.join(exp, "generate_kwargs.json"), "w", encoding="utf-8") as f:
        kw = {k: v for k, v in gen_kwargs(config, spec["num_beams"]).items()
              if k not in ("return_dict_in_generate", "output_scores", "num_return_sequences")}
        json.dump(kw, f, indent=2, sort_keys=True)
        f.write("\n")
    return correct, total


def strip_hyp(seq):
    """A generated sequence without the start token and without padding after `</s>`."""
    seq = seq[1:]
    if 0 in seq:
        seq = seq[:seq.index(0) + 1]
    return seq


def ids_text(ids):
    return " ".join(str(i) for i in ids)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def check_same(dir_a, dir_b):
    """The full-state copy loads in transformers to the same logits as the original."""
    tok = MarianTokenizer.from_pretrained(dir_a)
    a = MarianMTModel.from_pretrained(dir_a).eval()
    b = MarianMTModel.from_pretrained(dir_b).eval()
    enc = tok("three hundred and twelve", text_target="dreihundertzwölf", return_tensors="pt")
    with torch.no_grad():
        la, lb = a(**enc).logits, b(**enc).logits
    assert torch.equal(la, lb), "full-state copy differs"
