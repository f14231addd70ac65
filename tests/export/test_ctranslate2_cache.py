"""The CTranslate2 conversion cache (--engine=ctranslate2): converted once, reused
while its key holds, converted again when a checkpoint, the average or the
quantization changes, kept in the user's cache directory when the model
directory is not writable, never left half-written, and bounded: a model keeps
its most recently used entries (and any used within the last minute), deleted
whole, never under a reader that has loaded them."""

import hashlib
import json
import os
import shutil
import socket
import time

import pytest

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")

from t2t_lite.errors import T2TError  # noqa: E402
from t2t_lite.export import ctranslate2_cache, ctranslate2_export  # noqa: E402
from t2t_lite.export.ctranslate2_client import CT2Translator, read_export_info  # noqa: E402
from t2t_lite.model_dir import ModelDir  # noqa: E402

from model_dirs import make_model_dir  # noqa: E402


@pytest.fixture
def model_path(tmp_path):
    return make_model_dir(str(tmp_path / "model"), steps=(1, 3))


def convert(path: str, **kwargs):
    """`cached_conversion` of the model directory `path`, opened (as t2t-server loads it)."""
    return ctranslate2_cache.cached_conversion(ModelDir.open(path), **kwargs)


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
    path, used = convert(model_path)
    assert used == [os.path.join(model_path, "ckpt-3")]
    assert os.path.dirname(path) == os.path.join(model_path, "ctranslate2_cache")
    assert os.path.basename(path).startswith("ckpt-3-avg1-float32-")
    assert {"model.bin", "config.json", "sentencepiece.model"} <= set(os.listdir(path))
    assert read_export_info(path)["checkpoints"] == used
    model_bin = os.path.join(path, "model.bin")
    mtime = os.stat(model_bin).st_mtime_ns
    again, _ = convert(model_path)
    assert again == path and len(conversions) == 1 and os.stat(model_bin).st_mtime_ns == mtime
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]  # no temporary left


def test_a_changed_key_converts_again(model_path, conversions):
    first, _ = convert(model_path)
    older, used = convert(model_path, checkpoint_path=os.path.join(model_path, "ckpt-1"))
    averaged, averaged_used = convert(model_path, checkpoint_average=2)
    int8, _ = convert(model_path, quantization="int8")
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
    rewritten, _ = convert(model_path)
    assert rewritten != first and len(conversions) == 5
    assert os.path.isdir(first)  # used within IN_USE_S: another process may be loading it


def test_a_read_only_model_directory_uses_the_user_cache(model_path, tmp_path, monkeypatch,
                                                          conversions):
    # Tests run as root, where chmod does not stop writes; the cache asks os.access.
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if os.path.abspath(path) ==
                        os.path.abspath(model_path) else real_access(path, mode))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, _ = convert(model_path)
    own = f"model-{hashlib.sha256(os.path.abspath(model_path).encode()).hexdigest()[:12]}"
    assert os.path.dirname(path) == str(tmp_path / "xdg" / "t2t-lite" / "ctranslate2" / own)
    assert not os.path.exists(os.path.join(model_path, "ctranslate2_cache"))
    assert convert(model_path)[0] == path and len(conversions) == 1

    # No XDG_CACHE_HOME: ~/.cache. The key holds the model's path there: another
    # copy of the same directory gets its own entry.
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home, _ = convert(model_path)
    assert os.path.dirname(home) == str(tmp_path / "home" / ".cache" / "t2t-lite" / "ctranslate2"
                                        / own)
    assert os.path.basename(home) == os.path.basename(path)
    beside_key = ctranslate2_cache.conversion_key(
        ModelDir.open(model_path), [os.path.join(model_path, "ckpt-3")], 1, "float32")
    assert beside_key != os.path.basename(path)


def test_a_failed_conversion_leaves_nothing(model_path, monkeypatch):
    def fails(model_dir, export_dir, *args):
        os.makedirs(os.path.join(export_dir, "1"))
        open(os.path.join(export_dir, "1", "model.bin"), "w").close()  # half a model
        raise T2TError("disk full")

    monkeypatch.setattr(ctranslate2_export, "export_ctranslate2", fails)
    with pytest.raises(T2TError, match="disk full"):
        convert(model_path)
    assert os.listdir(os.path.join(model_path, "ctranslate2_cache")) == []
    monkeypatch.undo()
    path, _ = convert(model_path)
    assert os.path.getsize(os.path.join(path, "model.bin")) > 1000


def test_bad_input_is_one_line(model_path, tmp_path):
    with pytest.raises(T2TError, match=r"^Unknown --quantization 'int4'; choose from float32"):
        convert(model_path, quantization="int4")
    with pytest.raises(T2TError, match="does not exist"):
        convert(str(tmp_path / "nothing"))
    with pytest.raises(T2TError, match="--checkpoint_average must be >= 1"):
        convert(model_path, checkpoint_average=0)
    assert not os.path.exists(os.path.join(model_path, "ctranslate2_cache"))


def test_a_constrained_search_is_refused_even_when_cached(model_path, monkeypatch):
    path, _ = convert(model_path, tree_constraint=False)

    class Constrained:
        name = "parsing_like"

        def search_constraint(self, vocab):
            return object()

    monkeypatch.setattr(ModelDir, "problem", lambda model_dir: Constrained())
    with pytest.raises(T2TError, match="parsing_like constrains its search"):
        convert(model_path)
    assert convert(model_path, tree_constraint=False)[0] == path


# -- The bound: a watching server's switches ------------------------------------------

@pytest.fixture(scope="module")
def five_steps(tmp_path_factory):
    """A model directory with ckpt-1 .. ckpt-5. Read only."""
    return make_model_dir(str(tmp_path_factory.mktemp("five_steps") / "model"),
                          steps=(1, 2, 3, 4, 5))


@pytest.fixture
def watched(five_steps, tmp_path):
    """A private copy of `five_steps` whose cache a test fills."""
    path = str(tmp_path / "model")
    shutil.copytree(five_steps, path)
    return path


def switch(model_dir, step, **kwargs):
    """What a watching server's load of checkpoint `step` asks of the cache."""
    return convert(model_dir, checkpoint_path=os.path.join(model_dir, f"ckpt-{step}"),
                   **kwargs)[0]


def age(root, seconds=120):
    """Moves every entry's last-use stamp back `seconds` (their order kept): the time a
    trainer takes between two checkpoints, more than the cache's IN_USE_S (60)."""
    for name in os.listdir(root):
        path = os.path.join(root, name)
        info = os.stat(path)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - int(seconds * 1e9)))


def listing(root):
    """Every name in the cache directory, an entry's without its hash."""
    return sorted(n if n.startswith(".") else n.rsplit("-", 1)[0] for n in os.listdir(root))


def entries_of(*steps, average=1):
    return sorted(f"ckpt-{s}-avg{average}-float32" for s in steps)


def test_switches_leave_the_most_recently_used_entries(watched, conversions, monkeypatch):
    removed = []  # the directories removed: only renamed-aside entries and temporaries
    real_rmtree = shutil.rmtree
    monkeypatch.setattr(shutil, "rmtree", lambda path, **kwargs: (
        removed.append(os.path.basename(path).split("-")[0]), real_rmtree(path, **kwargs)))
    root = os.path.join(watched, "ctranslate2_cache")
    for step in (1, 2, 3, 4, 5):
        switch(watched, step)
        assert listing(root) == entries_of(*range(max(1, step - 2), step + 1)), step
        age(root)
        if step == 1:  # a process killed while it deleted an entry left this
            os.makedirs(os.path.join(root, f".deleting-999999999@{socket.gethostname()}@x",
                                     "leftover"))
    assert removed.count(".deleting") == 2 + 1 and removed.count(".tmp") == 5

    # Used, not converted: ckpt-3's stamp is renewed, so ckpt-4 goes when ckpt-2 is back.
    switch(watched, 3)
    age(root)
    switch(watched, 2)
    assert listing(root) == entries_of(2, 3, 5)
    assert len(conversions) == 6
    assert removed.count(".deleting") == 3 + 1

    # The entry just made stays, whatever the bound.
    age(root)
    current = os.path.basename(switch(watched, 5, checkpoint_average=2))
    assert listing(root) == entries_of(2, 3) + entries_of(5, average=2)
    evicted = ctranslate2_cache.evict(root, current, keep=0, in_use_s=0)
    assert [n.rsplit("-", 1)[0] for n in evicted] == [  # the most recently used first
        "ckpt-2-avg1-float32", "ckpt-3-avg1-float32"]
    assert os.listdir(root) == [current]


def test_entries_used_within_a_minute_stay(tmp_path):
    """A process handed an entry may still be loading it: nothing used in the last
    IN_USE_S seconds is deleted, even beyond the bound."""
    root = tmp_path / "cache"
    now = time.time_ns()
    for seconds_ago, name in ((1, "e"), (2, "d"), (3, "c"), (4, "b"), (5, "a"), (61, "old")):
        (root / name).mkdir(parents=True)
        (root / name / "model.bin").write_bytes(b"weights")
        os.utime(root / name, ns=(now, now - seconds_ago * 10**9))
    assert ctranslate2_cache.evict(str(root), "e") == ["old"]
    assert sorted(os.listdir(root)) == ["a", "b", "c", "d", "e"]
    # Once that minute is past, the bound holds.
    assert ctranslate2_cache.evict(str(root), "e", in_use_s=0) == ["b", "a"]
    assert sorted(os.listdir(root)) == ["c", "d", "e"]


def test_an_entry_stamped_while_it_is_deleted_is_put_back(tmp_path, monkeypatch):
    """A process handed the entry between evict's last look at its stamp and the
    rename: the entry is renamed back, whole."""
    from t2t_lite import atomic

    root = tmp_path / "cache"
    for seconds_ago, name in ((1, "new"), (200, "b"), (300, "c"), (400, "old")):
        (root / name).mkdir(parents=True)
        (root / name / "model.bin").write_bytes(b"weights")
        os.utime(root / name, ns=(0, time.time_ns() - seconds_ago * 10**9))
    real = atomic.make_temp_dir

    def reader_comes(parent, prefix):  # runs between the stamp's check and the rename
        ctranslate2_cache.touch(str(root / "old"))
        return real(parent, prefix)

    monkeypatch.setattr(atomic, "make_temp_dir", reader_comes)
    assert ctranslate2_cache.evict(str(root), "new") == []  # "old" only was beyond 3
    assert sorted(os.listdir(root)) == ["b", "c", "new", "old"]
    assert (root / "old" / "model.bin").read_bytes() == b"weights"


def test_a_loaded_entry_translates_after_its_deletion(watched):
    """CTranslate2 (4.8.5) and SentencePiece read the files when the translator is made:
    a server still serving a deleted entry keeps translating."""
    root = os.path.join(watched, "ctranslate2_cache")
    first = switch(watched, 1)
    translator = CT2Translator(first, threads=1, beam_size=1)
    lines = ["one two three", "forty thousand and five"]
    before = translator.translate(lines, extra_length=4)
    for step in (2, 3, 4):
        age(root)
        switch(watched, step)
    assert not os.path.exists(first) and listing(root) == entries_of(2, 3, 4)
    assert translator.translate(lines, extra_length=4) == before and all(before)


def test_the_user_cache_bounds_each_model_apart(watched, tmp_path, monkeypatch):
    other = str(tmp_path / "other")
    shutil.copytree(watched, other)
    real_access = os.access
    read_only = {os.path.abspath(watched), os.path.abspath(other)}
    monkeypatch.setattr(os, "access", lambda path, mode: False if os.path.abspath(path) in
                        read_only else real_access(path, mode))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    kept = os.path.dirname(switch(watched, 1))
    root = os.path.dirname(switch(other, 1))
    for step in (2, 3, 4):
        age(root)
        switch(other, step)
    assert listing(root) == entries_of(2, 3, 4)
    assert listing(kept) == entries_of(1)  # the oldest of all, but another model's
    digest = {p: hashlib.sha256(os.path.abspath(p).encode()).hexdigest()[:12]
              for p in (watched, other)}
    assert sorted(os.listdir(tmp_path / "xdg" / "t2t-lite" / "ctranslate2")) == [
        f"model-{digest[watched]}", f"other-{digest[other]}"]
