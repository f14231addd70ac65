"""Readers of a model directory that a trainer is writing read only complete checkpoints.

A real trainer (`background_trainer.py`: the `Trainer` and its
`tf.train.CheckpointManager`) runs in a second process, saving every step
and keeping the last 2 checkpoints, so it deletes what readers have just
listed. The decoder, t2t-avg-checkpoints and the exporter's loader run
meanwhile. Each read is made to lose the race for certain: before its first
checkpoint is read, the reader waits until the trainer has deleted that
checkpoint's files (an event, not a delay), so the fault happens every time.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from t2t_lite import averaging, checkpoints
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.bin import t2t_avg_checkpoints, t2t_decoder
from t2t_lite.textio import read_lines

from model_dirs import make_model_dir
from paths import REPO_ROOT

SOURCES = ["three hundred and one", "forty-two", "seven thousand and nine"]
GUARD_SECONDS = 600  # only against a hang: the tests wait on events, never on time


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    """(model directory, trainer process): a trainer saving every step, already saved once."""
    model = make_model_dir(str(tmp_path_factory.mktemp("readers") / "model"), steps=())
    trainer = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "background_trainer.py"), model],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: os.path.exists(os.path.join(model, "checkpoint")), trainer)
        yield model, trainer
    finally:
        trainer.send_signal(signal.SIGKILL)
        trainer.communicate()


def _wait(condition, trainer) -> None:
    """Waits until `condition()` holds while the trainer runs."""
    deadline = time.time() + GUARD_SECONDS
    while not condition():
        assert trainer.poll() is None, trainer.communicate()[1]
        assert time.time() < deadline, "the trainer made no progress"
        time.sleep(0.05)


class ReadLog:
    """Records every checkpoint read as (prefix, "read" or "gone")."""

    def __init__(self, trainer, real_restore):
        self.trainer, self.real_restore = trainer, real_restore
        self.records, self.losing = [], False

    def lose_first(self) -> list:
        """Makes the next read wait until the trainer has deleted that checkpoint;
        returns the (new, empty) list of records."""
        self.records, self.losing = [], True
        return self.records

    def restore(self, model, path):
        if self.losing:
            self.losing = False
            _wait(lambda: not os.path.exists(path + ".index"), self.trainer)
        try:
            self.real_restore(model, path)
        except checkpoints.CheckpointGone:
            self.records.append((path, "gone"))
            raise
        self.records.append((path, "read"))


@pytest.fixture
def reads(monkeypatch, training):
    """A `ReadLog` of the reads of this test (through `averaging.restore_weights`)."""
    log = ReadLog(training[1], averaging.restore_weights)
    monkeypatch.setattr(averaging, "restore_weights", log.restore)
    return log


def _steps(records, state):
    return [checkpoints.checkpoint_step(p) for p, s in records if s == state]


def test_decoding_in_a_loop_while_the_trainer_saves(training, reads, tmp_path, capfd):
    model, trainer = training
    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in SOURCES))
    for attempt, average in enumerate([1, 2, 1]):
        log = reads.lose_first()
        out = tmp_path / f"out{attempt}.txt"
        code = t2t_decoder.main([f"--output_dir={model}", f"--decode_from_file={source}",
                                 f"--decode_to_file={out}", f"--checkpoint_average={average}",
                                 "--decode_hparams=beam_size=1,extra_length=4"])
        err = capfd.readouterr().err
        assert code == 0 and "error" not in err, err
        assert len(read_lines(out, strip="newline")) == len(SOURCES)  # "\n" only
        # The first checkpoint chosen was deleted by the trainer; the decoder chose
        # again and read `average` complete, newer checkpoints.
        gone, read = _steps(log, "gone"), _steps(log, "read")
        assert len(gone) >= 1 and len(read) >= average, log
        assert min(read[-average:]) > gone[0], log
    assert trainer.poll() is None  # it wrote all along


def test_averaging_and_the_exporters_loader_while_the_trainer_saves(training, reads, tmp_path,
                                                                    capfd):
    model, trainer = training
    log = reads.lose_first()
    avg_dir = str(tmp_path / "avg")
    assert t2t_avg_checkpoints.main([f"--output_dir={model}", "--num_last_checkpoints=2",
                                     f"--avg_dir={avg_dir}"]) == 0
    out, err = capfd.readouterr()
    read = [p for p, s in log if s == "read"][-2:]
    assert _steps(log, "gone") and checkpoints.checkpoint_step(read[0]) > _steps(log, "gone")[0]
    names = ", ".join(os.path.basename(p) for p in read)
    assert out == f"Averaged 2 checkpoints ({names}) into {avg_dir}/{os.path.basename(read[1])}.\n"
    assert checkpoints.list_checkpoints(avg_dir) == [f"{avg_dir}/{os.path.basename(read[1])}"]
    # The exporter records the checkpoints it read, not a second listing's.
    log = reads.lose_first()
    _, used = model_dir_lib.ModelDir.open(model).load_model(checkpoint_average=2)
    assert used == [p for p, s in log if s == "read"][-2:] and _steps(log, "gone")
    assert trainer.poll() is None


def test_a_named_checkpoint_deleted_by_the_trainer_is_a_one_line_error(training, reads, capfd,
                                                                      tmp_path):
    model, _ = training
    named = checkpoints.list_checkpoints(model)[-1]
    reads.lose_first()
    source = tmp_path / "in.txt"
    source.write_text("forty-two\n", encoding="utf-8")
    code = t2t_decoder.main([f"--checkpoint_path={named}", f"--decode_from_file={source}",
                             f"--decode_to_file={tmp_path}/o"])
    err = capfd.readouterr().err
    assert code == 1
    assert err == f"t2t-decoder: error: Checkpoint {named} does not exist (no {named}.index).\n"
