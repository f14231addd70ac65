"""Each program reads a model directory's metadata once (`t2t_lite.model_dir.ModelDir`).

A read is an `open()` of the file; `ModelDir.open` tries each metadata file once,
the optional ones (absent here) included, so every program start below shows
exactly one `open()` per file, and a t2t-server --watch reload one more. Before
the directory was opened into one value, one TensorFlow engine load opened
problem.json 4 times and a cold CTranslate2 engine load 12 times.
"""

import builtins
import collections
import contextlib
import io
import os

import pytest

from model_dirs import make_model_dir
from t2t_lite.model_dir import (HPARAMS_FILE, IMPORT_FILE, PROBLEM_FILE, TRAIN_MIX_FILE,
                                WARM_START_FILE, ModelDir)
from t2t_lite.usr_dir import USR_DIR_FILE

METADATA = (HPARAMS_FILE, PROBLEM_FILE, USR_DIR_FILE, IMPORT_FILE, TRAIN_MIX_FILE,
            WARM_START_FILE)
ONCE = {name: 1 for name in METADATA}
DECODE = "beam_size=2,alpha=0.6,extra_length=2"


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> str:
    """A small model directory (random weights, two checkpoints). Read only."""
    return make_model_dir(str(tmp_path_factory.mktemp("reads") / "model"), steps=(1, 2))


@contextlib.contextmanager
def opens_in(directory: str):
    """Counts the `open()` calls of each metadata file inside `directory` (absent
    files included: an attempt is a read)."""
    counts = collections.Counter()
    real_open = builtins.open
    directory = os.path.realpath(directory)

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            path = os.path.realpath(os.fspath(file))
            if os.path.dirname(path) == directory and os.path.basename(path) in METADATA:
                counts[os.path.basename(path)] += 1
        return real_open(file, *args, **kwargs)

    builtins.open = counting_open
    try:
        yield counts
    finally:
        builtins.open = real_open


def test_the_counter_sees_a_second_read(model_path):
    """The counter itself: two openings are two reads of each file."""
    with opens_in(model_path) as counts:
        ModelDir.open(model_path)
        ModelDir.open(model_path)
    assert counts == {name: 2 for name in METADATA}


def test_tensorflow_engine_and_each_watch_reload_read_once(model_path):
    """t2t-server's loader: the first engine is built on the reading done at start,
    each --watch reload reads the directory once more."""
    from t2t_lite.bin import t2t_server
    args = t2t_server.parse_args([f"--output_dir={model_path}", f"--decode_hparams={DECODE}"])
    with opens_in(model_path) as counts:
        load = t2t_server._loader(args, 1, ModelDir.open(model_path))
        engine = load()
        engine.translate(["twenty one"])
    assert counts == ONCE
    with opens_in(model_path) as counts:
        load()
    assert counts == ONCE


def test_ctranslate2_engine_reads_once_cold_and_warm(model_path, tmp_path):
    """A cold load converts the model (and keys the cache); a warm one finds it."""
    from t2t_lite.serve.ctranslate2_engine import CT2Engine
    with opens_in(model_path) as counts:
        CT2Engine.load(ModelDir.open(model_path), DECODE)
    assert counts == ONCE
    with opens_in(model_path) as counts:
        CT2Engine.load(ModelDir.open(model_path), DECODE)
    assert counts == ONCE


def test_decoder_reads_each_directory_of_an_ensemble_once(model_path, tmp_path):
    from t2t_lite.bin import t2t_decoder
    source = tmp_path / "in.txt"
    source.write_text("twenty one\n", encoding="utf-8")
    other = make_model_dir(str(tmp_path / "other"), steps=(3,))
    with opens_in(model_path) as counts, opens_in(other) as other_counts, \
            contextlib.redirect_stderr(io.StringIO()):
        assert t2t_decoder.main([f"--output_dir={model_path},{other}",
                                 f"--decode_from_file={source}",
                                 f"--decode_to_file={tmp_path / 'out.txt'}",
                                 f"--decode_hparams={DECODE}"]) == 0
    assert (counts, other_counts) == (ONCE, ONCE)


@pytest.mark.parametrize("kind", ["saved_model", "ctranslate2"])
def test_exporter_reads_once(model_path, tmp_path, kind):
    """Both formats; the provenance copies are the bytes read, not a second read."""
    from t2t_lite.bin import t2t_exporter
    with opens_in(model_path) as counts, contextlib.redirect_stdout(io.StringIO()):
        assert t2t_exporter.main([f"--output_dir={model_path}", f"--format={kind}",
                                  f"--export_dir={tmp_path / 'export'}"]) == 0
    assert counts == ONCE
    extra = "assets.extra" if kind == "saved_model" else "t2t_lite"
    for name in (HPARAMS_FILE, PROBLEM_FILE):
        with open(os.path.join(model_path, name), "rb") as f, \
                open(tmp_path / "export" / "1" / extra / name, "rb") as g:
            assert f.read() == g.read()


def test_averager_reads_once(model_path, tmp_path):
    from t2t_lite.bin import t2t_avg_checkpoints
    with opens_in(model_path) as counts, contextlib.redirect_stdout(io.StringIO()):
        assert t2t_avg_checkpoints.main([f"--output_dir={model_path}",
                                         f"--avg_dir={tmp_path / 'avg'}",
                                         "--num_last_checkpoints=2"]) == 0
    assert counts == ONCE


def test_a_damaged_file_is_refused_when_opened(tmp_path):
    """Every "Corrupt ..." error is raised by `ModelDir.open`, naming the file."""
    from t2t_lite.errors import T2TError
    path = make_model_dir(str(tmp_path / "model"))
    with open(os.path.join(path, PROBLEM_FILE), "rb") as f:
        problem = f.read()
    for name, text in ((TRAIN_MIX_FILE, '{"train_mix": 3}'), (WARM_START_FILE, "{"),
                       (USR_DIR_FILE, "[]"), (PROBLEM_FILE, '{"problem": "p"}')):
        with open(os.path.join(path, name), "w", encoding="utf-8") as f:
            f.write(text)
        with pytest.raises(T2TError, match=f"^Corrupt {path}/{name}"):
            ModelDir.open(path)
        os.remove(os.path.join(path, name))
    with open(os.path.join(path, PROBLEM_FILE), "wb") as f:
        f.write(problem)
    assert ModelDir.open(path).problem_name == "translate_ende_numbers"
