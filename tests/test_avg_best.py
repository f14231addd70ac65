"""t2t-avg-checkpoints --select=best_dev_loss: the K checkpoints of lowest dev loss averaged.

The model directory holds five checkpoints of one tiny random model, each with
its weights perturbed by noise of another size, so their dev losses differ by a
wide margin and in no order of the steps. The tests compute each checkpoint's
loss themselves (the model's logits on all dev examples in one padded batch,
log-softmax and mean negative log-likelihood of the real target tokens in
NumPy) and read the averaged weights from the checkpoint files.
"""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from model_dirs import PROBLEM, make_model_dir
from toy_data import make_examples, write_shards
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.bin import t2t_avg_checkpoints
from t2t_lite.data import datagen, layout
from t2t_lite.data.integrity import file_sha256, shard_records

NOISE = {1: 0.6, 2: 0.05, 3: 0.4, 4: 0.0, 5: 0.9}  # step -> noise scale
DEV_SHARDS = 2


def dev_examples(seed: int) -> list:
    """The toy dev examples `write_dev_data(..., seed)` writes."""
    return make_examples(count=24, longest=12, seed=seed)


def write_dev_data(data_dir: str, vocab_file: str, seed: int) -> list:
    """Dev shards of toy examples and the datagen metadata vouching for them."""
    examples = dev_examples(seed)
    shutil.rmtree(data_dir, ignore_errors=True)
    write_shards(data_dir, examples, DEV_SHARDS, split="dev", problem=PROBLEM)
    names = [layout.shard_name(PROBLEM, "dev", i, DEV_SHARDS) for i in range(DEV_SHARDS)]
    dev = {"shards": names, "examples": len(examples),
           **shard_records(os.path.join(data_dir, n) for n in names)}
    meta = {"problem": PROBLEM, "vocab_sha256": file_sha256(vocab_file), "splits": {"dev": dev}}
    with open(datagen.metadata_path(data_dir, PROBLEM), "w", encoding="utf-8") as f:
        json.dump(meta, f)
    return examples


def save_checkpoints(model_dir: str, noise: dict) -> None:
    """Saves `model_dir`'s model at each step of `noise` ({step: scale}): ckpt-s holds
    random weights plus Gaussian noise of that scale."""
    model = model_dir_lib.ModelDir.open(model_dir).build_model()
    base = [v.numpy() for v in model.weights]
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir,
                                         max_to_keep=None)
    for step, scale in sorted(noise.items()):
        rng = np.random.default_rng(step)
        for variable, value in zip(model.weights, base):
            variable.assign(value + scale * rng.standard_normal(value.shape))
        manager.save(checkpoint_number=step)


def reference_losses(model_dir: str, steps, examples) -> dict:
    """{step: mean negative log-likelihood per real target token of ckpt-step}."""
    model = model_dir_lib.ModelDir.open(model_dir).build_model()
    width = max(len(e[0]) for e in examples), max(len(e[1]) for e in examples)
    inputs, targets = (np.zeros([len(examples), w], np.int32) for w in width)
    for row, (source, target) in enumerate(examples):
        inputs[row, :len(source)], targets[row, :len(target)] = source, target
    losses = {}
    for step in steps:
        tf.train.Checkpoint(model=model).restore(f"{model_dir}/ckpt-{step}").expect_partial()
        logits = model({"inputs": inputs, "targets": targets}, training=False).numpy()
        logits = logits.astype(np.float64)
        shifted = logits - logits.max(-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))  # [B, T, V]
        true = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]  # [B, T]
        losses[step] = float(-true[targets != 0].mean())
    return losses


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(model dir with ckpt-1..5, its data dir, {step: reference dev loss}). Read only."""
    base = tmp_path_factory.mktemp("avg_best")
    model_dir = make_model_dir(str(base / "model"), steps=())
    save_checkpoints(model_dir, NOISE)
    vocab = model_dir_lib.ModelDir.open(model_dir).vocab_path
    examples = write_dev_data(str(base / "data"), vocab, seed=1)
    losses = reference_losses(model_dir, NOISE, examples)
    return model_dir, str(base / "data"), losses


@pytest.fixture
def model_copy(setup, tmp_path):
    path = str(tmp_path / "model")
    shutil.copytree(setup[0], path)
    return path


def best(losses: dict, k: int) -> list:
    return sorted(sorted(losses, key=losses.get)[:k])


def run(model_dir, data_dir, avg_dir, *flags):
    return t2t_avg_checkpoints.main([f"--output_dir={model_dir}", f"--avg_dir={avg_dir}",
                                     "--select=best_dev_loss", f"--data_dir={data_dir}", *flags])


def printed(stdout: str) -> dict:
    """{step: (loss, "evaluated" or "cached")} of the lines t2t-avg-checkpoints printed."""
    found = re.findall(r"ckpt-(\d+) \(step \1\): dev loss (-?[\d.]+) (\[|\(from dev_losses)",
                       stdout)
    return {int(s): (float(v), "evaluated" if how == "[" else "cached") for s, v, how in found}


def mean_of(paths) -> dict:
    """{variable name: mean value} over the checkpoint prefixes `paths`, read from the files."""
    readers = [tf.train.load_checkpoint(p) for p in paths]
    names = [n for n, _ in tf.train.list_variables(paths[0]) if n.startswith("model/")]
    return {n: np.mean([r.get_tensor(n).astype(np.float64) for r in readers], 0) for n in names}


def test_averages_the_k_checkpoints_of_lowest_dev_loss(setup, model_copy, tmp_path, capsys):
    _, data_dir, losses = setup
    assert min(abs(a - b) for a in losses.values() for b in losses.values() if a != b) > 0.01
    avg = str(tmp_path / "avg")
    # The last 3 only: ckpt-3..5 scored, the lowest of them averaged alone.
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1", "--candidates=3") == 0
    lines = printed(capsys.readouterr().out)
    assert sorted(lines) == [3, 4, 5]
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record["checkpoints"] == [f"{model_copy}/ckpt-{s}"
                                     for s in best({s: losses[s] for s in (3, 4, 5)}, 1)]
    # All five: the two scored now are evaluated, the three before read from the cache.
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=2") == 0
    out = capsys.readouterr().out
    lines = printed(out)
    assert {s: how for s, (_, how) in lines.items()} == {
        1: "evaluated", 2: "evaluated", 3: "cached", 4: "cached", 5: "cached"}
    for step, (loss, _) in lines.items():
        assert loss == pytest.approx(losses[step], abs=6e-5), step
    chosen = best(losses, 2)
    assert chosen != [4, 5]  # not what --select=last would average
    assert f"Averaged the 2 of lowest dev loss of 5 checkpoints (ckpt-{chosen[0]}" in out
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record["checkpoints"] == [f"{model_copy}/ckpt-{s}" for s in chosen]
    assert record["select"] == "best_dev_loss"
    assert record["data_dir"] == os.path.abspath(data_dir)
    assert record["dev_losses"] == pytest.approx(
        {f"ckpt-{s}": v for s, v in losses.items()}, rel=1e-5)
    expected = mean_of([f"{model_copy}/ckpt-{s}" for s in chosen])
    written = tf.train.load_checkpoint(f"{avg}/ckpt-{chosen[-1]}")
    assert expected
    for name, value in expected.items():
        np.testing.assert_allclose(written.get_tensor(name), value, rtol=1e-6, atol=1e-6)


def test_cache_is_reused_and_dropped_for_other_dev_data(setup, model_copy, tmp_path, capsys):
    _, data_dir, losses = setup
    avg = str(tmp_path / "avg")
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1", "--candidates=2") == 0
    capsys.readouterr()
    # A cached loss is used as written: the worse of the two marked best is chosen.
    worse = max((4, 5), key=losses.get)
    cache_path = os.path.join(model_copy, "dev_losses.json")
    with open(cache_path, encoding="utf-8") as f:
        cache = json.load(f)
    assert cache["losses"] == pytest.approx({f"ckpt-{s}": losses[s] for s in (4, 5)}, rel=1e-5)
    cache["losses"][f"ckpt-{worse}"] = -1.0
    with open(cache_path, "w", encoding="utf-8") as f:
        json.dump(cache, f)
    # A checkpoint saved since is the only one scored.
    save_checkpoints(model_copy, {6: 0.02})
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1", "--candidates=3") == 0
    lines = printed(capsys.readouterr().out)
    assert {s: how for s, (_, how) in lines.items()} == {4: "cached", 5: "cached",
                                                         6: "evaluated"}
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        assert json.load(f)["checkpoints"] == [f"{model_copy}/ckpt-{worse}"]
    # Other dev data: the cached checkpoints are scored again, on it.
    other_data = str(tmp_path / "other_data")
    examples = write_dev_data(other_data, model_dir_lib.ModelDir.open(model_copy).vocab_path,
                              seed=2)
    new = reference_losses(model_copy, (5, 6), examples)
    assert run(model_copy, other_data, avg, "--num_last_checkpoints=1", "--candidates=2") == 0
    out = capsys.readouterr().out
    assert "holds losses on other dev data" in out
    lines = printed(out)
    assert {s: how for s, (_, how) in lines.items()} == {5: "evaluated", 6: "evaluated"}
    for step, (loss, _) in lines.items():
        assert loss == pytest.approx(new[step], abs=6e-5), step
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        assert json.load(f)["checkpoints"] == [f"{model_copy}/ckpt-{best(new, 1)[0]}"]


# A second run trained in the same directory: other weights under the same names.
RETRAINED = {1: 0.05, 2: 0.6, 3: 0.9, 4: 0.4, 5: 0.0}


def retrain(model_dir: str, noise: dict) -> None:
    """Deletes the run's checkpoints, as a user starting over does, and saves those of
    another run under the same names."""
    for name in os.listdir(model_dir):
        if name.startswith("ckpt-") or name == "checkpoint":
            os.remove(os.path.join(model_dir, name))
    save_checkpoints(model_dir, noise)


def test_a_retrain_in_place_is_scored_again(setup, model_copy, tmp_path, capsys):
    """The cache holds the first run's losses of ckpt-4 and ckpt-5; the new run's
    ckpt-4 and ckpt-5 are scored again, and the lowest of theirs is averaged."""
    _, data_dir, losses = setup
    avg = str(tmp_path / "avg")
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1", "--candidates=2") == 0
    capsys.readouterr()
    retrain(model_copy, RETRAINED)
    new = reference_losses(model_copy, (4, 5), dev_examples(seed=1))
    assert best(new, 1) == [5] and best({s: losses[s] for s in (4, 5)}, 1) == [4]
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1", "--candidates=2") == 0
    lines = printed(capsys.readouterr().out)
    assert {s: how for s, (_, how) in lines.items()} == {4: "evaluated", 5: "evaluated"}
    for step, (loss, _) in lines.items():
        assert loss == pytest.approx(new[step], abs=6e-5), step
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        assert json.load(f)["checkpoints"] == [f"{model_copy}/ckpt-5"]

    # The new run's losses are kept, with each checkpoint's index.
    with open(os.path.join(model_copy, "dev_losses.json"), encoding="utf-8") as f:
        cache = json.load(f)
    indexes = {f"ckpt-{s}": file_sha256(f"{model_copy}/ckpt-{s}.index") for s in (4, 5)}
    assert cache["index_sha256"] == indexes
    assert cache["losses"] == pytest.approx({f"ckpt-{s}": new[s] for s in (4, 5)}, abs=6e-5)


def test_losses_without_an_index_are_scored_again(setup, model_copy):
    """A dev_losses.json of an older t2t-lite (losses by name only) is not trusted."""
    from t2t_lite.train.dev_loss_cache import DevLossCache, checkpoint_identity

    dev_data = {"problem": PROBLEM}
    with open(os.path.join(model_copy, "dev_losses.json"), "w", encoding="utf-8") as f:
        json.dump({"dev_data": dev_data, "losses": {"ckpt-4": 1.5, "ckpt-5": 2.5},
                   "index_sha256": {"ckpt-5": checkpoint_identity(f"{model_copy}/ckpt-5")}}, f)
    log = []
    cache = DevLossCache(model_copy, dev_data, log.append)
    assert log == [f"{model_copy}/dev_losses.json holds 1 loss(es) without their checkpoint's "
                   "index (an older t2t-lite): evaluating those again."]
    assert cache.get("ckpt-4", checkpoint_identity(f"{model_copy}/ckpt-4")) is None
    assert cache.get("ckpt-5", checkpoint_identity(f"{model_copy}/ckpt-5")) == 2.5
    assert cache.get("ckpt-5", checkpoint_identity(f"{model_copy}/ckpt-4")) is None


def test_a_checkpoint_deleted_while_scored_is_passed_over(setup, model_copy, tmp_path, capsys,
                                                          monkeypatch):
    """A trainer's keep_checkpoint_max deletes ckpt-1 as it is read: the choice starts
    again among the checkpoints listed then."""
    from t2t_lite.train.best_checkpoints import DevLossScorer
    _, data_dir, losses = setup
    score = DevLossScorer.__call__

    def deleted_first(self, path):
        if path.endswith("/ckpt-1"):
            for name in os.listdir(model_copy):
                if name.startswith("ckpt-1."):
                    os.remove(os.path.join(model_copy, name))
            tf.compat.v1.train.update_checkpoint_state(
                model_copy, f"{model_copy}/ckpt-5",
                [f"{model_copy}/ckpt-{s}" for s in range(2, 6)])
        return score(self, path)

    monkeypatch.setattr(DevLossScorer, "__call__", deleted_first)
    avg = str(tmp_path / "avg")
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=2") == 0
    out = capsys.readouterr().out
    assert "ckpt-1 was deleted" in out or "ckpt-1 does not exist" in out
    assert sorted(printed(out)) == [2, 3, 4, 5]
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert sorted(record["dev_losses"]) == [f"ckpt-{s}" for s in range(2, 6)]
    rest = {s: v for s, v in losses.items() if s != 1}
    assert record["checkpoints"] == [f"{model_copy}/ckpt-{s}" for s in best(rest, 2)]


def test_checkpoints_name_the_candidates(setup, model_copy, tmp_path, capsys):
    """--checkpoints with --select=best_dev_loss: only those are scored and the lowest
    among them averaged (the recipe's choice among the checkpoints saved by a time);
    a name that is not a complete checkpoint is a one-line error."""
    _, data_dir, losses = setup
    avg = str(tmp_path / "avg")
    named = (1, 2, 4)
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=2",
               "--checkpoints=" + ",".join(f"{model_copy}/ckpt-{s}" for s in named)) == 0
    assert sorted(printed(capsys.readouterr().out)) == list(named)
    with open(os.path.join(avg, "average.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record["checkpoints"] == [f"{model_copy}/ckpt-{s}"
                                     for s in best({s: losses[s] for s in named}, 2)]
    assert run(model_copy, data_dir, avg, "--num_last_checkpoints=1",
               f"--checkpoints={model_copy}/ckpt-1,{model_copy}/ckpt-9") == 1
    err = capsys.readouterr().err
    assert err == (f"t2t-avg-checkpoints: error: --checkpoints names {model_copy}/ckpt-9, not "
                   f"among the complete checkpoints of {model_copy} (5).\n")


def test_ties_go_to_the_later_step():
    from t2t_lite.train.best_checkpoints import lowest
    losses = {"m/ckpt-100": 2.0, "m/ckpt-200": 1.5, "m/ckpt-300": 1.5, "m/ckpt-400": 1.7}
    assert lowest(losses, 1) == ["m/ckpt-300"]
    assert lowest(losses, 2) == ["m/ckpt-200", "m/ckpt-300"]
    assert lowest(losses, 3) == ["m/ckpt-200", "m/ckpt-300", "m/ckpt-400"]


@pytest.mark.parametrize("flags, message", [
    (["--select=best", "--data_dir=D"],
     "Unknown --select='best': choose one of last, best_dev_loss."),
    (["--select=best_dev_loss"],
     "--select=best_dev_loss needs --data_dir: the t2t-datagen output holding the model's "
     "problem's dev split."),
    (["--data_dir=D"], "--data_dir and --candidates apply to --select=best_dev_loss only."),
    (["--select=best_dev_loss", "--data_dir=D", "--checkpoints=M/ckpt-1", "--candidates=2"],
     "--checkpoints and --candidates both name the candidates: give one or the other."),
])
def test_flag_errors_are_one_line(flags, message, capsys):
    code = t2t_avg_checkpoints.main(["--output_dir=M", "--avg_dir=A", *flags])
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"t2t-avg-checkpoints: error: {message}\n"


def test_data_errors_are_one_line(setup, tmp_path, capsys):
    model_dir, data_dir, _ = setup
    avg = str(tmp_path / "avg")

    def error(data, *flags) -> str:
        assert run(model_dir, data, avg, *flags) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("t2t-avg-checkpoints: error: ")
        return err[len("t2t-avg-checkpoints: error: "):].strip()

    assert error(str(tmp_path)) == (
        f"{tmp_path} holds no dev split of {PROBLEM} (its {PROBLEM}.datagen.json records "
        f"none): pass the data dir t2t-datagen --problem={PROBLEM} wrote for this model.")
    assert error(data_dir, "--num_last_checkpoints=6") == (
        f"--num_last_checkpoints=6 is more than the 5 candidate checkpoint(s) of {model_dir} "
        "(all of its 5 complete checkpoints): average fewer, or wait for more.")
    assert error(data_dir, "--num_last_checkpoints=3", "--candidates=2") == (
        f"--num_last_checkpoints=3 is more than the 2 candidate checkpoint(s) of {model_dir} "
        "(the last 2 (--candidates) of its 5 complete checkpoints): average fewer, or wait "
        "for more.")
    other_vocab = tmp_path / "other_vocab.model"
    other_vocab.write_bytes(b"another vocabulary")
    write_dev_data(str(tmp_path / "other"), str(other_vocab), seed=1)
    vocab_file = os.path.basename(model_dir_lib.ModelDir.open(model_dir).vocab_path)
    assert error(str(tmp_path / "other")) == (
        f"The shards of {PROBLEM} in {tmp_path / 'other'} were encoded with another vocabulary "
        f"than the model's ({vocab_file}): pass the "
        "data dir the model was trained on.")
    assert not os.path.exists(avg)
    assert not os.path.exists(os.path.join(model_dir, "dev_losses.json"))
