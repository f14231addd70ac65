"""Serving imported Marian models: the SavedModel, t2t-server, and CTranslate2's refusal.

- t2t-exporter's SavedModel takes and returns strings (the Marian vocabulary runs in
  its graph) and searches with the model's imported decode defaults (transformers' beam
  search): loaded in a fresh process that imports only tensorflow and tensorflow_text,
  it translates the reference inputs to transformers' lines (which t2t-decoder writes),
  with transformers' scores. A multilingual model's line without a language token is
  the graph's assertion, the vocabulary's message in its text.
- t2t-server, with the TensorFlow engine and with the SavedModel engine, answers a
  request with t2t-decoder's lines, and a multilingual model's line without a language
  token with a 400 and the vocabulary's one-line message.
- The CTranslate2 export, and CTranslate2 as t2t-decoder's or t2t-server's engine,
  refuse an imported Marian model in one line before anything is loaded or written.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from marian_models import BEAMS, LANGUAGE_REFUSAL, accepted_lines, expected, importer
from serving import RunningServer, decoder_lines, http
from t2t_lite.bin import t2t_decoder, t2t_exporter, t2t_server
from t2t_lite.model_dir import ModelDir
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import TFEngine
from t2t_lite.serve.saved_model_engine import SavedModelEngine

SAVED_MODELS = ["shared_swish", "multilingual_gelu"]
MULTILINGUAL = "multilingual_gelu"
UNTAGGED = "three hundred and twelve"  # multilingual_gelu's input.txt line 58: no token
REFUSED = f"{LANGUAGE_REFUSAL} Refused: {UNTAGGED!r}."
CONFIG = ServerConfig(model_name="marian", max_batch_sentences=8, batch_timeout_ms=5)

# A user's client: tensorflow and tensorflow_text only. stdin: [[path, texts, probe], ...]
# (probe: one more line, translated alone).
CLIENT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the SentencePiece ops
    answers = []
    for path, texts, probe in json.loads(sys.stdin.read()):
        model = tf.saved_model.load(path)
        best = model.signatures["serving_default"](inputs=tf.constant(texts))
        answer = {"outputs": [s.decode("utf-8") for s in best["outputs"].numpy()],
                  "scores": best["scores"].numpy().tolist()}
        try:
            model.signatures["serving_default"](inputs=tf.constant([probe]))
        except tf.errors.InvalidArgumentError as e:
            answer["probe_error"] = e.message
        answers.append(answer)
    json.dump({"answers": answers,
               "t2t_lite_imported": any(m.startswith("t2t_lite") for m in sys.modules)},
              sys.stdout)
""")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    return importer(tmp_path_factory)


@pytest.fixture(scope="module")
def exported(imported, tmp_path_factory):
    """name -> the version t2t-exporter wrote of the imported model (no decode flags)."""
    paths = {}
    for name in SAVED_MODELS:
        export_dir = tmp_path_factory.mktemp("exports") / name
        assert t2t_exporter.main([f"--output_dir={imported(name)}",
                                  f"--export_dir={export_dir}"]) == 0
        paths[name] = export_dir / "1"
    return paths


def kept_lines(name):
    """expected/input.txt's lines that every program translates, or answers with ""
    (blank): all but multilingual_gelu's refused lines."""
    lines = expected(name, "input.txt")
    accepted = set(accepted_lines(name))
    return [line for i, line in enumerate(lines) if i in accepted or not line.strip()]


def transformers_lines(name, lines):
    """transformers' beam translation of each of `lines` (from input.txt), "" for blank
    lines; (and its score, 0.0 for blank lines)."""
    index = {line: i for i, line in enumerate(expected(name, "input.txt"))}
    beam = f"beam{BEAMS[name]}"
    texts, scores = expected(name, f"{beam}.txt"), expected(name, f"{beam}.scores")
    return ([texts[index[line]] if line.strip() else "" for line in lines],
            [float(scores[index[line]]) if line.strip() else 0.0 for line in lines])


def test_a_fresh_client_translates_as_transformers(exported, imported, tmp_path):
    inputs = {name: kept_lines(name) for name in SAVED_MODELS}
    assert [len(inputs[name]) for name in SAVED_MODELS] == [60, 59]  # 58 translated each
    assert expected(MULTILINGUAL, "input.txt")[57] == UNTAGGED
    # The model directories hidden: nothing in the exports may point back.
    for name in SAVED_MODELS:
        os.rename(imported(name), f"{imported(name)}.hidden")
    try:
        result = subprocess.run(
            [sys.executable, "-c", CLIENT], capture_output=True, text=True, timeout=300,
            input=json.dumps([[str(exported[name]), inputs[name], UNTAGGED]
                              for name in SAVED_MODELS]),
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), cwd=tmp_path)
    finally:
        for name in SAVED_MODELS:
            os.rename(f"{imported(name)}.hidden", imported(name))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout)
    assert not got["t2t_lite_imported"]
    for name, answer in zip(SAVED_MODELS, got["answers"]):
        texts, scores = transformers_lines(name, inputs[name])
        assert answer["outputs"] == texts
        # transformers' scores (sum / length, renormalized): its search is in the graph
        np.testing.assert_allclose(answer["scores"], scores, atol=1e-5)
    # A line without a language token: the shared model translates it; what the
    # multilingual model's caller sees is InvalidArgumentError, the vocabulary's message
    # in its text.
    shared, multilingual = got["answers"]
    assert "probe_error" not in shared
    assert f"assertion failed: [{LANGUAGE_REFUSAL}]" in multilingual["probe_error"].splitlines()


def test_the_export_records_the_imported_search_and_where_the_model_came_from(
        exported, imported):
    for name in SAVED_MODELS:
        extra = exported[name] / "assets.extra"
        with open(extra / "export.json", encoding="utf-8") as f:
            params = json.load(f)["decode_params"]
        assert {k: params[k] for k in ("beam_size", "alpha", "length_penalty", "stop_rule",
                                       "forbid_pad", "forced_eos", "renormalize",
                                       "max_output_length")} == {
            "beam_size": BEAMS[name], "alpha": 1.0, "length_penalty": "fairseq",
            "stop_rule": "transformers", "forbid_pad": True, "forced_eos": True,
            "renormalize": True, "max_output_length": 511}
        for file in ("hparams.json", "problem.json", "marian_import.json"):
            assert (extra / file).read_bytes() == (imported(name) / file).read_bytes()
        assert sorted(os.listdir(exported[name] / "assets")) == ["marian_vocab.json"]


# -- t2t-server ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tf_engine(imported) -> TFEngine:
    """The engine t2t-server --output_dir makes of the imported multilingual model."""
    return TFEngine.load(ModelDir.open(str(imported(MULTILINGUAL))))


@pytest.fixture(scope="module", params=["tensorflow", "saved_model"])
def server(request, tf_engine, exported):
    """t2t-server --output_dir=M (TensorFlow engine) or --export_dir=E (SavedModel)."""
    engine = tf_engine if request.param == "tensorflow" else \
        SavedModelEngine.load(str(exported[MULTILINGUAL].parent))
    running = RunningServer(engine, CONFIG).start()
    yield running
    running.stop()


def test_a_servers_answers_are_the_decoders_lines(server, tf_engine):
    lines = kept_lines(MULTILINGUAL)
    written = decoder_lines(tf_engine, lines)  # t2t-decoder's library, its batches
    assert written == transformers_lines(MULTILINGUAL, lines)[0]
    status, _, body = http(server.url + "/v1/translate", {"inputs": lines})
    assert status == 200, body
    assert body["outputs"] == written


@pytest.mark.parametrize("path, body", [
    ("/v1/translate", {"inputs": [">>deu<< one", UNTAGGED]}),
    ("/v1/models/marian:predict", {"instances": [">>fra<< two", UNTAGGED]}),
])
def test_a_line_without_a_language_token_is_a_bad_request(server, path, body):
    assert http(server.url + path, body)[::2] == (
        400, {"error": {"code": "bad_request", "message": REFUSED}})


# -- CTranslate2 ----------------------------------------------------------------------

CT2_REFUSAL = (
    "{path} holds an imported Marian model, which t2t-lite cannot convert for CTranslate2 "
    "yet: it does not write {reasons}, and CTranslate2 does not search as transformers "
    "does (stop_rule=transformers, forbid_pad, forced_eos, renormalize); translate it "
    "with the TensorFlow engine (the default --engine) or a SavedModel (t2t-exporter's "
    "default --format).")
START_ROW = "its trained start row (<pad>'s embedding, where CTranslate2 starts from zeros)"
SHARED_SWISH_REASONS = ("its attention biases, its swish activation, its output bias and "
                        + START_ROW)


@pytest.mark.parametrize("name, reasons", [
    ("shared_swish", SHARED_SWISH_REASONS),
    ("separate_relu", "its attention biases, its output bias, " + START_ROW
                      + " and its separate source vocabulary (61 ids)"),
])
def test_the_ctranslate2_export_is_refused_in_one_line(imported, tmp_path, capfd, name,
                                                       reasons):
    path = imported(name)
    code = t2t_exporter.main(["--format=ctranslate2", f"--output_dir={path}",
                              f"--export_dir={tmp_path / 'ct2'}"])
    assert code == 1
    assert capfd.readouterr().err.splitlines() == [
        "t2t-exporter: error: " + CT2_REFUSAL.format(path=path, reasons=reasons)]
    assert not (tmp_path / "ct2").exists()


@pytest.mark.parametrize("name", ["t2t-decoder", "t2t-server"])
def test_the_ctranslate2_engine_is_refused_in_one_line(imported, tmp_path, capfd, name):
    path = imported("shared_swish")
    source = tmp_path / "in.txt"
    source.write_text("one\n")
    program, flags = {"t2t-decoder": (t2t_decoder, [f"--decode_from_file={source}"]),
                      "t2t-server": (t2t_server, ["--port=0"])}[name]
    code = program.main([f"--output_dir={path}", "--engine=ctranslate2", *flags])
    assert code == 1
    assert capfd.readouterr().err.splitlines() == [
        f"{name}: error: " + CT2_REFUSAL.format(path=path, reasons=SHARED_SWISH_REASONS)]
    assert not (path / "ctranslate2_cache").exists()
