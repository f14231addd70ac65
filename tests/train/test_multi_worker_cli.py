"""The README's multi-machine commands, as a user types them, on 127.0.0.1.

`t2t-make-tf-configs`, then the same `t2t-trainer` command on each worker with
its TF_CONFIG (on the suite's shared t2t-datagen output); then again with more
steps (a resume). Both workers must exit 0, print the same losses, continue
with the losses and end with the weights of an uninterrupted run, and leave
one model directory (no scratch directories of the other worker).

Then a worker is SIGKILLed mid-run: the other stops with a one-line error
naming the lost worker and the checkpoint to resume from, and the same
commands started again end as the uninterrupted run does.
"""

import contextlib
import io
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_make_tf_configs

from paths import REPO_ROOT

TRAIN = ["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64,batch_size=512,tokens_per_step=0",
         "--log_every=1", "--eval_every=0", "--eval_bleu_sentences=0", "--eval_steps=1",
         "--save_checkpoints_steps=5"]
STEP_LINE = re.compile(r"^step (\d+)/\d+  loss (\S+)", re.M)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(configs, data_dir, output_dir, steps, kill_second_at_step=0, dump_weights=""):
    """Runs the command on every worker; returns each worker's (step, loss) lines,
    or with `kill_second_at_step`, (returncodes, stdouts, stderrs) after the
    second worker is SIGKILLed during that step (tests/kill_trainer_at.py).
    With `dump_weights`, worker i writes its final weights to `dump_weights`-i.npz
    (tests/train_and_dump_weights.py)."""
    procs = []
    for index, config in enumerate(configs):
        env = dict(os.environ, TF_CONFIG=config, PYTHONPATH=str(REPO_ROOT / "tests"))
        program = ["-m", "t2t_lite.bin.t2t_trainer"]
        if dump_weights:
            program = [str(REPO_ROOT / "tests" / "train_and_dump_weights.py"),
                       f"{dump_weights}-{index}.npz"]
        if kill_second_at_step and index == 1:
            program = [str(REPO_ROOT / "tests" / "kill_trainer_at.py"), "step",
                       str(kill_second_at_step)]
        procs.append(subprocess.Popen(
            [sys.executable, *program, *TRAIN, f"--data_dir={data_dir}",
             f"--output_dir={output_dir}", f"--train_steps={steps}", "--strategy=multi_worker"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=600) for p in procs]
    if kill_second_at_step:
        return [p.returncode for p in procs], [o for o, _ in outputs], [e for _, e in outputs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    return [STEP_LINE.findall(out) for out, _ in outputs]


def weights(prefix: str) -> dict:
    """A checkpoint's weights, optimizer slots and step (not its data position or names)."""
    reader = tf.train.load_checkpoint(prefix)
    names = [n for n, _ in tf.train.list_variables(prefix)
             if not n.startswith(("_CHECKPOINTABLE_OBJECT_GRAPH", "data/", "save_counter"))]
    assert len(names) > 100  # the model's weights, the optimizer's slots and step
    return {n: reader.get_tensor(n) for n in names}


def assert_same_weights(prefix: str, expected_prefix: str) -> None:
    expected = weights(expected_prefix)
    for name, value in weights(prefix).items():
        np.testing.assert_allclose(value, expected[name], rtol=0, atol=1e-6, err_msg=name)


@pytest.fixture(scope="module")
def configs():
    """TF_CONFIG of two workers on 127.0.0.1, as t2t-make-tf-configs prints them."""
    workers = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert t2t_make_tf_configs.main([f"--workers={workers}", "--format=json"]) == 0
    return out.getvalue().splitlines()


@pytest.fixture(scope="module")
def uninterrupted(configs, numbers_data, tmp_path_factory):
    """(each worker's (step, loss) lines, model directory, each worker's final weights)
    of 7 steps never stopped."""
    base = tmp_path_factory.mktemp("uninterrupted")
    output_dir = str(base / "model")
    lines = run_workers(configs, numbers_data, output_dir, 7, dump_weights=str(base / "weights"))
    return lines, output_dir, [np.load(base / f"weights-{i}.npz") for i in range(len(configs))]


def test_every_worker_ends_with_the_chief_weights(uninterrupted):
    chief, other = uninterrupted[2]
    assert len(chief.files) == len(other.files) > 20  # the model's weights
    for name in chief.files:
        np.testing.assert_array_equal(other[name], chief[name], err_msg=name)


def test_readme_multi_worker_commands(tmp_path, configs, uninterrupted, numbers_data):
    data_dir, output_dir = numbers_data, str(tmp_path / "model")
    first = run_workers(configs, data_dir, output_dir, 3)
    assert [s for s, _ in first[0]] == ["1", "2", "3"] and first[0] == first[1]
    resumed = run_workers(configs, data_dir, output_dir, 5)  # both restore the chief's step 3
    assert [s for s, _ in resumed[0]] == ["4", "5"] and resumed[0] == resumed[1]
    # The resumed run continues from the same data position as an uninterrupted one.
    assert uninterrupted[0][0][3:5] == resumed[0]
    names = sorted(os.listdir(output_dir))
    assert not [n for n in names if n.startswith("tmp_worker")], names
    assert "ckpt-5.index" in names and "ckpt-3.index" in names
    # The weights too: had the workers' copies drifted apart, the resumed run (both
    # restored from the chief's ckpt-3) would end elsewhere than the uninterrupted one.
    assert_same_weights(os.path.join(output_dir, "ckpt-5"),
                        os.path.join(uninterrupted[1], "ckpt-5"))


def test_a_killed_worker_stops_the_others_and_the_same_commands_resume(
        tmp_path, configs, uninterrupted, numbers_data):
    output_dir = str(tmp_path / "model")
    # Checkpoints every 5 steps: worker 1 killed during its step 7 leaves ckpt-5 the last.
    codes, outs, errs = run_workers(configs, numbers_data, output_dir, 9, kill_second_at_step=7)
    assert codes == [1, -9], errs[0][-3000:]
    error = errs[0].strip().splitlines()
    assert len(error) == 1 and "Traceback" not in errs[0], errs[0][-3000:]
    steps_done = STEP_LINE.findall(outs[0])[-1][0]
    assert steps_done in ("6", "7"), outs[0]  # step 7 may complete on worker 0, not step 8
    assert error[0] == (
        f"t2t-trainer: error: A worker was lost after step {steps_done} "
        "(/job:worker/replica:0/task:1 stopped responding); stopping. Last complete "
        f"checkpoint: {output_dir}/ckpt-5. Start the same command on every worker again to "
        "resume from it.")

    resumed = run_workers(configs, numbers_data, output_dir, 7)
    assert resumed[0] == resumed[1] == uninterrupted[0][0][5:7]
    assert not [n for n in os.listdir(output_dir) if n.startswith("tmp_worker")]
    assert_same_weights(os.path.join(output_dir, "ckpt-7"),
                        os.path.join(uninterrupted[1], "ckpt-7"))
