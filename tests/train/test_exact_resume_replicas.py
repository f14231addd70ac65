"""A resumed run on 2 replicas continues from the same data position as an
uninterrupted one (MirroredStrategy over 2 logical CPUs, in a fresh process:
logical devices must be set before TensorFlow starts)."""

import os
import subprocess
import sys
import textwrap

from paths import REPO_ROOT

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    sys.path.insert(0, sys.argv[1])
    import keras
    import t2t_lite
    from t2t_lite import registry
    from t2t_lite.train.keras_internals import set_random_seed
    from t2t_lite.train.schedule import make_optimizer
    from t2t_lite.train.trainer import Trainer, TrainOptions
    from toy_data import REVERSE_VOCAB, reverse_examples

    examples = reverse_examples(96, 4)
    width = max(len(x) for pair in examples for x in pair)
    data = np.array([[list(x) + [0] * (width - len(x)) for x in pair] for pair in examples],
                    np.int32)
    # Dropout on; 2 micro-batches of 4 sentences per replica per step.
    hp = registry.hparams("transformer_tiny").parse(
        "hidden_size=32,filter_size=64,batch_size=40,tokens_per_step=160")

    def dataset_fn(input_context, seed):
        ds = tf.data.Dataset.from_tensor_slices({"inputs": data[:, 0], "targets": data[:, 1]})
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds.shuffle(96, seed=seed).repeat().batch(4)

    def run(output_dir, steps):
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        set_random_seed(1)
        with strategy.scope():
            model = t2t_lite.build_model(hp, REVERSE_VOCAB)
            optimizer = make_optimizer(hp)
        options = TrainOptions(train_steps=steps, eval_every=0, log_every=1000,
                               save_checkpoints_steps=0, save_checkpoints_secs=0)
        trainer = Trainer(hp, model, optimizer, dataset_fn, output_dir, options, strategy)
        assert trainer.accumulate == 2 and not trainer.exact_data_resume
        trainer.train()
        return [v.numpy() for v in model.trainable_variables], int(trainer.batches_read.numpy())

    base = sys.argv[2]
    full, read_full = run(base + "/full", 8)
    run(base + "/resumed", 3)
    resumed, read_resumed = run(base + "/resumed", 8)
    assert read_full == read_resumed == 16, (read_full, read_resumed)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(full, resumed))
    assert diff < 1e-6, diff
    print("OK", diff)
""")


def test_two_replicas_interrupted_and_resumed_equal_uninterrupted(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(REPO_ROOT / "tests"),
                           str(tmp_path)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1].startswith("OK"), proc.stdout
