"""The pipeline under MirroredStrategy over two logical CPU devices (the two that
conftest.py makes before TensorFlow starts)."""

import collections

import tensorflow as tf

from t2t_lite.data import pipeline

from toy_data import TOY_BUDGET as BUDGET, TOY_MAX_LENGTH as MAX_LENGTH
from toy_data import TOY_PROBLEM as PROBLEM, batch_examples, make_examples, write_shards


def test_per_replica_batches_under_mirrored_strategy(mirrored_strategy, tmp_path):
    data_dir = str(tmp_path / "data")
    examples = make_examples()
    write_shards(data_dir, examples, split="dev")
    write_shards(data_dir, examples, split="train")
    strategy = mirrored_strategy()
    assert strategy.num_replicas_in_sync == 2
    contexts = []

    def distributed(training):
        def fn(context):
            contexts.append((context.num_input_pipelines, context.input_pipeline_id))
            split = "train" if training else "dev"
            return pipeline.make_dataset(data_dir, PROBLEM, split, BUDGET, MAX_LENGTH,
                                         training=training, seed=0, input_context=context)
        return strategy.distribute_datasets_from_function(fn)

    # Evaluation: one pass, every example exactly once over both replicas.
    seen, devices, over_budget = [], set(), 0
    for per_replica in distributed(training=False):
        for batch in strategy.experimental_local_results(per_replica):
            devices.add(batch["inputs"].device.split(":")[-1])
            over_budget += int(max(tf.size(batch[name]) for name in batch) > BUDGET)
            seen.extend(batch_examples(batch))
    assert sorted(devices) == ["0", "1"]
    assert over_budget == 0
    assert collections.Counter(seen) == collections.Counter(examples)

    # Training: per-replica batches through strategy.run inside a tf.function.
    @tf.function
    def step(batch):
        within = tf.logical_and(tf.size(batch["inputs"]) <= BUDGET,
                                tf.size(batch["targets"]) <= BUDGET)
        return tf.cast(within, tf.int32), tf.shape(batch["inputs"])[0]

    iterator = iter(distributed(training=True))
    for _ in range(3):
        ok, rows = strategy.run(step, args=(next(iterator),))
        assert [int(v) for v in strategy.experimental_local_results(ok)] == [1, 1]
        assert all(int(v) >= 1 for v in strategy.experimental_local_results(rows))
    # One local worker: one input pipeline feeding both replicas, per-replica batches.
    assert contexts == [(1, 0), (1, 0)]
