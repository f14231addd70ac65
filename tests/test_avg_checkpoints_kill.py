"""t2t-avg-checkpoints killed with SIGKILL while it writes an average.

The program really runs in a second process and really gets SIGKILL, at
chosen moments of its write (`kill_at.py`: the N-th file operation on its own
temporary directory or on the copy the previous average is moved aside to),
over an --avg_dir that holds a previous average. After each kill --avg_dir is
the previous average unchanged, absent, or the new average complete (which
one depends on the moment, and is checked); while it is absent, readers of
--avg_dir read the previous average set aside; the model directory is
untouched. Each run first finishes a replacement a killed run cut short (the
new average, complete, is renamed in), and the last one removes what the
killed runs left and writes the average.
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from t2t_lite import atomic, checkpoints
from t2t_lite.bin import t2t_avg_checkpoints
from t2t_lite.errors import T2TError
from t2t_lite.model_dir import ModelDir
from t2t_lite.average_dir import AVERAGE_FILE, write_average

from model_dirs import load_model, make_model_dir
from paths import REPO_ROOT

PREFIX = ".avg.tmp-avg-"  # the temporary directories of --avg_dir=.../avg
ASIDE = ".avg.replaced-"  # where a previous average is moved aside while it is replaced
# The N-th file operation on the temporary or aside directory at which the run is
# killed (see the list `kill_at.py ... 0 ...` prints) -> (whether --avg_dir exists
# afterwards, the average a reader of --avg_dir reads).
MOMENTS = {
    8: (True, "previous"),    # the metadata half copied into the temporary directory
    12: (True, "previous"),   # weights saved in the temporary directory, average.json not yet
    16: (False, "previous"),  # the previous average moved aside, the new one not yet in place
    17: (True, "new"),        # the new average in place, the previous one not yet deleted
}


def offset(avg_dir: str, first) -> float:
    """The average's weights minus ckpt-1's: each checkpoint ckpt-s holds base + s."""
    model, _ = load_model(avg_dir)
    offsets = {round(float(np.mean(a.numpy() - b.numpy())), 4)
               for a, b in zip(model.weights, first.weights)}
    assert len(offsets) == 1, offsets
    return offsets.pop()


def state(avg_dir: str, first):
    """What a reader of `avg_dir` reads: "previous" (mean of ckpt-1, 2) or "new"
    (mean of ckpt-3, 4), checking that it is complete."""
    names = set(os.listdir(atomic.readable_dir(avg_dir)))
    latest = checkpoints.list_checkpoints(avg_dir)[-1]
    assert {"hparams.json", "problem.json", AVERAGE_FILE, "checkpoint"} <= names, names
    assert os.path.exists(latest + ".index")
    return {0.5: "previous", 2.5: "new"}[offset(avg_dir, first)]


def test_killed_averaging_leaves_the_previous_or_the_new_average_and_the_rerun_succeeds(
        tmp_path, capfd):
    model = make_model_dir(str(tmp_path / "model"), steps=(1, 2, 3, 4))
    before = sorted(os.listdir(model))
    first, _ = load_model(model, model + "/ckpt-1")
    parent = tmp_path / "out"
    avg_dir = str(parent / "avg")
    write_average(ModelDir.open(model), avg_dir, paths=[model + "/ckpt-1", model + "/ckpt-2"])
    previous = str(tmp_path / "previous")
    shutil.copytree(avg_dir, previous)
    for moment, (present, expected) in MOMENTS.items():
        if state(avg_dir, first) != "previous":
            shutil.rmtree(avg_dir, ignore_errors=True)
            shutil.copytree(previous, avg_dir)
        proc = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "tests" / "kill_at.py"), f"{PREFIX},{ASIDE}",
             str(moment), "t2t_lite.bin.t2t_avg_checkpoints", f"--output_dir={model}",
             "--num_last_checkpoints=2", f"--avg_dir={avg_dir}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate()
        assert proc.returncode == -9, (moment, err)
        assert (os.path.exists(avg_dir), state(avg_dir, first)) == (present, expected), moment
        # Only this run's hidden leftovers: the earlier killed runs' were removed, or
        # renamed in (moment 16's new average is --avg_dir when moment 17's run starts).
        hidden = sorted(n for n in os.listdir(parent) if n.startswith("."))
        ours = [n for n in hidden if n.startswith((f"{PREFIX}{proc.pid}@", f"{ASIDE}{proc.pid}@"))]
        assert hidden and ours == hidden, hidden
        if moment == 16:  # the previous average, complete, set aside: what readers read
            assert [n.split("@")[0] for n in hidden] == [f"{ASIDE}{proc.pid}",
                                                          f"{PREFIX}{proc.pid}"], hidden
        assert sorted(os.listdir(model)) == before
    capfd.readouterr()
    assert t2t_avg_checkpoints.main([f"--output_dir={model}", "--num_last_checkpoints=2",
                                     f"--avg_dir={avg_dir}"]) == 0
    out, err = capfd.readouterr()
    assert out == f"Averaged 2 checkpoints (ckpt-3, ckpt-4) into {avg_dir}/ckpt-4.\n" and not err
    assert os.listdir(parent) == ["avg"] and state(avg_dir, first) == "new"


def test_an_avg_dir_that_is_not_an_average_is_refused_in_one_line(tmp_path, capfd):
    model = make_model_dir(str(tmp_path / "model"), steps=(1,))
    other = tmp_path / "results"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    capfd.readouterr()
    assert t2t_avg_checkpoints.main([f"--output_dir={model}", f"--avg_dir={other}"]) == 1
    err = capfd.readouterr().err
    assert err == (f"t2t-avg-checkpoints: error: --avg_dir {other} exists and was not written "
                   f"by t2t-avg-checkpoints (no {AVERAGE_FILE}): choose a new directory, or "
                   "delete it.\n")
    assert os.listdir(other) == ["notes.txt"]
    with pytest.raises(T2TError, match="must differ from the model directory"):
        write_average(ModelDir.open(model), model + "/", paths=[model + "/ckpt-1"])
