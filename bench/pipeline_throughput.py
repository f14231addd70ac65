"""Input-pipeline throughput and padding efficiency on real text.

    python bench/pipeline_throughput.py [--batch_size 4096] [--max_length 256]
        [--seconds 5] [--work_dir DIR] [--data ../shared/data]

Runs t2t-datagen (`t2t_lite.data.datagen.generate_data`) for two corpora, each
into its own data dir under `work_dir` (a temporary directory by default; in a
given one, datagen reuses the vocabulary and shards of an earlier run), so the
pipeline reads the vocabulary and shards that datagen writes for training:

  - multi30k: the registered problem translate_ende_multi30k on Multi30k train
    (29,000 pairs; 8,000-piece vocabulary, 4 train shards);
  - newstest08-12: translate_ende (WMT14 en-de) reading local files, with the
    WMT news test sets 2008-2012 as its train split (13,573 pairs) and
    newstest2013 / newstest2014 as dev / test, its vocabulary and train shards
    cut to Multi30k's 8,000 pieces and 4 shards so that the rows compare.

For each corpus and mode (training; training padded to bucket boundaries;
evaluation) it iterates `make_dataset(...)` over the train split in a Python
loop, as a trainer does, for `seconds` after 10 warm-up batches, and prints
real (non-PAD) tokens per second over inputs and targets, target tokens per
second (what bench/train_step.py reports the trainer consuming), and padding
efficiency (real / padded tokens). Training repeats the data, so a short
corpus is read several times.
"""

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.data import datagen, pipeline  # noqa: E402
from t2t_lite.data.problem import Problem  # noqa: E402
from t2t_lite.problems.translate_wmt import TranslateEnde  # noqa: E402

NEWSTEST = ["news-test2008", "newssyscomb2009", "newstest2009", "newstest2010",
            "newstest2011", "newstest2012"]


class NewstestEnde(TranslateEnde):
    """translate_ende with Multi30k's vocabulary size and train shard count."""

    vocab_size = 8000
    num_train_shards = 4


def newstest_tmp_dir(data: str, work_dir: str) -> str:
    """A tmp_dir for translate_ende: links to newstest 2008-2012 (train), 2013, 2014."""
    tmp_dir = os.path.join(work_dir, "newstest08-12-raw")
    os.makedirs(tmp_dir, exist_ok=True)
    sources = [(os.path.join(data, "wmt_newstest_2008_2012"), name) for name in NEWSTEST]
    sources += [(os.path.join(data, "wmt14"), name)
                for name in ("newstest2013", "newstest2014-full")]
    for folder, name in sources:
        for lang in ("en", "de"):
            link = os.path.join(tmp_dir, f"{name}.en-de.{lang}")
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(os.path.join(folder, f"{name}.en-de.{lang}")), link)
    return tmp_dir


def corpora(data: str, work_dir: str):
    """{corpus name: (problem, tmp_dir)} of the real text used."""
    return {
        "multi30k": (registry.problem("translate_ende_multi30k"), os.path.join(data, "multi30k")),
        "newstest08-12": (NewstestEnde(), newstest_tmp_dir(data, work_dir)),
    }


def generate(problem: Problem, data_dir: str, tmp_dir: str) -> str:
    """Runs datagen (reusing complete outputs); returns a one-line summary."""
    meta = datagen.generate_data(problem, data_dir, tmp_dir, log=lambda line: None)
    train = meta["splits"]["train"]
    return (f"{meta['vocab_file']} ({meta['vocab_size']} pieces), "
            f"{train['examples']} train examples in {len(train['shards'])} shards")


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

    start = time.perf_counter()
    problems = {}
    for name, (problem, tmp_dir) in corpora(args.data, work_dir).items():
        data_dir = os.path.join(work_dir, name)
        print(f"{name}: {generate(problem, data_dir, tmp_dir)}")
        problems[name] = (problem.name, data_dir)
    print(f"data: {work_dir} (datagen in {time.perf_counter() - start:.1f} s)")
    print(f"batch_size={args.batch_size} tokens per batch, max_length={args.max_length}, "
          f"timed {args.seconds:g} s per row, {os.cpu_count()} CPU cores\n")

    header = (f"{'corpus':<14} {'examples':>8} {'dropped':>7} {'mode':<16} {'batches':>7} "
              f"{'tokens/s':>10} {'tgt tok/s':>10} {'pad eff':>7}")
    print(header)
    print("-" * len(header))
    modes = [("train", dict(training=True, seed=1)),
             ("train padded", dict(training=True, seed=1, pad_to_bucket_boundary=True)),
             ("eval", dict(training=False, repeat=True))]
    for name, (problem_name, data_dir) in problems.items():
        counts = pipeline.count_lengths(data_dir, problem_name, "train", args.max_length)
        for mode, kwargs in modes:
            dataset = pipeline.make_dataset(data_dir, problem_name, "train", args.batch_size,
                                            args.max_length, **kwargs)
            tok_s, tgt_s, efficiency, batches = measure(dataset, args.seconds)
            print(f"{name:<14} {counts.examples:>8} {counts.dropped:>7} {mode:<16} "
                  f"{batches:>7} {tok_s:>10.0f} {tgt_s:>10.0f} {efficiency:>7.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
