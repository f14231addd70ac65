"""t2t-lite's Marian vocabulary against transformers' MarianTokenizer, on random lines.

Two steps, from this directory (each prints only, and the first writes OUT.json):

    /path/to/side-venv/bin/python check_tokenizer.py reference OUT.json
    /path/to/t2t-lite/.venv/bin/python check_tokenizer.py compare OUT.json

`reference` (the side environment of make_reference.py, see README.md) makes 1,500 random
lines of number words, spaces, TABs, `>>xxx<<`, `</s>`, `<unk>`, `<pad>` and characters
outside the vocabularies (`random.Random(7)`), and writes MarianTokenizer's source ids
(`tokenizer(line)`) and target ids (`tokenizer(text_target=line)`) of each for the three
models; it also prints the ids of the lines that test_marian_vocab.py's SPECIALS pins.
It also writes 3,000 random target id sequences per model (`random.Random(8)`, ending with
`</s>` as generation's do) and `tokenizer.decode(ids, skip_special_tokens=True)` of each.
`compare` (t2t-lite's environment) encodes the same lines with `MarianVocab` and prints,
per model and side, how many lines differ from transformers' ids renumbered, then how many
of the id sequences (renumbered) decode to another text.
"""

import json
import pathlib
import random
import sys
import tempfile
import warnings

MODELS = ("shared_swish", "separate_relu", "multilingual_gelu")
HERE = pathlib.Path(__file__).parent
ATOMS = ["one", "two", "hundred", "and", "vingt", "drei", "zwei", "-", " ", "  ", "\t", "</s>",
         "<unk>", "<pad>", ">>deu<<", ">>fra<<", ">>ita<<", ">>", "<<", "€", "É", "x", "q", "ü",
         "_", ",", "Forty", "\u00a0", "\u3000", "ｏｎｅ", "½"]
SPECIALS = [("separate_relu", line) for line in (
    "eleven</s>eleven", "<unk>>>deu<< one", "a <pad> b", ">>deu<< one</s>>>fra<< two", " </s> ",
    ">>de</s>u<< one")] + [("multilingual_gelu", line) for line in (
        ">>deu<< one</s>>>fra<< two", "eleven</s>eleven", ">>de</s>u<< one")]


def random_outputs(tokenizer):
    """3,000 random target id sequences as generation gives them: no `</s>` or `<pad>` but
    the one `</s>` that ends each (`<unk>` and language tokens may occur)."""
    rng = random.Random(8)
    ids = [i for i, piece in tokenizer.decoder.items() if piece not in ("</s>", "<pad>")]
    return [[rng.choice(ids) for _ in range(rng.randrange(0, 8))] + [tokenizer.eos_token_id]
            for _ in range(3000)]


def random_lines():
    rng = random.Random(7)
    return ["".join(rng.choice(ATOMS) for _ in range(rng.randrange(0, 9))) for _ in range(1500)]


def reference(out_path):
    warnings.filterwarnings("ignore")  # "Recommended: pip install sacremoses."
    from transformers import MarianTokenizer
    lines = random_lines()
    out = {"lines": lines}
    tokenizers = {name: MarianTokenizer.from_pretrained(HERE / name) for name in MODELS}
    for name, tok in tokenizers.items():
        outputs = random_outputs(tok)
        out[name] = {"source": [tok(line)["input_ids"] for line in lines],
                     "target": [tok(text_target=line)["input_ids"] for line in lines],
                     "outputs": outputs,
                     "texts": [tok.decode(ids, skip_special_tokens=True) for ids in outputs]}
    pathlib.Path(out_path).write_text(json.dumps(out), encoding="utf-8")
    for name, line in SPECIALS:
        tok = tokenizers[name]
        print(name, repr(line), "source", tok(line)["input_ids"],
              "target", tok(text_target=line)["input_ids"])


def renumbered(table):
    """Marian id -> t2t-lite id: <pad> 0, </s> 1, <unk> 2, the others in order from 3."""
    specials = {table["<pad>"]: 0, table["</s>"]: 1, table["<unk>"]: 2}
    others = sorted(i for i in table.values() if i not in specials)
    return {**specials, **{old: 3 + k for k, old in enumerate(others)}}


def compare(ref_path):
    import tensorflow as tf
    from t2t_lite.marian.vocab_file import write_vocab
    from t2t_lite.marian.vocabulary import MarianVocab
    ref = json.loads(pathlib.Path(ref_path).read_text(encoding="utf-8"))
    lines = ref["lines"]
    for name in MODELS:
        vocab = MarianVocab.from_file(write_vocab(str(HERE / name), tempfile.mkdtemp()))
        for side in ("source", "target"):
            file = "target_vocab.json" if side == "target" and vocab.separate_vocabs \
                else "vocab.json"
            new = renumbered(json.loads((HERE / name / file).read_text(encoding="utf-8")))
            tables = vocab._source if side == "source" else vocab._target
            # the source side without the language-token check (random lines lack one)
            ours = vocab._encode(tables, tf.constant(lines)).to_list()
            theirs = [[new.get(i, -1) for i in row] for row in ref[name][side]]
            differ = [(line, a, b) for line, a, b in zip(lines, ours, theirs) if a != b]
            pad_only = all("<pad>" in line and len(a) == len(b)
                           and all(x == y or y == -1 for x, y in zip(a, b))
                           for line, a, b in differ)
            print(f"{name} {side}: {len(differ)} of {len(lines)} lines differ"
                  + (" (each where transformers gives an id outside the table, -1: <pad>)"
                     if differ and pad_only else ""))
        # `new`: the target's renumbering (the loop's last side)
        texts = vocab.decode_ids([[new[i] for i in row] for row in ref[name]["outputs"]])
        differ = sum(a != b for a, b in zip(texts, ref[name]["texts"]))
        print(f"{name} decode: {differ} of {len(texts)} id sequences differ")


if __name__ == "__main__":
    {"reference": reference, "compare": compare}[sys.argv[1]](sys.argv[2])
