"""Makes tests/decode/data/transformers_search.npz: Hugging Face transformers' own beam
search and greedy decoding over a fixed table of next-token logits, for
tests/decode/test_transformers_search.py.

Run with transformers 5.23.0 and torch 2.13.0 (the side venv of
tests/t2t_import/marian/README.md), never from t2t-lite or its tests:

    side-marian/bin/python tests/decode/make_transformers_search_reference.py [OUT.npz]

The "model" is a decoder-only `PreTrainedModel` with `GenerationMixin` whose logits at
decoder position t are `table[example, t, last token]`: what it predicts depends on the
step and the last token only, so the search's choices, not a network, are what is
compared. Ids are t2t-lite's: 0 `<pad>` (also the start token, as in Marian), 1 `</s>`.
Every example is decoded alone (batch 1), as the Marian references are, with
OPUS-MT's settings: `bad_words_ids=[[0]]`, `eos_token_id=1`, `pad_token_id=0`,
`early_stopping=False`, and per configuration `num_beams`, `length_penalty`,
`renormalize_logits`, `max_length` and `forced_eos_token_id` (1 or none). Recorded per
configuration and example: the returned hypotheses (`num_return_sequences=num_beams`,
best first) as ids after the start token padded with -1, and `sequences_scores`; and
the greedy ids of `num_beams=1` (same processors).
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput

VOCAB = 16        # 0 <pad>, 1 </s>, 14 other tokens: 2 * beam <= 15 unbanned for beam 6
EXAMPLES = 25     # 24 random tables, then TIE (below)
STEPS = 9         # table rows: decoder positions 0..8 (max_length 10 at most)
SEED = 20261128
# (num_beams, length_penalty, renormalize_logits, max_length, forced_eos)
CONFIGS = [
    (3, 1.0, True, 8, True), (3, 1.0, False, 8, True), (4, 1.0, True, 10, True),
    (4, 0.0, True, 8, True), (4, 2.0, True, 8, True), (4, 0.6, False, 10, True),
    (5, 1.0, True, 7, False), (5, 2.0, False, 8, False), (6, 1.0, True, 9, True),
    (6, 0.5, False, 10, True), (3, 0.0, False, 6, False), (6, 2.0, True, 7, True),
    (2, 1.0, True, 8, True),
]
GREEDY = [(8, True), (6, True), (10, False)]  # (max_length, forced_eos)


def logit_table(rng):
    """float32 [examples, steps, vocab (last token), vocab]: N(0, 2) logits, EOS more
    likely with each step, and <pad> often the likeliest (so banning it and
    renormalizing move the scores)."""
    table = rng.normal(0.0, 2.0, size=(EXAMPLES, STEPS, VOCAB, VOCAB))
    table[..., 1] += np.linspace(0.5, 4.0, STEPS)[None, :, None]
    table[..., 0] += rng.choice([0.0, 3.0], size=(EXAMPLES, STEPS, VOCAB))
    table[-1] = tie_table(table[-1])
    return table.astype(np.float32)


def tie_table(rows):
    """The last example: with beam 2 and length_penalty 1, "</s>" finishes at step 0
    (log 0.6), then at step 1 "2 </s>" finishes and the best alive hypothesis "2 5"
    scores exactly as it does (log(0.25 * 0.5) / 2 each): transformers stops there (its
    test is "no better than"); searching on would find "2 5 </s>" (log(0.25 * 0.5 *
    0.9) / 3, better). No other two candidates tie (the order of equal scores is
    torch's or TensorFlow's own): a token t not named gets logit -30 - 0.37 t."""
    rows = rows.copy()
    for (step, last), dist in {(0, 0): {1: 0.6, 2: 0.25, 4: 0.15}, (1, 2): {1: 0.5, 5: 0.5},
                               (1, 4): {1: 0.3, 6: 0.45, 8: 0.25},
                               (2, 5): {1: 0.9, 7: 0.1}}.items():
        rows[step, last] = -30.0 - 0.37 * np.arange(VOCAB)
        for token, p in dist.items():
            rows[step, last, token] = np.log(p)
    return rows


class TableConfig(PretrainedConfig):
    model_type = "t2t_lite_table"


class TableModel(PreTrainedModel, GenerationMixin):
    """Next-token logits read from one example's table: no cache, no weights that matter."""

    config_class = TableConfig

    def __init__(self, config, table):
        super().__init__(config)
        self.unused = torch.nn.Linear(1, 1)  # a parameter, for the device and dtype
        self.table = torch.from_numpy(table)  # [examples, steps, vocab, vocab]
        self.example = 0

    def forward(self, input_ids, attention_mask=None, **kwargs):
        del attention_mask, kwargs
        steps = torch.arange(input_ids.shape[1])  # position t reads row (t, token at t)
        logits = self.table[self.example][steps[None, :], input_ids]  # [rows, L, V]
        return CausalLMOutput(logits=logits)


def generate(model, example, **settings):
    model.example = example
    out = model.generate(torch.zeros([1, 1], dtype=torch.long),
                         attention_mask=torch.ones([1, 1], dtype=torch.long),
                         do_sample=False, bad_words_ids=[[0]], eos_token_id=1, pad_token_id=0,
                         bos_token_id=0, use_cache=False, return_dict_in_generate=True,
                         output_scores=True, **settings)
    return out


def generated(sequence):
    """The tokens after the start token up to the first </s> (generate fills the rest
    with </s>: its fill value is `pad_token_id or eos_token_id`, and pad is 0)."""
    tokens = sequence[1:].tolist()
    return tokens[:tokens.index(1) + 1] if 1 in tokens else tokens


def padded(rows, width):
    result = np.full((len(rows), width), -1, np.int32)
    for i, row in enumerate(rows):
        result[i, :len(row)] = row
    return result


def main(out_path):
    torch.manual_seed(0)
    table = logit_table(np.random.default_rng(SEED))
    model = TableModel(TableConfig(vocab_size=VOCAB, is_encoder_decoder=False), table).eval()
    arrays = {"table": table}
    with torch.no_grad():
        for c, (beams, penalty, renormalize, max_length, forced) in enumerate(CONFIGS):
            ids, scores = [], []
            for example in range(EXAMPLES):
                out = generate(model, example, num_beams=beams, num_return_sequences=beams,
                               length_penalty=penalty, early_stopping=False,
                               renormalize_logits=renormalize, max_length=max_length,
                               forced_eos_token_id=1 if forced else None)
                ids.append(padded([generated(seq) for seq in out.sequences], max_length - 1))
                scores.append(out.sequences_scores.numpy())
            arrays[f"beam{c}_ids"] = np.stack(ids)            # [examples, beams, max_length - 1]
            arrays[f"beam{c}_scores"] = np.stack(scores)      # [examples, beams] float32
        for g, (max_length, forced) in enumerate(GREEDY):
            rows = []
            for example in range(EXAMPLES):
                out = generate(model, example, num_beams=1, max_length=max_length,
                               renormalize_logits=True,
                               forced_eos_token_id=1 if forced else None)
                rows.append(generated(out.sequences[0]))
            arrays[f"greedy{g}_ids"] = padded(rows, max_length - 1)
    settings = {"configs": CONFIGS, "greedy": GREEDY, "vocab": VOCAB, "seed": SEED,
                "transformers": transformers.__version__, "torch": torch.__version__}
    arrays["settings"] = np.array(json.dumps(settings))
    np.savez_compressed(out_path, **arrays)
    print(f"wrote {out_path}: {len(CONFIGS)} beam settings, {len(GREEDY)} greedy, "
          f"{EXAMPLES} examples each")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         Path(__file__).parent / "data" / "transformers_search.npz")
