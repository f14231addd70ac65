"""t2t-exporter: a SavedModel that takes text and returns translations.

The export is loaded the way its users load it: in a fresh process that
imports only tensorflow and tensorflow_text, with the TF2 loader and with the
TF1/C++ session loader that TF Serving uses, and through `saved_model_cli`.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from t2t_lite.bin import t2t_decoder, t2t_exporter
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite import model_dir as model_dir_lib
from t2t_lite.model_dir_writer import copy_metadata

from conftest import EXPORT_DECODE
from model_dirs import load_model

DECODE = EXPORT_DECODE
LONG = " ".join(["seven hundred"] * 300)  # ~600 subwords, beyond max_length (256)
INPUTS = ["one hundred and one", "", "   ", "seventy-two thousand, four hundred and nine",
          "fünf — 東京 ✓ naïve", "two", LONG, LONG + " and nine", "\u3000\t"]
BLANK = [not s.strip() for s in INPUTS]

# What a user's client runs: tensorflow and tensorflow_text only, both loaders.
CLIENT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the SentencePiece ops
    path, texts = sys.argv[1], json.loads(sys.stdin.read())
    model = tf.saved_model.load(path)
    best = model.signatures["serving_default"](inputs=tf.constant(texts))
    nbest = model.signatures["nbest"](inputs=tf.constant(texts))
    alone = [model.signatures["serving_default"](inputs=tf.constant([t]))["outputs"][0]
             for t in texts]
    with tf.compat.v1.Graph().as_default(), tf.compat.v1.Session() as sess:
        graph = tf.compat.v1.saved_model.load(sess, ["serve"], path)
        sig = graph.signature_def["serving_default"]
        tf1 = sess.run({k: v.name for k, v in sig.outputs.items()},
                       {sig.inputs["inputs"].name: texts})
    text = lambda a: [s.decode("utf-8") for s in a]
    json.dump({"outputs": text(best["outputs"].numpy()),
               "scores": best["scores"].numpy().tolist(),
               "nbest": [text(row) for row in nbest["outputs"].numpy()],
               "nbest_scores": nbest["scores"].numpy().tolist(),
               "alone": [t.numpy().decode("utf-8") for t in alone],
               "tf1_outputs": text(tf1["outputs"]), "tf1_scores": tf1["scores"].tolist(),
               "t2t_lite_imported": any(m.startswith("t2t_lite") for m in sys.modules)},
              sys.stdout)
""")

# saved_model_cli must see the tensorflow-text ops registered before it loads.
SAVED_MODEL_CLI = textwrap.dedent("""
    import tensorflow_text  # noqa: F401
    from tensorflow.python.tools import saved_model_cli
    saved_model_cli.main()
""")


@pytest.fixture(scope="module")
def model_dir(numbers_model):
    """The suite's trained numbers model (conftest.py): non-trivial translations."""
    return numbers_model.path


@pytest.fixture(scope="module")
def exported(saved_model_export):
    """(export_dir, version path) of the suite's export of the latest checkpoint."""
    export_dir, path = saved_model_export
    assert path == os.path.join(export_dir, "1")
    return export_dir, path


@pytest.fixture(scope="module")
def translator(model_dir):
    model, vocab = load_model(model_dir)
    return Translator(Search(model, SearchParams().parse(DECODE)), vocab)


def _python(code: str, *args, stdin: str = "", cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code, *args], input=stdin, text=True,
                            capture_output=True, env=env, cwd=cwd, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_fresh_process_both_loaders_equal_translator_and_decoder(
        exported, model_dir, translator, tmp_path):
    # Move the export elsewhere and hide the model directory: nothing may point back.
    # (The shared model directory is renamed back before anything else reads it.)
    moved = str(tmp_path / "elsewhere" / "ende" / "1")
    shutil.copytree(exported[1], moved)
    hidden = model_dir + ".hidden"
    os.rename(model_dir, hidden)
    try:
        got = json.loads(_python(CLIENT, moved, stdin=json.dumps(INPUTS), cwd=tmp_path).stdout)
    finally:
        os.rename(hidden, model_dir)
    assert not got["t2t_lite_imported"]

    expected = translator.translate(INPUTS)
    assert got["outputs"] == expected
    assert sum(bool(o) for o in expected) >= 5 and len(set(expected)) >= 5  # not degenerate
    assert got["tf1_outputs"] == got["outputs"]
    np.testing.assert_array_equal(got["tf1_scores"], got["scores"])

    # n-best: all beams and scores of the in-process search; blanks -> "" and 0.0.
    keep = [i for i, b in enumerate(BLANK) if not b]
    beams, scores = translator.nbest_ids(translator.encode([INPUTS[i] for i in keep]))
    assert [got["nbest"][i] for i in keep] == beams
    np.testing.assert_allclose([got["nbest_scores"][i] for i in keep], scores, rtol=1e-5)
    np.testing.assert_allclose([got["scores"][i] for i in keep], np.array(scores)[:, 0],
                               rtol=1e-5)
    for i in np.flatnonzero(BLANK):
        assert got["nbest"][i] == ["", "", ""] and got["nbest_scores"][i] == [0.0] * 3

    # Batches of mixed lengths: each sentence translated alone gives the same output.
    assert got["alone"] == got["outputs"]
    # Too-long inputs are truncated: what follows subword 255 does not matter.
    assert got["outputs"][INPUTS.index(LONG)] == got["outputs"][INPUTS.index(LONG + " and nine")]

    # t2t-decoder on the same inputs and decode hparams writes the same lines.
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(s + "\n" for s in INPUTS if "\n" not in s), encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={model_dir}", f"--decode_hparams={DECODE}",
                             f"--decode_from_file={source}", f"--decode_to_file={target}"]) == 0
    assert target.read_text(encoding="utf-8") == "".join(o + "\n" for o in got["outputs"])


def test_saved_model_cli_show_and_run(exported, translator, tmp_path):
    path = exported[1]
    show = _python(SAVED_MODEL_CLI, "show", "--dir", path, "--all").stdout
    serving = show[show.index("signature_def['serving_default']"):]
    for expected in ("inputs['inputs']", "dtype: DT_STRING", "shape: (-1)",
                     "outputs['outputs']", "outputs['scores']", "dtype: DT_FLOAT"):
        assert expected in serving
    assert "signature_def['nbest']" in show and "shape: (-1, 3)" in show

    sentence = "seventy-two thousand, four hundred and nine"
    run = _python(SAVED_MODEL_CLI, "run", "--dir", path, "--tag_set", "serve",
                  "--signature_def", "serving_default",
                  "--input_exprs", f"inputs={[sentence]!r}", cwd=tmp_path).stdout
    assert "Result for output key outputs:" in run and "Result for output key scores:" in run
    assert repr(translator.translate([sentence])[0].encode()) in run


def test_layout_provenance_and_versions(saved_model_export_copy, model_dir, capsys):
    export_dir, path = saved_model_export_copy
    vocab = model_dir_lib.ModelDir.open(model_dir).vocab_path
    with open(vocab, "rb") as f, open(os.path.join(path, "assets", os.path.basename(vocab)),
                                      "rb") as g:
        assert f.read() == g.read()
    extra = os.path.join(path, "assets.extra")
    for name in ("hparams.json", "problem.json"):
        with open(os.path.join(model_dir, name)) as f, open(os.path.join(extra, name)) as g:
            assert json.load(f) == json.load(g)
    with open(os.path.join(extra, "export.json")) as f:
        info = json.load(f)
    assert info["checkpoints"] == [os.path.join(model_dir, "ckpt-2000")]
    assert info["decode_params"]["beam_size"] == 3 and info["decode_params"]["extra_length"] == 8

    # Through the command line: the next version, chosen weights, no temporary left over.
    assert t2t_exporter.main([f"--output_dir={model_dir}", f"--export_dir={export_dir}",
                              f"--decode_hparams={DECODE}", "--checkpoint_average=2"]) == 0
    assert capsys.readouterr().out.strip() == os.path.join(export_dir, "2")
    assert sorted(os.listdir(export_dir)) == ["1", "2"]
    with open(os.path.join(export_dir, "2", "assets.extra", "export.json")) as f:
        assert json.load(f)["checkpoints"] == [os.path.join(model_dir, f"ckpt-{n}")
                                               for n in (1000, 2000)]


@pytest.mark.parametrize("case, message", [
    ("missing", "does not exist"),
    ("no_checkpoint", "No checkpoints"),
    ("unwritable", "Cannot create export directory"),
])
def test_user_errors_are_one_line(model_dir, tmp_path, capfd, case, message):
    source, export_dir = model_dir, str(tmp_path / "exports")
    if case == "missing":
        source = str(tmp_path / "nothing")
    elif case == "no_checkpoint":
        source = str(tmp_path / "empty_model")
        copy_metadata(model_dir_lib.ModelDir.open(model_dir), source)
    else:
        (tmp_path / "a_file").write_text("")
        export_dir = str(tmp_path / "a_file" / "exports")
    assert t2t_exporter.main([f"--output_dir={source}", f"--export_dir={export_dir}"]) == 1
    err = capfd.readouterr().err
    assert err.startswith("t2t-exporter: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    if case != "unwritable":
        assert not os.path.exists(export_dir)  # nothing written before the model loads


def test_missing_flags_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        t2t_exporter.main(["--output_dir=somewhere"])
    assert exit_info.value.code == 2
    assert "--export_dir" in capsys.readouterr().err
