"""t2t-attention: the saved weights are the model's, rows are distributions, masks hold."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_attention

from model_dirs import load_model


@pytest.fixture(scope="module")
def model_dir(numbers_model):
    """The suite's trained numbers model (conftest.py): its own translations end, so
    the drawings stay small (a random model's would run to the length limit)."""
    return numbers_model.path


def test_saved_weights_are_the_models_and_rows_are_distributions(model_dir, tmp_path):
    npz, png = tmp_path / "a.npz", tmp_path / "a.png"
    assert t2t_attention.main([f"--output_dir={model_dir}", "--source=three hundred and two",
                               "--target=dreihundertzwei", f"--npz={npz}", f"--png={png}",
                               "--kind=cross"]) == 0
    saved = np.load(npz)
    model, vocab = load_model(model_dir)
    source = vocab.encode(tf.constant(["three hundred and two"]))
    target = vocab.encode(tf.constant(["dreihundertzwei"]))
    direct = model.attention_weights(source.to_tensor(), target.to_tensor())
    pieces = vocab.pieces()
    assert list(saved["source"]) == [pieces[i] for i in source.to_list()[0]]
    assert list(saved["target"]) == [pieces[i] for i in target.to_list()[0]]
    assert saved["source"][-1] == "</s>"
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_array_equal(saved[kind], direct[kind][0].numpy())
        # [layers, heads, queries, keys]; every query's weights sum to 1.
        np.testing.assert_allclose(saved[kind].sum(-1), 1.0, rtol=1e-5)
    layers, heads, s = saved["encoder"].shape[:3]
    t = saved["decoder"].shape[2]
    assert saved["cross"].shape == (layers, heads, t, s) and saved["decoder"].shape[3] == t
    # A decoder position never attends to a later one.
    assert not np.triu(saved["decoder"], k=1).any()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_padding_keys_get_zero_weight(model_dir):
    model, _ = load_model(model_dir)
    inputs = tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]])  # row 1 has two padding positions
    targets = tf.constant([[9, 1], [10, 1]])
    weights = model.attention_weights(inputs, targets)
    for kind in ("encoder", "cross"):
        w = weights[kind].numpy()  # [B, L, H, Q, S]
        assert (w[1, ..., 2:] == 0).all()  # exactly 0: the real keys carry all the weight
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


def test_lines_style_own_translation_and_errors(model_dir, tmp_path, capfd):
    png = tmp_path / "lines.png"
    assert t2t_attention.main([f"--output_dir={model_dir}", "--source=forty-two",
                               "--style=lines", "--head=1", "--layer=0", f"--png={png}"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "target: " in capfd.readouterr().err  # its own translation, as pieces
    for argv, message in (
            ([f"--source={' '.join(['seven hundred'] * 40)}"], "at most 60"),
            (["--source=one", "--head=9"], "--head must be in 0..3"),
            (["--source=one", "--layer=5"], "--layer must be in"),
            (["--source= "], "empty")):
        assert t2t_attention.main([f"--output_dir={model_dir}", f"--png={png}", *argv]) == 1
        err = capfd.readouterr().err.strip()
        assert err.startswith("t2t-attention: error: ") and message in err, err
        assert len(err.splitlines()) == 1
