"""t2t-server --export_dir: the newest SavedModel version of t2t-exporter, answered as
the SavedModel itself answers; --watch switches to a newer complete version; the
flags it cannot honour are one-line errors.

One server for the module, on two exports of the random-weight model: version 1
of ckpt-3, version 2 of ckpt-1 (their scores are about 10x apart), and a
directory "9" that is not a version (no saved_model.pb). The expected answers
are the SavedModels' own signatures, loaded here with `tf.saved_model.load`.
"""

import functools
import logging
import os
import shutil
import time

import pytest
import tensorflow as tf

from serving import (DECODE, MODEL_NAME, RunningServer, http, metric,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from t2t_lite.bin import t2t_server
from t2t_lite.export.exporter import export
from t2t_lite.model_dir import ModelDir
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.saved_model_engine import SavedModelEngine
from t2t_lite.serve.watch import Watcher, export_source

CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=4, batch_timeout_ms=5,
                      batch_workers=2)
POLL_S = 0.1
LINES = number_sentences(12)[1:] + ["", "zwölf Äpfel"]


@pytest.fixture(scope="module")
def export_dir(model_path, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("exports") / "ende")
    for step in (3, 1):
        export(ModelDir.open(model_path), path, DECODE,
               checkpoint_path=os.path.join(model_path, f"ckpt-{step}"))
    os.makedirs(os.path.join(path, "9", "variables"))  # not a version: no saved_model.pb
    return path


@functools.lru_cache(maxsize=None)
def loaded(version_path: str):
    return tf.saved_model.load(version_path)


def saved_model_answers(version_path: str, lines=tuple(LINES), signature="serving_default"):
    """(outputs, scores) of the SavedModel's own signature on `lines` (one batch), as lists."""
    out = loaded(version_path).signatures[signature](inputs=tf.constant(list(lines)))
    return ([[h.decode() for h in row] if signature == "nbest" else row.decode()
             for row in out["outputs"].numpy().tolist()], out["scores"].numpy().tolist())


@pytest.fixture(scope="module")
def server(export_dir):
    def load():
        return SavedModelEngine.load(export_dir)
    running = RunningServer(load(), CONFIG,
                            Watcher(export_source(export_dir), load, MODEL_NAME, POLL_S)).start()
    yield running
    running.stop()


def translate(server, inputs):
    return http(server.url + "/v1/translate", {"inputs": inputs})


def assert_answers(server, version_path: str, version: int) -> None:
    """/v1/translate and TF Serving's nbest predict equal the version's own signatures."""
    outputs, scores = saved_model_answers(version_path)
    status, _, body = translate(server, LINES)
    assert status == 200 and body["model"] == {"name": MODEL_NAME, "version": version}
    assert body["outputs"] == outputs
    assert body["scores"] == pytest.approx(scores, abs=1e-3)  # other batches round otherwise
    for line in LINES[:3]:  # alone in its batch, as alone here: the same computation
        beams, beam_scores = saved_model_answers(version_path, [line], "nbest")
        status, _, body = http(f"{server.url}/v1/models/{MODEL_NAME}/versions/{version}:predict",
                               {"inputs": [line], "signature_name": "nbest"})
        assert status == 200 and body["outputs"] == {"outputs": beams, "scores": beam_scores}
    status = http(f"{server.url}/v1/models/{MODEL_NAME}")[2]["model_version_status"]
    assert [s["version"] for s in status] == [str(version)]
    assert metric(http(server.url + "/metrics")[2],
                  f't2t_server_model_version{{model="{MODEL_NAME}"}}') == version


def test_serves_the_newest_version_as_the_saved_model_answers(server, export_dir, engine):
    assert_answers(server, os.path.join(export_dir, "2"), 2)
    # Version 2 (ckpt-1) is not version 1 (ckpt-3): the check above tells them apart.
    assert saved_model_answers(os.path.join(export_dir, "1"))[1] != pytest.approx(
        saved_model_answers(os.path.join(export_dir, "2"))[1], abs=1)
    # Batches group sentences by the export's own subwords, as the TF engine counts them.
    assert server.state.engine.token_lengths(LINES) == engine.token_lengths(LINES)


def wait_for(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(POLL_S / 2)


def write_version(export_dir: str, version: int, fill) -> None:
    """A version written as t2t-exporter writes it: filled under a hidden name, renamed."""
    tmp = os.path.join(export_dir, f".tmp-export-{os.getpid()}@host@x")
    fill(tmp)
    os.rename(tmp, os.path.join(export_dir, str(version)))


def test_watch_switches_to_a_newer_version_and_keeps_it_if_the_next_fails(
        server, export_dir, caplog):
    write_version(export_dir, 3, lambda tmp: shutil.copytree(os.path.join(export_dir, "1"), tmp))
    wait_for(lambda: server.state.engine.version == 3)
    assert_answers(server, os.path.join(export_dir, "3"), 3)

    def broken(tmp):
        os.makedirs(tmp)
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(b"not a SavedModel")
    with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
        write_version(export_dir, 4, broken)
        wait_for(lambda: any(r.levelno >= logging.ERROR for r in caplog.records))
        time.sleep(5 * POLL_S)  # more looks: not tried again
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1 and "\n" not in failures[0]
    assert failures[0].startswith(f"watch: version 4 of model '{MODEL_NAME}' failed to load "
                                  f"(T2TError: Cannot load the SavedModel {export_dir}/4: ")
    assert failures[0].endswith("; still serving version 3")
    assert_answers(server, os.path.join(export_dir, "3"), 3)


def test_the_program_loads_the_newest_version(export_dir, tmp_path):
    for version, copy in (("1", "2"), ("2", "10")):  # 10 > 2, numerically
        shutil.copytree(os.path.join(export_dir, version), tmp_path / copy)
    args = t2t_server.parse_args([f"--export_dir={tmp_path}", "--watch"])
    engine = t2t_server._loader(args, workers=1, opened=None)()  # pylint: disable=protected-access
    assert (engine.version, engine.path) == (10, os.path.join(tmp_path, "10"))


EXPORT_FIXED = ("cannot be used with --export_dir: an export's decode settings are fixed when "
                "t2t-exporter writes it")


@pytest.mark.parametrize("flags, message", [
    (["--export_dir=E", "--decode_hparams=beam_size=2"],
     f"--decode_hparams {EXPORT_FIXED} (see its export.json)"),
    (["--export_dir=E", "--checkpoint_average=2"],
     f"--checkpoint_average {EXPORT_FIXED}, from the checkpoints it averaged"),
    (["--export_dir=E", "--engine=ctranslate2"],
     "--engine=ctranslate2 cannot be used with --export_dir: serve t2t-exporter "
     "--format=ctranslate2's model with CTranslate2 itself, or --output_dir with "
     "--engine=ctranslate2"),
    (["--export_dir=E", "--checkpoint_path=E/ckpt-1"],
     "--checkpoint_path cannot be used with --export_dir: it serves the newest version"),
    (["--export_dir=E", "--output_dir=M"],
     "give exactly one of --output_dir (a model directory) and --export_dir (t2t-exporter's "
     "SavedModel versions)"),
    ([], "give exactly one of --output_dir (a model directory) and --export_dir (t2t-exporter's "
         "SavedModel versions)"),
    (["--output_dir=M", "--watch", "--checkpoint_path=M/ckpt-1"],
     "--watch follows the newest checkpoint; --checkpoint_path pins one: give one of them"),
    (["--output_dir=M", "--watch", "--watch_interval_s=0"], "--watch_interval_s must be > 0, got 0"),
])
def test_flag_errors_are_one_line(flags, message, capsys):
    with pytest.raises(SystemExit) as exited:
        t2t_server.main(flags)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"t2t-server: error: {message}"


def test_an_export_dir_without_a_version_is_one_line(tmp_path, capsys):
    (tmp_path / "1").mkdir()  # a version directory without its saved_model.pb
    assert t2t_server.main([f"--export_dir={tmp_path}"]) == 1
    assert t2t_server.main([f"--export_dir={tmp_path}/missing"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"t2t-server: error: No SavedModel version in '{tmp_path}' (a subdirectory named by an "
        f"integer, holding saved_model.pb); write one with t2t-exporter "
        f"--export_dir={tmp_path}.",
        f"t2t-server: error: Export directory '{tmp_path}/missing' does not exist."]
