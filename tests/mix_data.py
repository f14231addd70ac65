"""Toy data directories of problems whose train split has several corpora.

A helper module (not a test): shards in datagen's format and a `{problem}.datagen.json`
recording each corpus's shard range, as t2t-datagen writes them, without learning a
vocabulary (`vocab_sha256` is a label chosen by the test).
"""

import json
import os

from t2t_lite.data import layout
from t2t_lite.data.integrity import shard_records

from toy_data import make_examples, write_records

MAIN, OTHER = "toy_mix", "toy_other"


def marked_examples(count: int, corpus: int, seed: int):
    """`make_examples` whose inputs[0] is 1,000 * corpus + 10 + index (`corpus_of`)."""
    return [((1000 * corpus + inputs[0],) + inputs[1:], targets)
            for inputs, targets in make_examples(count, longest=30, seed=seed)]


def corpus_of(example) -> int:
    return example[0][0] // 1000


def write_problem(data_dir, problem, corpora, vocab_sha256="toy vocabulary",
                  dev=None):
    """Writes `problem`'s train shards, a range per corpus, and its metadata.

    Args:
      corpora: [(name, examples, shards)]: corpus `name`'s examples go
        round-robin to its `shards` consecutive shards.
      dev: examples of a one-shard dev split, if any.
    Returns:
      The metadata written.
    """
    os.makedirs(data_dir, exist_ok=True)
    total = sum(n for _, _, n in corpora)
    names = [layout.shard_name(problem, "train", i, total) for i in range(total)]
    recorded, start = [], 0
    for name, examples, n in corpora:
        for j in range(n):
            write_records(os.path.join(data_dir, names[start + j]), examples[j::n])
        recorded.append({"name": name, "shard_range": [start, start + n],
                         "examples": len(examples)})
        start += n
    train = {"shards": names, "examples": sum(len(e) for _, e, _ in corpora),
             "corpora": recorded, **shard_records(os.path.join(data_dir, n) for n in names)}
    meta = {"problem": problem, "vocab_sha256": vocab_sha256, "vocab_file": f"{problem}.sp30.model",
            "layout_version": layout.LAYOUT_VERSION, "splits": {"train": train}}
    if dev is not None:
        dev_name = layout.shard_name(problem, "dev", 0, 1)
        write_records(os.path.join(data_dir, dev_name), dev)
        meta["splits"]["dev"] = {"shards": [dev_name], "examples": len(dev),
                                 **shard_records([os.path.join(data_dir, dev_name)])}
    with open(os.path.join(data_dir, f"{problem}.datagen.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f)
    return meta
