"""Tests of the bucket maths and the tf.data input pipeline (exact values)."""

import bisect
import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data import bucketing, pipeline
from t2t_lite.errors import T2TError
from toy_data import (TOY_BUDGET, TOY_MAX_LENGTH, TOY_PROBLEM, batch_examples, length,
                      make_examples, write_shards)

PROBLEM, BUDGET, MAX_LENGTH = TOY_PROBLEM, TOY_BUDGET, TOY_MAX_LENGTH


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("data"))
    write_shards(path, make_examples())
    return path


# --- Bucket maths: golden lists, worked out by hand ------------------------------

# x -> max(x + 1, floor(1.1 x)) from 8: 8..20 by +1 (floor(1.1 x) <= x + 1 up to 20),
# then 22, 24, 26, 28, 30, 33, 36, 39, 42, 46, 50, 55, 60, 66, 72, 79, 86, 94, 103,
# 113, 124, 136, 149, 163, 179, 196, 215, 236, 259; cut below max_length, which ends the list.
BOUNDARIES_256 = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 26, 28, 30, 33,
                  36, 39, 42, 46, 50, 55, 60, 66, 72, 79, 86, 94, 103, 113, 124, 136, 149,
                  163, 179, 196, 215, 236, 256]
# 4096 // b for each b above (e.g. 9 * 455 = 4095, 9 * 456 = 4104; 236 * 17 = 4012).
SIZES_4096_256 = [512, 455, 409, 372, 341, 315, 292, 273, 256, 240, 227, 215, 204, 186, 170,
                  157, 146, 136, 124, 113, 105, 97, 89, 81, 74, 68, 62, 56, 51, 47, 43, 39, 36,
                  33, 30, 27, 25, 22, 20, 19, 17, 16]
BOUNDARIES_64 = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 26, 28, 30, 33,
                 36, 39, 42, 46, 50, 55, 60, 64]
SIZES_1024_64 = [128, 113, 102, 93, 85, 78, 73, 68, 64, 60, 56, 53, 51, 46, 42, 39, 36, 34,
                 31, 28, 26, 24, 22, 20, 18, 17, 16]
# Evaluation: growth continued from 64 (70, 77, 84, ...) up to the 1024-token budget.
EVAL_EXTRA_1024_64 = [70, 77, 84, 92, 101, 111, 122, 134, 147, 161, 177, 194, 213, 234, 257,
                      282, 310, 341, 375, 412, 453, 498, 547, 601, 661, 727, 799, 878, 965, 1024]


@pytest.mark.parametrize("max_length, kwargs, expected", [
    (256, {}, BOUNDARIES_256),
    (64, {}, BOUNDARIES_64),
    (5, {}, [5]),
    (8, {}, [8]),
    (9, {}, [8, 9]),
    (50, {"min_length": 4, "length_bucket_step": 1.5}, [4, 6, 9, 13, 19, 28, 42, 50]),
])
def test_bucket_boundaries(max_length, kwargs, expected):
    assert bucketing.bucket_boundaries(max_length, **kwargs) == expected


@pytest.mark.parametrize("batch_size, boundaries, expected", [
    (4096, BOUNDARIES_256, SIZES_4096_256),
    (1024, BOUNDARIES_64, SIZES_1024_64),
    (100, [5], [20]),
    (10, [3, 4, 10], [3, 2, 1]),
])
def test_bucket_batch_sizes(batch_size, boundaries, expected):
    sizes = bucketing.bucket_batch_sizes(batch_size, boundaries)
    assert sizes == expected
    for size, bound in zip(sizes, boundaries):
        assert size * bound <= batch_size < (size + 1) * bound


def test_eval_bucket_boundaries():
    assert bucketing.eval_bucket_boundaries(64, 1024) == BOUNDARIES_64 + EVAL_EXTRA_1024_64
    assert bucketing.eval_bucket_boundaries(64, 64) == BOUNDARIES_64
    assert bucketing.eval_bucket_boundaries(40, 45) == bucketing.bucket_boundaries(40) + [44, 45]


@pytest.mark.parametrize("call", [
    lambda: bucketing.bucket_batch_sizes(100, [8, 200]),
    lambda: bucketing.bucket_batch_sizes(100, [8, 8]),
    lambda: bucketing.bucket_batch_sizes(100, []),
    lambda: bucketing.bucket_boundaries(0),
    lambda: bucketing.bucket_boundaries(64, length_bucket_step=1.0),
    lambda: bucketing.eval_bucket_boundaries(256, 100),
])
def test_bucket_errors(call):
    with pytest.raises(T2TError):
        call()


# --- Shard discovery ----------------------------------------------------------

def test_missing_shards_error_names_dir_and_pattern(tmp_path):
    with pytest.raises(T2TError) as info:
        pipeline.make_dataset(str(tmp_path), PROBLEM, "dev", BUDGET, MAX_LENGTH, training=False)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path) in message
    assert f"{PROBLEM}-dev-?????-of-?????" in message


def test_incomplete_shards_and_temp_files(tmp_path):
    write_shards(str(tmp_path), make_examples(20), num_shards=3)
    (tmp_path / f"{PROBLEM}-train-00001-of-00003.tmp").write_bytes(b"")
    assert len(pipeline.shard_files(str(tmp_path), PROBLEM, "train")) == 3
    os.remove(tmp_path / f"{PROBLEM}-train-00002-of-00003")
    with pytest.raises(T2TError, match="2 of 3 shards"):
        pipeline.shard_files(str(tmp_path), PROBLEM, "train")
    with pytest.raises(T2TError, match="Unknown split"):
        pipeline.shard_files(str(tmp_path), PROBLEM, "validation")


# --- One epoch ----------------------------------------------------------------

def check_batches(batches, boundaries, budget):
    """Every batch within budget, one bucket per batch; returns all examples."""
    seen = []
    for batch in batches:
        b, s = batch["inputs"].shape
        assert batch["inputs"].dtype == tf.int32 and batch["targets"].dtype == tf.int32
        assert b * s <= budget and b * batch["targets"].shape[1] <= budget
        examples = batch_examples(batch)
        buckets = {bisect.bisect_left(boundaries, length(e)) for e in examples}
        assert len(buckets) == 1
        seen.extend(examples)
    return seen


@pytest.mark.parametrize("pad", [False, True])
def test_training_epoch_keeps_each_short_example_once(data_dir, pad):
    examples = make_examples()
    ds = pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH, training=True,
                               seed=1, repeat=False, pad_to_bucket_boundary=pad)
    boundaries = bucketing.bucket_boundaries(MAX_LENGTH)
    batches = list(ds)
    seen = check_batches(batches, boundaries, BUDGET)
    kept = [e for e in examples if length(e) <= MAX_LENGTH]
    dropped = [e for e in examples if length(e) > MAX_LENGTH]
    assert (len(kept), len(dropped)) == (140, 160)
    assert collections.Counter(seen) == collections.Counter(kept)
    assert not set(seen) & set(dropped)
    if pad:  # static shapes: [batch size of the bucket, boundary], except a last partial batch
        sizes = bucketing.bucket_batch_sizes(BUDGET, boundaries)
        for batch in batches:
            k = bisect.bisect_left(boundaries, length(batch_examples(batch)[0]))
            assert batch["inputs"].shape[1] == batch["targets"].shape[1] == boundaries[k]
            assert batch["inputs"].shape[0] <= sizes[k]


def test_repeated_padded_batches_have_one_shape_per_bucket(data_dir):
    # With repeat, a bucket emits only full windows: shape [batch size, boundary] exactly.
    ds = pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH, training=True,
                               seed=2, pad_to_bucket_boundary=True)
    boundaries = bucketing.bucket_boundaries(MAX_LENGTH)
    sizes = bucketing.bucket_batch_sizes(BUDGET, boundaries)
    for batch in ds.take(30):
        k = bisect.bisect_left(boundaries, length(batch_examples(batch)[0]))
        assert batch["inputs"].shape == batch["targets"].shape == (sizes[k], boundaries[k])


def test_count_lengths(data_dir):
    counts = pipeline.count_lengths(data_dir, PROBLEM, "train", MAX_LENGTH)
    longest = max(length(e) for e in make_examples())
    assert counts == pipeline.LengthCounts(examples=300, kept=140, dropped=160, longest=longest)


@pytest.mark.parametrize("pad", [False, True])
def test_eval_keeps_over_long_examples_in_order(tmp_path, pad):
    examples = make_examples()
    huge = (tuple([7] * 199 + [1]), (5, 1))  # 200 tokens > the 128-token budget
    examples.append(huge)
    write_shards(str(tmp_path), examples, split="dev")
    ds = pipeline.make_dataset(str(tmp_path), PROBLEM, "dev", BUDGET, MAX_LENGTH,
                               training=False, pad_to_bucket_boundary=pad)
    boundaries = bucketing.eval_bucket_boundaries(MAX_LENGTH, BUDGET)
    batches = list(ds)
    alone = [b for b in batches if b["inputs"].shape == (1, 200)]
    assert len(alone) == 1 and batch_examples(alone[0]) == [huge]
    seen = check_batches([b for b in batches if b is not alone[0]], boundaries, BUDGET)
    assert collections.Counter(seen + [huge]) == collections.Counter(examples)
    again = [batch_examples(b) for b in ds]
    assert again == [batch_examples(b) for b in batches]


# --- Shuffling and checkpoints ---------------------------------------------------

def first_batches(data_dir, seed, n=6):
    ds = pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH, training=True,
                               seed=seed, shuffle_buffer=64)
    return [batch_examples(b) for b in ds.take(n)]


def test_seeded_shuffle_is_reproducible(data_dir):
    assert first_batches(data_dir, 7) == first_batches(data_dir, 7)
    assert first_batches(data_dir, 7) != first_batches(data_dir, 8)


def test_iterator_checkpoint_restores_exactly(data_dir, tmp_path):
    def make():
        return pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH,
                                     training=True, seed=3, shuffle_buffer=64)
    iterator = iter(make())
    for _ in range(5):
        next(iterator)
    path = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "ckpt"))
    expected = [batch_examples(next(iterator)) for _ in range(40)]  # crosses epochs

    restored = iter(make())
    tf.train.Checkpoint(iterator=restored).read(path).assert_consumed()
    assert [batch_examples(next(restored)) for _ in range(40)] == expected


# --- Sharding across input pipelines ------------------------------------------------

@pytest.mark.parametrize("num_shards", [3, 1])  # whole shards / every n-th example
def test_input_context_shares_are_disjoint_and_complete(tmp_path, num_shards):
    examples = make_examples(60)
    write_shards(str(tmp_path), examples, num_shards=num_shards, split="test")
    shares = []
    for index in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=index,
                                             num_replicas_in_sync=2)
        ds = pipeline.make_dataset(str(tmp_path), PROBLEM, "test", BUDGET, MAX_LENGTH,
                                   training=False, input_context=context)
        shares.append([e for batch in ds for e in batch_examples(batch)])
    assert shares[0] and shares[1]
    assert collections.Counter(shares[0] + shares[1]) == collections.Counter(examples)


# --- Padding efficiency -----------------------------------------------------------

def test_padding_efficiency_exact():
    batch = {"inputs": tf.constant([[5, 1, 0, 0], [5, 6, 7, 1]], tf.int32),   # 6 real of 8
             "targets": tf.constant([[1, 0], [4, 1]], tf.int32)}              # 3 real of 4
    ds = tf.data.Dataset.from_tensors(batch).repeat(3)
    assert pipeline.padding_efficiency(ds) == pytest.approx(9 / 12, abs=1e-12)
    assert pipeline.padding_efficiency(ds.take(0)) == 0.0
    with pytest.raises(T2TError):
        pipeline.padding_efficiency(ds.repeat())


def test_padding_efficiency_of_pipeline(data_dir):
    # Evaluation order: a seeded training dataset reshuffles on every pass over it.
    ds = pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH, training=False)
    real = padded = 0
    for batch in ds:
        for name in ("inputs", "targets"):
            array = batch[name].numpy()
            real += int(np.count_nonzero(array))
            padded += array.size
    assert real == sum(len(i) + len(t) for i, t in make_examples())
    assert pipeline.padding_efficiency(ds) == pytest.approx(real / padded, abs=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_pipelines_run_without_the_autotune_model_thread(data_dir, training):
    # Deleting an iterator whose autotune model thread runs waits for that thread's
    # next wake-up, up to a minute (pipeline.without_autotune_thread): training and
    # evaluation pipelines must leave it off.
    ds = pipeline.make_dataset(data_dir, PROBLEM, "train", BUDGET, MAX_LENGTH,
                               training=training, seed=1)
    assert ds.options().autotune.enabled is False
    assert next(iter(ds))["targets"].shape[0] > 0
