"""Writes what tensor2tensor 1.15.7's t2t-datagen wrote, decoded: run in t2t's venv.

    python dump_t2t_datagen.py DATA_DIR PROBLEM OUT_DIR

For each split, `OUT_DIR/PROBLEM/{split}.tsv`: one line per example, inputs TAB
targets (decoded with the problem's vocabulary, t2t's SubwordTextEncoder) TAB
input ids TAB target ids (space-separated, EOS included), sorted (t2t shuffles
each shard: the split is a multiset); the vocabulary file is copied beside them.
How the data directories were made: README.md.
"""

import glob
import os
import shutil
import sys

import tensorflow.compat.v1 as tf
from tensor2tensor.data_generators import text_encoder


def main(data_dir, problem, out_dir):
    vocab_path, = glob.glob(os.path.join(data_dir, f"vocab.{problem}.*.subwords"))
    encoder = text_encoder.SubwordTextEncoder(vocab_path)
    os.makedirs(os.path.join(out_dir, problem), exist_ok=True)
    shutil.copy(vocab_path, os.path.join(out_dir, problem))
    for split in ("train", "dev"):
        lines = []
        for path in sorted(glob.glob(os.path.join(data_dir, f"{problem}-{split}-*"))):
            for record in tf.io.tf_record_iterator(path):
                example = tf.train.Example.FromString(record)
                ids = {k: list(example.features.feature[k].int64_list.value)
                       for k in ("inputs", "targets")}
                text = {k: encoder.decode(v[:-1]) for k, v in ids.items()}  # EOS dropped
                lines.append("\t".join([text["inputs"], text["targets"],
                                        " ".join(map(str, ids["inputs"])),
                                        " ".join(map(str, ids["targets"]))]))
        with open(os.path.join(out_dir, problem, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in sorted(lines)))


if __name__ == "__main__":
    main(*sys.argv[1:])
