"""How far transformers' own log-probabilities move when a weight is mapped wrongly on purpose.

Runs in the side environment of make_reference.py (see README.md), from this directory:

    /path/to/side-venv/bin/python check_wrong_mappings.py

For each model it reloads the directory, checks that it reproduces `expected/logprobs.npz` exactly,
then breaks one thing at a time and prints the largest change of a recorded log-probability. It
writes nothing.
"""

import numpy as np
import torch
from transformers import MarianMTModel
from transformers.models.marian.modeling_marian import shift_tokens_right

MODELS = ("shared_swish", "separate_relu", "multilingual_gelu")


def target_logprobs(model, z, zero_start=False):
    """Per pair, log_softmax of the logits at the target tokens; `zero_start` zeroes the decoder's
    first input embedding (the `<pad>` start row) and nothing else."""
    config = model.config
    out = []
    for i in range(30):
        src, tgt = z[f"src_{i}"].tolist(), z[f"tgt_{i}"].tolist()
        dec = shift_tokens_right(torch.tensor([tgt]), config.pad_token_id, config.decoder_start_token_id)
        with torch.no_grad():
            embeds = model.model.decoder.embed_tokens(dec).clone()
            if zero_start:
                embeds[:, 0] = 0
            logits = model(input_ids=torch.tensor([src]), decoder_inputs_embeds=embeds).logits[0]
        logp = torch.log_softmax(logits, dim=-1)
        out.append(logp[torch.arange(len(tgt)), torch.tensor(tgt)].numpy())
    return out


def largest_change(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def swap_sin_cos(model):
    for table in (model.model.encoder.embed_positions, model.model.decoder.embed_positions):
        w = table.weight
        half = w.shape[1] // 2
        w.copy_(torch.cat([w[:, half:], w[:, :half]], dim=1))


def self_attention_biases(model, name):
    for layer in list(model.model.encoder.layers) + list(model.model.decoder.layers):
        getattr(layer.self_attn, name).bias.zero_()


BREAKS = {
    "sin/cos halves swapped": swap_sin_cos,
    "final_logits_bias dropped": lambda m: m.final_logits_bias.zero_(),
    "self-attention v_proj biases dropped": lambda m: self_attention_biases(m, "v_proj"),
    "self-attention out_proj biases dropped": lambda m: self_attention_biases(m, "out_proj"),
}


def main():
    torch.set_num_threads(1)
    for name in MODELS:
        z = np.load(f"{name}/expected/logprobs.npz")
        recorded = [z[f"logp_{i}"] for i in range(30)]
        model = MarianMTModel.from_pretrained(name).eval()
        assert largest_change(target_logprobs(model, z), recorded) == 0.0, name
        print(f"{name}:")
        print(f"  start (<pad>) row zeroed: {largest_change(target_logprobs(model, z, zero_start=True), recorded):.3g}")
        for label, breaks in BREAKS.items():
            broken = MarianMTModel.from_pretrained(name).eval()
            with torch.no_grad():
                breaks(broken)
            print(f"  {label}: {largest_change(target_logprobs(broken, z), recorded):.3g}")


if __name__ == "__main__":
    main()
