"""t2t-trainer killed with SIGKILL and run again ends as a run never killed.

The trainer really runs in a second process and really gets SIGKILL
(tests/kill_trainer_at.py) at chosen moments: during a step, at three
moments of writing a checkpoint, while deleting an old one, during an
evaluation, while writing `best/`, and while replacing it. The kills form a
chain, as an unlucky user would meet them: each run is the same command
again, resuming from what the previous kill left, until a last run finishes.
It must end with the checkpoint (weights, optimizer state, data position)
and `best/` of the same command run once without a kill, and the same files.
"""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from t2t_lite import best_dir, checkpoints, model_dir

from conftest import NUMBERS
from paths import REPO_ROOT

# Checkpoints at steps 2, 4, ..., 12, the last 2 kept; evaluations at steps 3, 6, 9
# and the final one at 12. This model's BLEU is 0 at every evaluation: best/ is kept
# as if they had measured BLEU (kill_trainer_at.py --keep_bleu), so that step 3
# writes best/, step 6 replaces it, and the lower BLEU of steps 9 and 12 (an equal
# BLEU, of step 3 evaluated again after a resume, neither) does not.
KEEP_BLEU = "--keep_bleu=3:1,6:2,9:1.5,12:1.5"
FLAGS = [f"--problem={NUMBERS}", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64,batch_size=128,max_length=24,tokens_per_step=0",
         "--train_steps=12", "--save_checkpoints_steps=2", "--save_checkpoints_secs=0",
         "--keep_checkpoint_max=2", "--eval_every=3", "--eval_steps=1",
         "--eval_bleu_sentences=4", "--log_every=100"]

# (moment, N, the newest checkpoint listed after the kill, the step of the best/ there
# then: None if absent): see kill_trainer_at.py.
CHAIN = [
    ("best", 12, "ckpt-2", None),  # step 3's evaluation: best/'s weights written under its
                                   # temporary name, best.json not yet
    ("step", 2, "ckpt-2", 3),      # resumed at step 2: during step 4 (step 3 wrote best/)
    ("merge", 1, "ckpt-2", 3),     # step 4's checkpoint: tensors written, not merged
    ("list", 1, "ckpt-2", 3),      # step 4's checkpoint complete, not listed yet
    ("best", 16, "ckpt-6", None),  # step 6's evaluation (after step 6's save, which deleted
                                   # ckpt-2) replacing best/: step 3's moved aside, step 6's
                                   # complete but not yet renamed in
    ("sweep", 1, "ckpt-8", 6),     # resumed at step 6, having renamed step 6's best/ in:
                                   # step 8's save deleting ckpt-4: its .index gone, data not
    ("evaluate", 1, "ckpt-8", 6),  # resumed at step 8: step 9's evaluation, metrics computed
]


def run_trainer(data_dir: str, model: str, kill_at=()) -> subprocess.CompletedProcess:
    """The command in a fresh interpreter, as a user runs it (every run of this test
    is one: in the suite's own process, earlier tests' `tf.random.set_seed` would
    change tf.data's shuffle order), killed at `kill_at` = (moment, N) if given."""
    moment, n = kill_at or ("none", 0)
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "tests" / "kill_trainer_at.py"), moment, str(n),
         KEEP_BLEU, *FLAGS, f"--data_dir={data_dir}", f"--output_dir={model}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests")})


def run_killed(moment: str, n: int, data_dir: str, model: str) -> str:
    proc = run_trainer(data_dir, model, (moment, n))
    assert proc.returncode == -9, (moment, proc.stdout[-2000:], proc.stderr[-3000:])
    return proc.stdout


def checkpoint_values(prefix: str) -> dict:
    """Every tensor of a checkpoint (weights, optimizer slots, step, dropout seeds) but
    the count of saves, which counts the killed runs' saves too; the input
    iterator's state, a variant TensorFlow cannot read back as values (the data
    position shows in the weights: every step's batch went into them); and the
    object graph, which holds Python-side names (they differ in-process)."""
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name)
            for name, dtype in reader.get_variable_to_dtype_map().items()
            if dtype != tf.variant and not name.startswith(("save_counter", "_CHECKPOINTABLE"))}


def files(model: str) -> set:
    """The model directory's files; TensorBoard event files by directory only."""
    found = set()
    for root, _, names in os.walk(model):
        rel = os.path.relpath(root, model)
        found |= {rel} if rel in ("train", "eval") else {os.path.join(rel, n) for n in names}
    return found


def test_killed_trainer_resumes_to_the_weights_and_files_of_an_uninterrupted_run(
        numbers_data, tmp_path):
    killed = str(tmp_path / "killed")
    for moment, n, latest, best_step in CHAIN:
        out = run_killed(moment, n, numbers_data, killed)
        listed = checkpoints.list_checkpoints(killed)
        assert os.path.basename(listed[-1]) == latest, (moment, listed, out)
        best = os.path.join(killed, "best")
        assert os.path.exists(best) == (best_step is not None), moment
        if best_step is not None:  # complete whenever present
            with open(os.path.join(best, "best.json"), encoding="utf-8") as f:
                assert json.load(f)["step"] == best_step, moment
            assert checkpoints.list_checkpoints(best) == [
                os.path.join(best, f"ckpt-{best_step}")]
        if (moment, n) == ("best", 16):  # readers read step 3's best/, set aside
            aside, = [name for name in os.listdir(killed) if name.startswith(".best.replaced-")]
            assert best_dir.read_best(killed) == {"bleu": 1.0, "step": 3}
            assert model_dir.ModelDir.open(best).problem_name == NUMBERS
            assert checkpoints.list_checkpoints(best) == [os.path.join(killed, aside, "ckpt-3")]
        if moment == "sweep":  # ckpt-4 is still listed, without its index: not offered
            assert not os.path.exists(os.path.join(killed, "ckpt-4.index"))
            assert checkpoints.select_checkpoints(killed, average=3) == [
                os.path.join(killed, "ckpt-6"), os.path.join(killed, "ckpt-8")]
    last = run_trainer(numbers_data, killed)
    assert last.returncode == 0, last.stderr[-3000:]
    assert f"Resumed from {killed}/ckpt-8 at step 8." in last.stdout, last.stdout[-2000:]

    full = str(tmp_path / "full")
    never_killed = run_trainer(numbers_data, full)
    assert never_killed.returncode == 0, never_killed.stderr[-3000:]
    for rel in ("ckpt-12", "best/ckpt-6"):
        expected, got = (checkpoint_values(os.path.join(d, rel)) for d in (full, killed))
        assert expected.keys() == got.keys()
        for name in expected:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{rel} {name}")
    assert files(killed) == files(full)  # nothing left over by the kills
    with open(os.path.join(killed, "best", "best.json"), encoding="utf-8") as f:
        assert json.load(f) == {"bleu": 2.0, "step": 6}

