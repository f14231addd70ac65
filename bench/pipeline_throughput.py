"""Input-pipeline throughput and padding efficiency on real text.

    python bench/pipeline_throughput.py [--batch_size 4096] [--max_length 256]
        [--seconds 5] [--work_dir DIR] [--data ../shared/data]

Builds encoded shards for two corpora in `work_dir` (a temporary directory by
default; reused when given): Multi30k train (en-de) and WMT newstest
2008-2012 en-de. Until t2t-datagen is wired in here it encodes them itself
with a SentencePiece model trained on both (8k pieces, identity
normalization, byte fallback, pad 0 / eos 1 / unk 2, no bos), EOS appended,
into 4 shards each in the pipeline's input format.

For each corpus and mode (training; training padded to bucket boundaries;
evaluation) it iterates `make_dataset(...)` in a Python loop, as a trainer
does, for `seconds` after 10 warm-up batches, and prints real (non-PAD)
tokens per second over inputs and targets, target tokens per second (what
bench/train_step.py reports the trainer consuming), and padding efficiency
(real / padded tokens). Training repeats the data, so a short corpus is read
several times.
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import sentencepiece as spm  # noqa: E402
import tensorflow as tf  # noqa: E402

from t2t_lite.data import pipeline  # noqa: E402

PROBLEM = "bench_ende"
NEWSTEST = ["news-test2008", "newssyscomb2009", "newstest2009", "newstest2010",
            "newstest2011", "newstest2012"]


def corpora(data: str):
    """{name: [(english file, german file), ...]} of the real text used."""
    wmt = os.path.join(data, "wmt_newstest_2008_2012")
    return {
        "multi30k": [(os.path.join(data, "multi30k", "train.en"),
                      os.path.join(data, "multi30k", "train.de"))],
        "newstest08-12": [(os.path.join(wmt, f"{name}.en-de.en"),
                           os.path.join(wmt, f"{name}.en-de.de")) for name in NEWSTEST],
    }


def read_lines(path: str):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def read_pairs(files):
    pairs = []
    for source, target in files:
        english, german = read_lines(source), read_lines(target)
        if len(english) != len(german):
            raise SystemExit(f"{source} has {len(english)} lines, {target} {len(german)}.")
        pairs.extend(zip(english, german))
    return pairs


def train_vocab(work_dir: str, texts) -> spm.SentencePieceProcessor:
    prefix = os.path.join(work_dir, "bench_vocab")
    if not os.path.exists(prefix + ".model"):
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), model_prefix=prefix, vocab_size=8000,
            normalization_rule_name="identity", remove_extra_whitespaces=False,
            character_coverage=1.0, byte_fallback=True, pad_id=0, eos_id=1, unk_id=2,
            bos_id=-1, input_sentence_size=100000, shuffle_input_sentence=True,
            num_threads=2, minloglevel=2)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def write_shards(data_dir: str, pairs, sp: spm.SentencePieceProcessor, num_shards: int = 4):
    if os.path.exists(os.path.join(data_dir, f"{PROBLEM}-train-00000-of-{num_shards:05d}")):
        return
    os.makedirs(data_dir, exist_ok=True)
    sources = sp.encode([s for s, _ in pairs], add_eos=True)
    targets = sp.encode([t for _, t in pairs], add_eos=True)
    for shard in range(num_shards):
        path = os.path.join(data_dir, f"{PROBLEM}-train-{shard:05d}-of-{num_shards:05d}")
        with tf.io.TFRecordWriter(path + ".tmp") as writer:
            for inputs, target in zip(sources[shard::num_shards], targets[shard::num_shards]):
                feature = {"inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
                           "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=target))}
                writer.write(tf.train.Example(
                    features=tf.train.Features(feature=feature)).SerializeToString())
        os.replace(path + ".tmp", path)


def measure(dataset: tf.data.Dataset, seconds: float, warmup: int = 10):
    """(real tokens/s, real target tokens/s, padding efficiency, batches) of a timed loop."""
    iterator = iter(dataset)
    for _ in range(warmup):
        next(iterator)
    real = target_real = padded = batches = 0
    start = time.perf_counter()
    for batch in iterator:
        inputs, targets = batch["inputs"].numpy(), batch["targets"].numpy()
        target_tokens = int(np.count_nonzero(targets))
        target_real += target_tokens
        real += int(np.count_nonzero(inputs)) + target_tokens
        padded += inputs.size + targets.size
        batches += 1
        if time.perf_counter() - start >= seconds:
            break
    elapsed = time.perf_counter() - start
    return real / elapsed, target_real / elapsed, real / padded, batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch_size", type=int, default=4096)
    parser.add_argument("--max_length", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--work_dir", default="")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data"))
    args = parser.parse_args()
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="pipeline_bench_")

    pairs = {name: read_pairs(files) for name, files in corpora(args.data).items()}
    start = time.perf_counter()
    sp = train_vocab(work_dir, [text for corpus in pairs.values() for pair in corpus
                                for text in pair])
    for name, corpus in pairs.items():
        write_shards(os.path.join(work_dir, name), corpus, sp)
    print(f"data: {work_dir} (vocabulary and shards in {time.perf_counter() - start:.1f} s)")
    print(f"batch_size={args.batch_size} tokens per batch, max_length={args.max_length}, "
          f"timed {args.seconds:g} s per row, {os.cpu_count()} CPU cores\n")

    header = (f"{'corpus':<14} {'examples':>8} {'dropped':>7} {'mode':<16} {'batches':>7} "
              f"{'tokens/s':>10} {'tgt tok/s':>10} {'pad eff':>7}")
    print(header)
    print("-" * len(header))
    modes = [("train", dict(training=True, seed=1)),
             ("train padded", dict(training=True, seed=1, pad_to_bucket_boundary=True)),
             ("eval", dict(training=False, repeat=True))]
    for name in pairs:
        data_dir = os.path.join(work_dir, name)
        counts = pipeline.count_lengths(data_dir, PROBLEM, "train", args.max_length)
        for mode, kwargs in modes:
            dataset = pipeline.make_dataset(data_dir, PROBLEM, "train", args.batch_size,
                                            args.max_length, **kwargs)
            tok_s, tgt_s, efficiency, batches = measure(dataset, args.seconds)
            print(f"{name:<14} {counts.examples:>8} {counts.dropped:>7} {mode:<16} "
                  f"{batches:>7} {tok_s:>10.0f} {tgt_s:>10.0f} {efficiency:>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
