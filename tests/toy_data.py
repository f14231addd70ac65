"""Toy data for tests: examples of known content written in datagen's shard format.

A helper module (not a test): tests and the subprocess scripts of the
distributed tests import it; pytest puts tests/ on sys.path through conftest.py.
"""

import os
import random

import tensorflow as tf

from t2t_lite.data import layout

TOY_PROBLEM = "toy_problem"
TOY_BUDGET = 128      # tokens per batch
TOY_MAX_LENGTH = 40   # longest training example


def make_examples(count: int = 300, longest: int = 60, seed: int = 0):
    """Examples with unique contents: inputs[0] is 10 + index, all ids >= 1, EOS last."""
    rng = random.Random(seed)
    examples = []
    for i in range(count):
        n_in, n_out = rng.randint(2, longest), rng.randint(1, longest)
        inputs = [10 + i] + [rng.randint(2, 9) for _ in range(n_in - 2)] + [1]
        targets = [rng.randint(2, 9) for _ in range(n_out - 1)] + [1]
        examples.append((tuple(inputs), tuple(targets)))
    return examples


def write_shards(data_dir, examples, num_shards: int = 3, split: str = "train",
                 problem: str = TOY_PROBLEM):
    """Writes examples round-robin into datagen's shard format."""
    os.makedirs(data_dir, exist_ok=True)
    for shard in range(num_shards):
        path = os.path.join(data_dir, layout.shard_name(problem, split, shard, num_shards))
        write_records(path, examples[shard::num_shards])


def write_records(path, examples):
    """Writes (inputs, targets) id tuples as one TFRecord file of datagen's examples."""
    with tf.io.TFRecordWriter(path) as writer:
        for inputs, targets in examples:
            feature = {
                "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
                "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=targets))}
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def length(example) -> int:
    return max(len(example[0]), len(example[1]))


def unpad(row) -> tuple:
    return tuple(int(t) for t in row if t != 0)


def batch_examples(batch):
    return [(unpad(i), unpad(t)) for i, t in zip(batch["inputs"].numpy(), batch["targets"].numpy())]


# --- The copy-reverse task of the trainer tests -----------------------------

REVERSE_PROBLEM = "reverse_toy"
REVERSE_VOCAB = 30


def reverse_examples(count: int, seed: int):
    """Copy-reverse task: targets are the inputs reversed."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        body = [rng.randint(3, REVERSE_VOCAB - 1) for _ in range(rng.randint(1, 10))]
        out.append((tuple(body + [1]), tuple(body[::-1] + [1])))
    return out
