"""The CTranslate2 conversion cache (--engine=ctranslate2): converted once, reused
while its key holds, converted again when a checkpoint, the average or the
quantization changes, kept in the user's cache directory when the model
directory is not writable, and never left half-written."""

import json
import os

import pytest

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")

from t2t_lite.errors import T2TError  # noqa: E402
from t2t_lite.export import ctranslate2_cache, ctranslate2_export  # noqa: E402
from t2t_lite.export.ctranslate2_client import read_export_info  # noqa: E402

from model_dirs import make_model_dir  # noqa: E402


@pytest.fixture
def model_path(tmp_path):
    return make_model_dir(str(tmp_path / "model"), steps=(1, 3))


@pytest.fixture
def conversions(monkeypatch):
    """The arguments of every conversion the cache makes (the exporter still runs)."""
    calls = []
    real = ctranslate2_export.export_ctranslate2

    def counted(model_dir, export_dir, *args):
        calls.append(args)
        return real(model_dir, export_dir, *args)

    monkeypatch.setattr(ctranslate2_export, "export_ctranslate2", counted)
    return calls


def test_converted_once_then_reused(model_path, conversions):
    path, used = ctranslate2_cache.cached_conversion(model_path)
    assert used == [os.path.join(model_path, "ckpt-3")]
    assert os.path.dirname(path) == os.path.join(model_path, "ctranslate2_cache")
    assert os.path.basename(path).startswith("ckpt-3-avg1-float32-")
    assert {"model.bin", "config.json", "sentencepiece.model"} <= set(os.listdir(path))
    assert read_export_info(path)["checkpoints"] == used
    mtime = os.stat(path).st_mtime_ns
    again, _ = ctranslate2_cache.cached_conversion(model_path)
    assert again == path and len(conversions) == 1 and os.stat(path).st_mtime_ns == mtime
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # no temporary left


def test_a_changed_key_converts_again(model_path, conversions):
    first, _ = ctranslate2_cache.cached_conversion(model_path)
    older, used = ctranslate2_cache.cached_conversion(
        model_path, checkpoint_path=os.path.join(model_path, "ckpt-1"))
    averaged, averaged_used = ctranslate2_cache.cached_conversion(model_path,
                                                                  checkpoint_average=2)
    int8, _ = ctranslate2_cache.cached_conversion(model_path, quantization="int8")
    assert used == [os.path.join(model_path, "ckpt-1")]
    assert averaged_used == [os.path.join(model_path, f"ckpt-{s}") for s in (1, 3)]
    assert read_export_info(averaged)["checkpoints"] == averaged_used
    assert json.load(open(os.path.join(int8, "config.json")))  # a whole model
    assert read_export_info(int8)["quantization"] == "int8"
    assert len({first, older, averaged, int8}) == 4 and len(conversions) == 4

    # ckpt-3 rewritten in place (a retrained or re-averaged directory): a new key.
    data = [f for f in os.listdir(model_path) if f.startswith("ckpt-3.data-")][0]
    stat = os.stat(os.path.join(model_path, data))
    os.utime(os.path.join(model_path, data), ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    rewritten, _ = ctranslate2_cache.cached_conversion(model_path)
    assert rewritten != first and len(conversions) == 5
    assert os.path.isdir(first)  # old entries stay (another process may be reading one)


def test_a_read_only_model_directory_uses_the_user_cache(model_path, tmp_path, monkeypatch,
                                                          conversions):
    # Tests run as root, where chmod does not stop writes; the cache asks os.access.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if os.path.abspath(path) ==
                        os.path.abspath(model_path) else real_access(path, mode))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, _ = ctranslate2_cache.cached_conversion(model_path)
    assert os.path.dirname(path) == str(tmp_path / "xdg" / "t2t-lite" / "ctranslate2")
    assert not os.path.exists(os.path.join(model_path, "ctranslate2_cache"))
    assert ctranslate2_cache.cached_conversion(model_path)[0] == path and len(conversions) == 1

    # No XDG_CACHE_HOME: ~/.cache. The key holds the model's path there: another
    # copy of the same directory gets its own entry.
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home, _ = ctranslate2_cache.cached_conversion(model_path)
    assert os.path.dirname(home) == str(tmp_path / "home" / ".cache" / "t2t-lite" / "ctranslate2")
    assert os.path.basename(home) == os.path.basename(path)
    beside_key = ctranslate2_cache.conversion_key(
        model_path, [os.path.join(model_path, "ckpt-3")], 1, "float32")
    assert beside_key != os.path.basename(path)


def test_a_failed_conversion_leaves_nothing(model_path, monkeypatch):
    def fails(model_dir, export_dir, *args):
        os.makedirs(os.path.join(export_dir, "1"))
        open(os.path.join(export_dir, "1", "model.bin"), "w").close()  # half a model
        raise T2TError("disk full")

    monkeypatch.setattr(ctranslate2_export, "export_ctranslate2", fails)
    with pytest.raises(T2TError, match="disk full"):
        ctranslate2_cache.cached_conversion(model_path)
    assert os.listdir(os.path.join(model_path, "ctranslate2_cache")) == []
    monkeypatch.undo()
    path, _ = ctranslate2_cache.cached_conversion(model_path)
    assert os.path.getsize(os.path.join(path, "model.bin")) > 1000


def test_bad_input_is_one_line(model_path, tmp_path):
    with pytest.raises(T2TError, match=r"^Unknown --quantization 'int4'; choose from float32"):
        ctranslate2_cache.cached_conversion(model_path, quantization="int4")
    with pytest.raises(T2TError, match="does not exist"):
        ctranslate2_cache.cached_conversion(str(tmp_path / "nothing"))
    with pytest.raises(T2TError, match="--checkpoint_average must be >= 1"):
        ctranslate2_cache.cached_conversion(model_path, checkpoint_average=0)
    assert not os.path.exists(os.path.join(model_path, "ctranslate2_cache"))


def test_a_constrained_search_is_refused_even_when_cached(model_path, monkeypatch):
    from t2t_lite import model_dir as model_dir_lib

    path, _ = ctranslate2_cache.cached_conversion(model_path, tree_constraint=False)

    class Constrained:
        name = "parsing_like"

        def search_constraint(self, vocab):
            return object()

    monkeypatch.setattr(model_dir_lib, "problem_of", lambda model_dir: Constrained())
    with pytest.raises(T2TError, match="parsing_like constrains its search"):
        ctranslate2_cache.cached_conversion(model_path)
    assert ctranslate2_cache.cached_conversion(model_path, tree_constraint=False)[0] == path
