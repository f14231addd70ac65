"""t2t-import refuses what it cannot compute, each with one line naming the setting, and
writes nothing then; what it chose for the user (target space, input length) it says."""

import json
import os
import pathlib

import pytest
import tensorflow as tf

import t2t_lite
from paths import T2T_REFERENCE
from t2t_lite.bin import t2t_import
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import t2t_hparams
from t2t_lite.t2t_import import importer, t2t_names

MODEL_A = T2T_REFERENCE / "model_a"
MODEL_B = pathlib.Path(__file__).parent / "data" / "model_b"  # in the repository


@pytest.fixture
def t2t_copy(tmp_path):
    """A t2t output directory like model_a's (TF 1.x names) whose hparams.json and
    flags.txt a test may change; the checkpoint files are links to the shared ones."""
    if not MODEL_A.is_dir():
        pytest.skip(f"tensor2tensor's reference model not found at {MODEL_A}")
    out = tmp_path / "t2t_train"
    out.mkdir()
    source = MODEL_A / "output_dir"
    for name in os.listdir(source):
        if name in ("hparams.json", "flags.txt"):
            (out / name).write_bytes((source / name).read_bytes())
        else:
            os.symlink(source / name, out / name)
    return out


def set_hparams(t2t_dir, **changes):
    path = t2t_dir / "hparams.json"
    values = json.loads(path.read_text())
    values.update(changes)
    path.write_text(json.dumps(values))


def run_import(capfd, t2t_dir, output_dir, *flags, data_dir=None):
    code = t2t_import.main([f"--t2t_output_dir={t2t_dir}",
                            f"--t2t_data_dir={data_dir or MODEL_A / 'data_dir'}",
                            f"--output_dir={output_dir}", *flags])
    captured = capfd.readouterr()
    return code, captured.err.strip().splitlines()


@pytest.mark.parametrize("name, value", [
    ("ffn_layer", "dense_relu_dense_relu"), ("self_attention_type", "dot_product_relative"),
    ("pos", "emb"), ("max_relative_position", 20), ("norm_type", "noam"),
    ("multiply_embedding_mode", "none"), ("vocab_divisor", 8),
    ("attention_variables_3d", True), ("unidirectional_encoder", True),
    ("proximity_bias", True), ("num_area_layers", 2), ("symbol_modality_skip_top", True),
])
def test_an_unsupported_hparam_is_one_line_naming_it(capfd, tmp_path, t2t_copy, name, value):
    set_hparams(t2t_copy, **{name: value})
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert code == 1
    assert err == [f"t2t-import: error: t2t hparam {name}={value!r} is not supported by "
                   "t2t-lite's Transformer; this model cannot be imported."]
    assert not (tmp_path / "imported").exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".imported")]


def test_an_unsupported_norm_sequence_names_both(capfd, tmp_path, t2t_copy):
    set_hparams(t2t_copy, layer_preprocess_sequence="n", layer_postprocess_sequence="dan")
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert code == 1 and len(err) == 1
    assert "layer_preprocess_sequence='n', layer_postprocess_sequence='dan'" in err[0]


def test_another_model_is_refused(capfd, tmp_path, t2t_copy):
    flags = (t2t_copy / "flags.txt").read_text().replace("--model=transformer",
                                                          "--model=universal_transformer")
    (t2t_copy / "flags.txt").write_text(flags)
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert (code, err) == (1, ["t2t-import: error: --model=universal_transformer: only t2t's "
                               "'transformer' model can be imported."])


@pytest.mark.parametrize("missing", ["hparams.json", "flags.txt"])
def test_a_missing_metadata_file_is_one_line(capfd, tmp_path, t2t_copy, missing):
    (t2t_copy / missing).unlink()
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert code == 1 and len(err) == 1
    assert f"No {missing} in {t2t_copy}" in err[0]
    assert not (tmp_path / "imported").exists()


def test_a_missing_vocabulary_is_one_line(capfd, tmp_path, t2t_copy):
    empty = tmp_path / "t2t_data"
    empty.mkdir()
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported", data_dir=empty)
    assert (code, err) == (1, [
        "t2t-import: error: No SubwordTextEncoder vocabulary "
        f"vocab.translate_ende_multi30k.<size>.subwords in {empty} (t2t-datagen writes it "
        "there); only subword vocabularies can be imported."])


@pytest.mark.parametrize("changes, expected", [
    # hparams.json says 3 layers: the checkpoint lacks layer_2's variables.
    ({"num_hidden_layers": 3}, "lacks the variable transformer/body/encoder/layer_2/"),
    # hparams.json says 1 layer: layer_1's variables would be dropped.
    ({"num_hidden_layers": 1}, "holds the model variable transformer/body/decoder/layer_1/"),
    # Another filter size: the feed-forward kernels do not fit.
    ({"filter_size": 256}, "transformer/body/encoder/layer_0/ffn/conv1/kernel make a "
                           "[128, 512] weight where the model needs [128, 256]"),
    # Shared embeddings but a separate softmax: the checkpoint has only the shared matrix.
    ({"shared_embedding_and_softmax_weights": False, "shared_embedding": True},
     "lacks the variable transformer/symbol_modality_8079_128/softmax/weights_0"),
])
def test_a_checkpoint_of_another_shape_is_one_line(capfd, tmp_path, t2t_copy, changes,
                                                   expected):
    set_hparams(t2t_copy, **changes)
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert code == 1 and len(err) == 1, err
    assert expected in err[0]
    assert not (tmp_path / "imported").exists()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".imported")]


def test_an_existing_output_dir_is_not_overwritten(capfd, tmp_path, t2t_copy):
    (tmp_path / "imported").mkdir()
    (tmp_path / "imported" / "notes.txt").write_text("mine")
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported")
    assert code == 1 and "exists and is not empty" in err[0]
    assert os.listdir(tmp_path / "imported") == ["notes.txt"]


def test_a_target_space_out_of_range(capfd, tmp_path, t2t_copy):
    code, err = run_import(capfd, t2t_copy, tmp_path / "imported", "--target_space_id=32")
    assert (code, err) == (1, ["t2t-import: error: --target_space_id must be in [0, 32), got 32."])


def test_a_learning_rate_schedule_t2t_lite_lacks_is_a_note(capfd, tmp_path, t2t_copy):
    """Training-only settings do not stop an import: the model is imported with
    t2t-lite's default schedule, and a note says so."""
    set_hparams(t2t_copy, learning_rate_schedule="constant*piecewise")
    code = t2t_import.main([f"--t2t_output_dir={t2t_copy}",
                            f"--t2t_data_dir={MODEL_A / 'data_dir'}",
                            f"--output_dir={tmp_path / 'imported'}"])
    out = capfd.readouterr().out
    assert code == 0
    assert "note: t2t's learning-rate settings are not carried (Unknown learning-rate " \
           "factor 'piecewise'" in out
    hparams = json.loads((tmp_path / "imported" / "hparams.json").read_text())
    assert hparams["learning_rate_schedule"] == "legacy" and hparams["hidden_size"] == 128


def test_a_weight_no_t2t_variable_fills_is_refused():
    """Model b's weight map without the target-space table, and its checkpoint without
    that variable: every checkpoint variable is used, yet one t2t-lite weight would
    keep its random initial value, so nothing is assigned."""
    run = t2t_hparams.read_run(str(MODEL_B / "output_dir"))
    model = t2t_lite.build_model(t2t_hparams.to_hparams(run), 513)
    targets = t2t_names.weight_map(model, run.values, 513)
    table = "transformer/body/target_space_embedding/kernel"
    kept = [target for target in targets if target[1] != [table]]
    assert len(kept) == len(targets) - 1
    reader = tf.train.load_checkpoint(importer.t2t_checkpoints(str(MODEL_B / "output_dir"))[0])
    names, available = t2t_names.checkpoint_variables(reader)
    del available[table]
    before = [weight.numpy().copy() for weight in model.weights]
    with pytest.raises(T2TError) as raised:
        t2t_names.assign(model, kept, lambda name: reader.get_tensor(names[name]), available,
                         "model.ckpt-400")
    assert str(raised.value) == (
        f"t2t-lite's weight {model.name}/target_space_embedding/embeddings has no t2t "
        "variable to be imported from and would keep its random initial value; refusing to "
        "import (t2t-import's weight map lacks it).")
    assert all((weight.numpy() == value).all() for weight, value in zip(model.weights, before))


@pytest.mark.parametrize("flags, space, space_line", [
    ((), 0, "target_space_id=0 (the default, t2t's 'generic' space; t2t took it from "
            "translate_ende_multi30k's problem_hparams: if it used another, import again "
            "with --target_space_id=N)."),
    (("--target_space_id=3",), 3, "target_space_id=3 (--target_space_id)."),
])
def test_the_import_says_what_it_chose(capfd, tmp_path, t2t_copy, flags, space, space_line):
    """The target space used (recorded in hparams.json and t2t_import.json) and that
    decoding inputs are not truncated at t2t's max_length, each in one line."""
    code = t2t_import.main([f"--t2t_output_dir={t2t_copy}",
                            f"--t2t_data_dir={MODEL_A / 'data_dir'}",
                            f"--output_dir={tmp_path / 'imported'}", *flags])
    out = capfd.readouterr().out.splitlines()
    assert code == 0
    assert out[:2] == [space_line, (
        "Decoding inputs are not truncated, as by t2t-decoder (t2t's max_length=256 only "
        "filtered training examples); --decode_hparams=max_input_length=N truncates them to "
        "N subwords.")]
    for name in ("hparams.json", "t2t_import.json"):
        assert json.loads((tmp_path / "imported" / name).read_text())["target_space_id"] == space


def test_no_target_space_is_said_too():
    hparams = t2t_lite.HParams(use_target_space_embedding=False)
    assert t2t_hparams.target_space_note(hparams, "p", given=False) == (
        "target_space_id: not used (t2t's use_target_space_embedding=False).")
