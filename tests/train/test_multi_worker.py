"""Two worker processes on 127.0.0.1 train together with MultiWorkerMirroredStrategy."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np

from toy_data import REVERSE_PROBLEM as PROBLEM
from toy_data import REVERSE_VOCAB as VOCAB
from toy_data import reverse_examples, write_shards

WORKER = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    from t2t_lite.train.strategy import make_strategy
    strategy = make_strategy("auto")  # TF_CONFIG names a cluster -> multi-worker
    from t2t_lite import registry
    from t2t_lite.train.experiment import make_trainer
    from t2t_lite.train.trainer import TrainOptions
    data_dir, output_dir, weights_file = sys.argv[1:4]
    hp = registry.hparams("transformer_tiny").parse(
        "batch_size=128,max_length=16,hidden_size=32,filter_size=64,tokens_per_step=0")
    options = TrainOptions(train_steps=4, eval_every=0, log_every=1, save_checkpoints_steps=2,
                           save_checkpoints_secs=0, eval_bleu_sentences=0)
    trainer = make_trainer(hp, "%s", data_dir, output_dir, %d, options, strategy=strategy)
    assert strategy.num_replicas_in_sync == 2, strategy.num_replicas_in_sync
    trainer.train()
    np.savez(weights_file, *[v.numpy() for v in trainer.model.weights])
""" % (PROBLEM, VOCAB))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_workers_end_with_identical_weights(tmp_path):
    data_dir = str(tmp_path / "data")
    write_shards(data_dir, reverse_examples(400, 0), num_shards=2, split="train", problem=PROBLEM)
    write_shards(data_dir, reverse_examples(20, 1), num_shards=1, split="dev", problem=PROBLEM)
    workers = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    procs = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
        procs.append(subprocess.Popen(
            [sys.executable, "-c", WORKER, data_dir, str(tmp_path / "model"),
             str(tmp_path / f"weights{index}.npz")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=400) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    chief, other = (np.load(tmp_path / f"weights{i}.npz") for i in range(2))
    assert len(chief.files) == len(other.files) > 10
    for name in chief.files:
        np.testing.assert_array_equal(chief[name], other[name])
    assert "step 4/4" in outputs[0][0]
    # The chief writes the real checkpoints; the other worker only a scratch copy.
    assert os.path.exists(tmp_path / "model" / "ckpt-4.index")
