"""The pipeline under MirroredStrategy over two logical CPU devices.

Splitting the CPU into logical devices must happen before TensorFlow
initialises its devices, which any earlier test in this pytest process has
already done, so the check runs in a fresh subprocess.
"""

import json
import os
import subprocess
import sys
import textwrap

from paths import REPO_ROOT

SCRIPT = textwrap.dedent("""
    import collections, json, sys
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    sys.path.insert(0, sys.argv[1])
    from toy_data import TOY_BUDGET as BUDGET, TOY_MAX_LENGTH as MAX_LENGTH
    from toy_data import TOY_PROBLEM as PROBLEM, batch_examples, make_examples, write_shards
    from t2t_lite.data import pipeline

    data_dir = sys.argv[2]
    examples = make_examples()
    write_shards(data_dir, examples, split="dev")
    write_shards(data_dir, examples, split="train")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    report = {"replicas": strategy.num_replicas_in_sync, "contexts": [], "over_budget": 0}

    def dataset_fn(training):
        def fn(context):
            report["contexts"].append([context.num_input_pipelines, context.input_pipeline_id])
            split = "train" if training else "dev"
            return pipeline.make_dataset(data_dir, PROBLEM, split, BUDGET, MAX_LENGTH,
                                         training=training, seed=0, input_context=context)
        return strategy.distribute_datasets_from_function(fn)

    # Evaluation: one pass, every example exactly once over both replicas.
    seen, devices = [], set()
    for per_replica in dataset_fn(training=False):
        for batch in strategy.experimental_local_results(per_replica):
            devices.add(batch["inputs"].device.split(":")[-1])
            report["over_budget"] += int(max(tf.size(batch[name]) for name in batch) > BUDGET)
            seen.extend(batch_examples(batch))
    report["devices"] = sorted(devices)
    report["eval_complete"] = collections.Counter(seen) == collections.Counter(examples)

    # Training: per-replica batches through strategy.run inside a tf.function.
    @tf.function
    def step(batch):
        within = tf.logical_and(tf.size(batch["inputs"]) <= BUDGET,
                                tf.size(batch["targets"]) <= BUDGET)
        return tf.cast(within, tf.int32), tf.shape(batch["inputs"])[0]

    iterator = iter(dataset_fn(training=True))
    steps = []
    for _ in range(3):
        ok, rows = strategy.run(step, args=(next(iterator),))
        steps.append([int(v) for v in strategy.experimental_local_results(ok)] +
                     [int(v) for v in strategy.experimental_local_results(rows)])
    report["train_steps"] = steps
    print("REPORT " + json.dumps(report))
""")


def test_per_replica_batches_under_mirrored_strategy(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    tests_dir = str(REPO_ROOT / "tests")  # where toy_data.py is
    result = subprocess.run([sys.executable, "-c", SCRIPT, tests_dir, str(tmp_path / "data")],
                            capture_output=True, text=True, env=env, timeout=240)
    lines = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    report = json.loads(lines[-1][len("REPORT "):])
    assert report["replicas"] == 2
    # One local worker: one input pipeline feeding both replicas, per-replica batches.
    assert report["contexts"] == [[1, 0], [1, 0]]
    assert report["devices"] == ["0", "1"]
    assert report["over_budget"] == 0
    assert report["eval_complete"]
    for ok_0, ok_1, rows_0, rows_1 in report["train_steps"]:
        assert ok_0 == ok_1 == 1 and rows_0 >= 1 and rows_1 >= 1
