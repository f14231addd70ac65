"""One trainer per model directory (issue 16 item 2)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from t2t_lite.bin import t2t_trainer
from t2t_lite.errors import T2TError
from t2t_lite.model_dir import LOCK_FILE, TrainingLock

PROBLEM = "translate_ende_numbers"
TRAIN = [f"--problem={PROBLEM}", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64", "--eval_every=0",
         "--eval_bleu_sentences=0", "--eval_steps=1", "--log_every=1"]


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_lock_refuses_a_live_holder_and_takes_over_a_dead_one(tmp_path):
    path = tmp_path / LOCK_FILE
    notes = []
    with TrainingLock(str(tmp_path), log=notes.append):
        assert json.loads(path.read_text()) == {"host": socket.gethostname(),
                                                "pid": os.getpid()}
        with pytest.raises(T2TError, match=f"Another t2t-trainer \\(pid {os.getpid()} on "):
            TrainingLock(str(tmp_path)).__enter__()
    assert not path.exists() and not notes  # released on exit
    for stale in ({"host": socket.gethostname(), "pid": dead_pid()}, "{not json"):
        path.write_text(json.dumps(stale) if isinstance(stale, dict) else stale)
        with TrainingLock(str(tmp_path), log=notes.append):
            assert json.loads(path.read_text())["pid"] == os.getpid()
        assert "Taking over the lock" in notes[-1]
    path.write_text(json.dumps({"host": "another-host", "pid": 1}))
    with pytest.raises(T2TError, match="pid 1 on another-host.*if it is gone, delete"):
        TrainingLock(str(tmp_path)).__enter__()


def test_a_second_trainer_is_refused_while_the_first_runs(tmp_path, capfd, numbers_data):
    data, model = numbers_data, str(tmp_path / "model")
    first = subprocess.Popen(
        [sys.executable, "-m", "t2t_lite.bin.t2t_trainer", *TRAIN, f"--data_dir={data}",
         f"--output_dir={model}", "--train_steps=100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while not os.path.exists(os.path.join(model, LOCK_FILE)):
            assert first.poll() is None and time.time() < deadline, first.communicate()
            time.sleep(0.5)
        argv = [*TRAIN, f"--data_dir={data}", f"--output_dir={model}", "--train_steps=1"]
        capfd.readouterr()
        assert t2t_trainer.main(argv) == 1
        err = capfd.readouterr().err.strip()
        assert err.startswith("t2t-trainer: error: Another t2t-trainer (pid "
                              f"{first.pid} on ") and len(err.splitlines()) == 1
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    # Killed without cleaning up: the next trainer takes the stale lock over.
    assert t2t_trainer.main(argv) == 0
    assert "Taking over the lock" in capfd.readouterr().out
    assert not os.path.exists(os.path.join(model, LOCK_FILE))
