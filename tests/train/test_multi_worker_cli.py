"""The README's multi-machine commands, as a user types them, on 127.0.0.1.

`t2t-make-tf-configs`, then the same `t2t-trainer` command on each worker with
its TF_CONFIG (on the suite's shared t2t-datagen output); then again with more
steps (a resume). Both workers must exit 0, print the same losses, continue
with the losses and end with the weights of an uninterrupted run, and leave
one model directory (no scratch directories of the other worker).
"""

import os
import re
import socket
import subprocess
import sys

import numpy as np
import tensorflow as tf

from t2t_lite.bin import t2t_make_tf_configs

TRAIN = ["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64,batch_size=512,tokens_per_step=0",
         "--log_every=1", "--eval_every=0", "--eval_bleu_sentences=0", "--eval_steps=1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(configs, data_dir, output_dir, steps):
    procs = []
    for config in configs:
        env = dict(os.environ, TF_CONFIG=config)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "t2t_lite.bin.t2t_trainer", *TRAIN, f"--data_dir={data_dir}",
             f"--output_dir={output_dir}", f"--train_steps={steps}", "--strategy=multi_worker"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    return [re.findall(r"^step (\d+)/\d+  loss (\S+)", out, re.M) for out, _ in outputs]


def test_readme_multi_worker_commands(tmp_path, capsys, numbers_data):
    data_dir, output_dir = numbers_data, str(tmp_path / "model")
    workers = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    assert t2t_make_tf_configs.main([f"--workers={workers}", "--format=json"]) == 0
    configs = capsys.readouterr().out.splitlines()

    first = run_workers(configs, data_dir, output_dir, 3)
    assert [s for s, _ in first[0]] == ["1", "2", "3"] and first[0] == first[1]
    resumed = run_workers(configs, data_dir, output_dir, 5)  # both restore the chief's step 3
    assert [s for s, _ in resumed[0]] == ["4", "5"] and resumed[0] == resumed[1]
    # The resumed run continues from the same data position as an uninterrupted one.
    uninterrupted = run_workers(configs, data_dir, str(tmp_path / "uninterrupted"), 5)
    assert uninterrupted[0][3:] == resumed[0]
    names = sorted(os.listdir(output_dir))
    assert not [n for n in names if n.startswith("tmp_worker")], names
    assert "ckpt-5.index" in names and "ckpt-3.index" in names
    # The weights too: had the workers' copies drifted apart, the resumed run (both
    # restored from the chief's ckpt-3) would end elsewhere than the uninterrupted one.
    resumed_weights = tf.train.load_checkpoint(os.path.join(output_dir, "ckpt-5"))
    uninterrupted_weights = tf.train.load_checkpoint(
        os.path.join(tmp_path, "uninterrupted", "ckpt-5"))
    names = [n for n, _ in tf.train.list_variables(os.path.join(output_dir, "ckpt-5"))
             if not n.startswith(("_CHECKPOINTABLE_OBJECT_GRAPH", "data/", "save_counter"))]
    assert len(names) > 100  # the model's weights, the optimizer's slots and step
    for name in names:
        np.testing.assert_allclose(resumed_weights.get_tensor(name),
                                   uninterrupted_weights.get_tensor(name), rtol=0, atol=1e-6)
