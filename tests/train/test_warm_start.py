"""Fine-tuning: `t2t-datagen --vocab_from=M`, `t2t-trainer --warm_start_from=M`.

M is the suite's trained numbers model (checkpoints 1000 and 2000). The
fine-tuned runs use learning_rate=0 where the test is about what the weights
start from: Adam then leaves them as they were loaded, so they must equal M's
checkpoint (or the mean of two, computed here with numpy) exactly, while the
optimizer's step counter shows that the run itself started at step 0.
"""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.data.vocab import SubwordVocab, train_sentencepiece

from conftest import NUMBERS

QUIET = ["--eval_every=0", "--eval_bleu_sentences=0", "--save_checkpoints_steps=0",
         "--save_checkpoints_secs=0", "--log_every=100"]


def model_values(prefix: str) -> dict:
    """The model's weights in a checkpoint, by their checkpoint names (a weight is
    stored once, under the first path that reaches it: most via the optimizer's
    list of trainable variables, not its optimizer slots)."""
    reader = tf.train.load_checkpoint(prefix)
    return {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(prefix)
            if n.startswith(("model/", "optimizer/_trainable_variables/"))}


def saved_hparams(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "hparams.json"), encoding="utf-8") as f:
        return json.load(f)


def run(capfd, *argv, program=t2t_trainer):
    code = program.main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *parts):
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


@pytest.fixture(scope="module")
def tuning_data(numbers_model, tmp_path_factory):
    """The numbers problem encoded by `t2t-datagen --vocab_from=M` (no vocabulary learned)."""
    data_dir = str(tmp_path_factory.mktemp("tuning") / "data")
    code = t2t_datagen.main([f"--problem={NUMBERS}", f"--data_dir={data_dir}",
                             f"--vocab_from={numbers_model.path}"])
    assert code == 0
    return data_dir


def test_datagen_vocab_from_copies_the_model_vocabulary(numbers_model, tuning_data, capfd):
    name = f"{NUMBERS}.sp700.model"
    with open(os.path.join(tuning_data, name), "rb") as f, \
            open(os.path.join(numbers_model.path, name), "rb") as g:
        assert f.read() == g.read()
    with open(os.path.join(tuning_data, f"{NUMBERS}.datagen.json"), encoding="utf-8") as f:
        meta = json.load(f)
    assert meta["splits"]["train"]["examples"] == 100_000 and meta["vocab_file"] == name
    # The shards hold the ids M's own vocabulary gives the problem's pairs.
    vocab = SubwordVocab.from_file(os.path.join(numbers_model.path, name))
    pairs = list(registry.problem(NUMBERS).raw_pairs("dev", None))[:50]
    [shard] = meta["splits"]["dev"]["shards"]
    for record, (source, target) in zip(
            tf.data.TFRecordDataset(os.path.join(tuning_data, shard)).take(50), pairs):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        assert list(features["inputs"].int64_list.value) == vocab.encode_texts([source])[0]
        assert list(features["targets"].int64_list.value) == vocab.encode_texts([target])[0]
    # Again: the same vocabulary is found and kept.
    code, out, _ = run(capfd, f"--problem={NUMBERS}", f"--data_dir={tuning_data}",
                       f"--vocab_from={numbers_model.path}", program=t2t_datagen)
    assert code == 0 and f"reusing {name} (700 pieces, the same as" in out


def test_datagen_vocab_from_refuses_a_data_dir_with_another_vocabulary(
        numbers_model, tmp_path, capfd):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    other = train_sentencepiece([f"{w} {v}" for w in ("eins", "zwei", "drei") for v in
                                 ("hundert", "tausend", "und")] * 20, 300, hard_limit=False)
    (data_dir / f"{NUMBERS}.sp700.model").write_bytes(other)
    code, _, err = run(capfd, f"--problem={NUMBERS}", f"--data_dir={data_dir}",
                       f"--vocab_from={numbers_model.path}", program=t2t_datagen)
    assert_one_line_error(code, err, "already holds another vocabulary", "use a new --data_dir")
    code, _, err = run(capfd, f"--problem={NUMBERS}", f"--data_dir={data_dir}",
                       f"--vocab_from={tmp_path}", program=t2t_datagen)
    assert_one_line_error(code, err, "is not a t2t-lite model directory (no problem.json)")


def test_fine_tuning_starts_from_the_weights_with_a_fresh_step(
        numbers_model, tuning_data, tmp_path, capfd):
    model = numbers_model.path
    tuned = str(tmp_path / "tuned")
    code, out, err = run(capfd, f"--warm_start_from={model}", f"--problem={NUMBERS}",
                         f"--data_dir={tuning_data}", f"--output_dir={tuned}", "--train_steps=2",
                         "--hparams=learning_rate=0,layer_prepostprocess_dropout=0.2", *QUIET)
    assert code == 0, err
    assert f"Weights from {model}/ckpt-2000" in out
    assert os.listdir(tuned).count("ckpt-2.index") == 1  # the run's own steps: 1, 2
    reader = tf.train.load_checkpoint(os.path.join(tuned, "ckpt-2"))
    assert reader.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE") == 2
    expected = model_values(os.path.join(model, "ckpt-2000"))
    got = model_values(os.path.join(tuned, "ckpt-2"))
    assert got.keys() == expected.keys() and len(got) > 20
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    with open(os.path.join(tuned, "warm_start.json"), encoding="utf-8") as f:
        record = json.load(f)
    assert record.pop("hparams") == saved_hparams(numbers_model.path)
    assert record == {"model_dir": model, "checkpoints": [f"{model}/ckpt-2000"], "step": 2000}
    with open(os.path.join(tuned, "hparams.json"), encoding="utf-8") as f:
        hparams = json.load(f)
    assert hparams["layer_prepostprocess_dropout"] == 0.2 and hparams["hidden_size"] == 128

    # The same command again resumes the fine-tuned run; M is not read again.
    code, out, err = run(capfd, f"--warm_start_from={model}", f"--problem={NUMBERS}",
                         f"--data_dir={tuning_data}", f"--output_dir={tuned}", "--train_steps=3",
                         "--hparams=learning_rate=0,layer_prepostprocess_dropout=0.2", *QUIET)
    assert code == 0, err
    assert f"Resumed from {tuned}/ckpt-2 at step 2." in out and "Weights from" not in out
    # Another starting model for the same directory is refused.
    other = str(tmp_path / "other")
    shutil.copytree(model, other)
    code, _, err = run(capfd, f"--warm_start_from={other}", f"--problem={NUMBERS}",
                       f"--data_dir={tuning_data}", f"--output_dir={tuned}", "--train_steps=4",
                       "--hparams=learning_rate=0,layer_prepostprocess_dropout=0.2", *QUIET)
    assert_one_line_error(code, err, f"{tuned} started from {model}, not {other}")


def test_fine_tuning_from_an_average_of_checkpoints_generating_the_data(
        numbers_model, tmp_path, capfd):
    model = numbers_model.path
    tuned, data_dir = str(tmp_path / "tuned"), tmp_path / "data"
    code, out, err = run(capfd, f"--warm_start_from={model}", "--warm_start_checkpoint_average=2",
                         f"--problem={NUMBERS}", "--generate_data", f"--data_dir={data_dir}",
                         f"--output_dir={tuned}", "--train_steps=1",
                         "--hparams=learning_rate=0", *QUIET)
    assert code == 0, err
    name = f"{NUMBERS}.sp700.model"  # --generate_data took the model's vocabulary
    with open(os.path.join(model, name), "rb") as f:
        assert (data_dir / name).read_bytes() == f.read()
    assert "copied from" in out and "learned" not in out
    first, last = (model_values(os.path.join(model, f"ckpt-{s}")) for s in (1000, 2000))
    got = model_values(os.path.join(tuned, "ckpt-1"))
    for name in first:
        mean = ((first[name].astype(np.float64) + last[name]) / 2).astype(np.float32)
        np.testing.assert_array_equal(got[name], mean, err_msg=name)


@pytest.mark.parametrize("flags, message", [
    (["--hparams=hidden_size=64"], "its hidden_size is 128, this run's is 64"),
    (["--hparams=num_hidden_layers=3"],
     "its num_encoder_layers (or num_hidden_layers) is 2, this run's is 3"),
    (["--hparams_set=transformer_small"], "its hidden_size is 128, this run's is 256"),
    (["--hparams=layer_preprocess_sequence=n,layer_postprocess_sequence=da"],
     "its norm placement (layer_preprocess_sequence, layer_postprocess_sequence) is 'post', "
     "this run's is 'pre'"),
    (["--hparams=layer_norm_epsilon=1e-05"], "its layer_norm_epsilon is 1e-06, this run's is 1e-05"),
    (["--hparams=target_space_id=3"], "its target_space_id is 0, this run's is 3"),
])
def test_changes_the_weights_do_not_fit_are_one_line_errors(
        numbers_model, tuning_data, tmp_path, capfd, flags, message):
    code, _, err = run(capfd, f"--warm_start_from={numbers_model.path}", f"--problem={NUMBERS}",
                       f"--data_dir={tuning_data}", f"--output_dir={tmp_path}/tuned", *flags,
                       *QUIET)
    assert_one_line_error(code, err, message, "the weights would not fit")
    assert not os.path.exists(tmp_path / "tuned")  # refused before anything is written


def test_data_of_another_vocabulary_and_missing_models_are_one_line_errors(
        numbers_model, numbers_data_copy, tmp_path, capfd):
    with open(os.path.join(numbers_data_copy, f"{NUMBERS}.datagen.json"), encoding="utf-8") as f:
        vocab_file = json.load(f)["vocab_file"]
    other = train_sentencepiece([f"{w} {v}" for w in ("eins", "zwei", "drei") for v in
                                 ("hundert", "tausend", "und")] * 20, 300, hard_limit=False)
    with open(os.path.join(numbers_data_copy, vocab_file), "wb") as f:
        f.write(other)
    common = [f"--problem={NUMBERS}", f"--data_dir={numbers_data_copy}",
              f"--output_dir={tmp_path}/tuned", *QUIET]
    code, _, err = run(capfd, f"--warm_start_from={numbers_model.path}", *common)
    assert_one_line_error(code, err, "the data's vocabulary", "is not the model's",
                          f"t2t-datagen --vocab_from={numbers_model.path}")
    code, _, err = run(capfd, f"--warm_start_from={tmp_path}/nothing", *common)
    assert_one_line_error(code, err, "is not a t2t-lite model directory")
    code, _, err = run(capfd, f"--warm_start_from={numbers_model.path}",
                       "--warm_start_checkpoint_average=0", *common)
    assert_one_line_error(code, err, "--warm_start_checkpoint_average must be >= 1, got 0.")
    assert not os.path.exists(tmp_path / "tuned")


def test_a_fine_tuned_run_resumes_without_its_source(numbers_model, tuning_data, tmp_path, capfd):
    """N records M by its real path (a symbolic link to M is M) and M's hparams, so once
    N has a checkpoint, resuming N reads nothing of M: M may be moved away."""
    source, link, tuned = tmp_path / "source", tmp_path / "link", str(tmp_path / "tuned")
    shutil.copytree(numbers_model.path, source)
    link.symlink_to(source)
    common = [f"--problem={NUMBERS}", f"--data_dir={tuning_data}", f"--output_dir={tuned}",
              "--hparams=learning_rate=0", *QUIET]
    code, out, err = run(capfd, f"--warm_start_from={link}", "--train_steps=1", *common)
    assert code == 0, err
    with open(os.path.join(tuned, "warm_start.json"), encoding="utf-8") as f:
        assert json.load(f)["model_dir"] == str(source)
    source.rename(tmp_path / "moved")  # the link now points nowhere
    for name in (source, link):  # the path or the link it was started with
        code, out, err = run(capfd, f"--warm_start_from={name}", "--train_steps=2", *common)
        assert code == 0, err
        assert f"Resumed from {tuned}/ckpt-" in out and "Weights from" not in out
    with open(os.path.join(tuned, "hparams.json"), encoding="utf-8") as f:
        assert json.load(f) == dict(saved_hparams(numbers_model.path), learning_rate=0.0)


def test_generate_data_checks_the_source_before_writing_data(numbers_model, tmp_path, capfd):
    code, _, err = run(capfd, f"--warm_start_from={numbers_model.path}", f"--problem={NUMBERS}",
                       "--generate_data", f"--data_dir={tmp_path}/data",
                       f"--output_dir={tmp_path}/tuned", "--hparams=hidden_size=64", *QUIET)
    assert_one_line_error(code, err, "its hidden_size is 128, this run's is 64")
    assert sorted(os.listdir(tmp_path)) == []  # no data, no model directory
