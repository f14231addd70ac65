"""t2t-exporter killed with SIGKILL while it writes a version.

Three exporters really run in other processes and really get SIGKILL: one
while TensorFlow writes the SavedModel (when its `variables/` appears; at
the latest before `assets.extra/`), one when the SavedModel is complete but
its provenance is not, one when everything is written but not yet renamed
(`kill_at.py`: the N-th file operation on its own temporary directory).
TF Serving loads the subdirectories of the base named by an integer: after
the kills there is none. The re-run writes version 1, complete, and removes
the killed runs' temporary directories but not one of a live process, of
another host or of an unknown owner.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece ops of the SavedModel)

from t2t_lite.bin import t2t_exporter
from t2t_lite.export.versions import TMP_PREFIX

from model_dirs import make_model_dir
from paths import REPO_ROOT

DECODE = "--decode_hparams=beam_size=1,extra_length=4"
SAVED_MODEL_WRITTEN = 4  # os.mkdir of assets.extra: the SavedModel is complete
BEFORE_RENAME = 8        # os.rename into the version: everything else is written
GUARD_SECONDS = 600      # only against a hang: the test waits on events, never on time


def start(model: str, export_dir: str, moment: int) -> subprocess.Popen:
    """t2t-exporter in another process, killing itself at file operation `moment`."""
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "kill_at.py"), TMP_PREFIX, str(moment),
         "t2t_lite.bin.t2t_exporter", f"--output_dir={model}", f"--export_dir={export_dir}",
         DECODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_while_variables_are_written(proc: subprocess.Popen, export_dir: str) -> None:
    """SIGKILLs `proc` as soon as its temporary directory has `variables/`."""
    deadline = time.time() + GUARD_SECONDS
    while proc.poll() is None and time.time() < deadline:
        names = os.listdir(export_dir) if os.path.isdir(export_dir) else []
        if any(n.startswith(f"{TMP_PREFIX}{proc.pid}@")
               and os.path.exists(os.path.join(export_dir, n, "variables")) for n in names):
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)


def versions(export_dir: str):
    """What TF Serving would load: the subdirectories named by an integer."""
    return sorted(n for n in os.listdir(export_dir) if n.isdigit())


def test_killed_exports_leave_no_version_and_the_rerun_succeeds(tmp_path, capfd):
    model = make_model_dir(str(tmp_path / "model"), steps=(1,))
    before = sorted(os.listdir(model))
    export_dir = str(tmp_path / "exports")
    procs = [start(model, export_dir, SAVED_MODEL_WRITTEN),
             start(model, export_dir, SAVED_MODEL_WRITTEN),
             start(model, export_dir, BEFORE_RENAME)]
    kill_while_variables_are_written(procs[0], export_dir)
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == -9, err
    assert versions(export_dir) == []
    left = os.listdir(export_dir)
    assert left and all(n.startswith(TMP_PREFIX) for n in left), left
    assert sorted(os.listdir(model)) == before

    # A live exporter's directory (this process), another host's and one of an
    # unknown owner (named by an older version) stay.
    live = f"{TMP_PREFIX}{os.getpid()}@{socket.gethostname()}@live"
    remote = f"{TMP_PREFIX}1@another-host.example@x"
    unknown = f"{TMP_PREFIX}k2j9x1ab"
    for name in (live, remote, unknown):
        os.mkdir(os.path.join(export_dir, name))
    capfd.readouterr()
    assert t2t_exporter.main([f"--output_dir={model}", f"--export_dir={export_dir}",
                              DECODE]) == 0
    out, err = capfd.readouterr()
    assert out == os.path.join(export_dir, "1") + "\n" and "error" not in err
    assert sorted(os.listdir(export_dir)) == sorted(["1", live, remote, unknown])
    with open(os.path.join(export_dir, "1", "assets.extra", "export.json")) as f:
        assert json.load(f)["checkpoints"] == [os.path.join(model, "ckpt-1")]
    served = tf.saved_model.load(os.path.join(export_dir, "1"))
    result = served.signatures["serving_default"](inputs=tf.constant(["forty-two", ""]))
    assert result["outputs"].shape == (2,) and result["outputs"].numpy()[1] == b""
