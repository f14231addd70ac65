"""One trainer per model directory."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from t2t_lite.bin import t2t_trainer
from t2t_lite.errors import T2TError
from t2t_lite.training_lock import LOCK_FILE, TrainingLock

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


# A process that takes the lock when told to, round after round (the standard library
# and t2t_lite.training_lock only: no TensorFlow, so many of them start in a moment).
RACER = textwrap.dedent("""
    import os, sys, time
    from t2t_lite.errors import T2TError
    from t2t_lite.training_lock import TrainingLock
    model_dir, control, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def wait_for(name):
        while not os.path.exists(os.path.join(control, name)):
            time.sleep(0.0005)

    for r in range(rounds):
        wait_for(f"go-{r}")
        lock = TrainingLock(model_dir, log=lambda line: None)
        try:
            lock.__enter__()
            outcome = "won"
        except T2TError:
            outcome = "lost"
        open(os.path.join(control, f"{outcome}-{r}-{os.getpid()}"), "w").close()
        wait_for(f"end-{r}")
        if outcome == "won":
            lock.__exit__(None, None, None)
        open(os.path.join(control, f"released-{r}-{os.getpid()}"), "w").close()
""")


def test_of_trainers_starting_at_once_exactly_one_takes_the_lock(tmp_path):
    """6 processes take the lock at the same moment, 40 times; every other time the
    directory holds the lock of a killed trainer. Each time exactly one wins."""
    racers, rounds = 6, 40
    model, control = tmp_path / "model", tmp_path / "control"
    model.mkdir()
    control.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(model), str(control),
                               str(rounds)], stderr=subprocess.PIPE, text=True)
             for _ in range(racers)]
    try:
        for r in range(rounds):
            if r % 2:
                (model / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(),
                                                           "pid": dead_pid()}))
            (control / f"go-{r}").touch()
            deadline = time.time() + 60
            while len([n for n in os.listdir(control) if n.split("-")[1:2] == [str(r)]
                       and n[:3] in ("won", "los")]) < racers:
                assert time.time() < deadline and all(p.poll() is None for p in procs), [
                    p.communicate()[1] for p in procs if p.poll() is not None]
                time.sleep(0.005)
            winners = [n for n in os.listdir(control) if n.startswith(f"won-{r}-")]
            assert len(winners) == 1, (r, winners)
            holder = json.loads((model / LOCK_FILE).read_text())
            assert winners == [f"won-{r}-{holder['pid']}"]
            (control / f"end-{r}").touch()
            while len([n for n in os.listdir(control) if n.startswith(f"released-{r}-")]) < racers:
                assert time.time() < deadline, "a racer did not release"
                time.sleep(0.005)
            assert not (model / LOCK_FILE).exists()
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()


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
        # Other hparams: refused by the lock, not by the metadata it would overwrite.
        other = [f"--data_dir={data}", f"--output_dir={model}", "--train_steps=1"]
        capfd.readouterr()
        assert t2t_trainer.main([*TRAIN, "--hparams=hidden_size=48,filter_size=64", *other]) == 1
        err = capfd.readouterr().err.strip()
        assert err.startswith("t2t-trainer: error: Another t2t-trainer (pid "
                              f"{first.pid} on ") and len(err.splitlines()) == 1
        hparams = tmp_path / "model" / "hparams.json"
        while not hparams.exists():  # the first trainer writes it under its lock
            assert first.poll() is None and time.time() < deadline, first.communicate()
            time.sleep(0.2)
        assert json.loads(hparams.read_text())["hidden_size"] == 32
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    argv = [*TRAIN, *other]
    # Killed without cleaning up: the next trainer takes the stale lock over.
    assert t2t_trainer.main(argv) == 0
    assert "Taking over the lock" in capfd.readouterr().out
    assert not os.path.exists(os.path.join(model, LOCK_FILE))


def test_a_trainer_refused_by_the_lock_writes_no_metadata(tmp_path, capfd, numbers_data):
    """The moment two trainers race for: one holds the lock of a new directory and has
    not written its metadata yet. The other, with other hparams, writes nothing."""
    model = tmp_path / "model"
    model.mkdir()
    with TrainingLock(str(model)):
        code = t2t_trainer.main([*TRAIN, "--hparams=hidden_size=48,filter_size=64",
                                 f"--data_dir={numbers_data}", f"--output_dir={model}",
                                 "--train_steps=1"])
        err = capfd.readouterr().err.strip()
        assert code == 1 and len(err.splitlines()) == 1, err
        assert err.startswith(f"t2t-trainer: error: Another t2t-trainer (pid {os.getpid()} on ")
        assert sorted(os.listdir(model)) == [LOCK_FILE]
