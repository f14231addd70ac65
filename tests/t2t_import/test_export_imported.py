"""The SavedModel of a model imported from tensor2tensor: strings in, t2t's translations
out, with t2t's SubwordTextEncoder inside the graph, for both loaders TF Serving users
have (TF2 `tf.saved_model.load`, TF1 session), in a process that never imports t2t_lite."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

from t2t_lite.export.exporter import export
from t2t_lite.model_dir import ModelDir

from conftest import T2T_MODEL_A

EXPECTED = T2T_MODEL_A / "expected"

CLIENT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the WordPiece op inside the graph)
    path, texts = sys.argv[1], json.loads(sys.stdin.read())
    best = tf.saved_model.load(path).signatures["serving_default"](inputs=tf.constant(texts))
    with tf.compat.v1.Graph().as_default(), tf.compat.v1.Session() as sess:
        graph = tf.compat.v1.saved_model.load(sess, ["serve"], path)
        sig = graph.signature_def["serving_default"]
        tf1 = sess.run(sig.outputs["outputs"].name, {sig.inputs["inputs"].name: texts})
    json.dump({"outputs": [s.decode("utf-8") for s in best["outputs"].numpy()],
               "scores": best["scores"].numpy().tolist(),
               "tf1_outputs": [s.decode("utf-8") for s in tf1],
               "t2t_lite_imported": any(m.startswith("t2t_lite") for m in sys.modules)},
              sys.stdout)
""")


def read(name):
    with open(EXPECTED / name, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def test_saved_model_translates_as_t2t(t2t_imported, tmp_path):
    """With the imported model's defaults (t2t-decoder's: beam 4, alpha 0.6,
    extra_length 100) the SavedModel returns t2t's beam-4 outputs of all 212 lines, its
    scores within 1e-4 (1e-6 relative for the cut-off lines' summed log-probabilities)."""
    version = export(ModelDir.open(t2t_imported), str(tmp_path / "exports"))
    lines = read("input.en")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", CLIENT, version], input=json.dumps(lines),
                            text=True, capture_output=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    served = json.loads(result.stdout)
    assert not served["t2t_lite_imported"]
    assert served["outputs"] == read("t2t.beam4.txt")
    assert served["tf1_outputs"] == served["outputs"]
    np.testing.assert_allclose(served["scores"], [float(s) for s in read("t2t.beam4.scores")],
                               atol=1e-4, rtol=1e-6)
