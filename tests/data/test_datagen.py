"""Datagen: shard format, summary, empty-line policy, idempotence, kill/resume, CLI."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_datagen
from t2t_lite.data import datagen
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError
from t2t_lite.problems.translate_multi30k import TranslateEndeMulti30k
from t2t_lite.problems.translate_numbers import TranslateEndeNumbers
from t2t_lite.problems.translate_wmt import TranslateEnde, TranslateEnfr
from paths import SHARED_DATA

MULTI30K = SHARED_DATA / "multi30k"
needs_multi30k = pytest.mark.skipif(
    not MULTI30K.is_dir(), reason=f"Multi30k sample not found at {MULTI30K} (../shared/data)")


class SmallMulti30k(TranslateEndeMulti30k):
    vocab_size = 1000
    num_train_shards = 3


class SmallNumbers(TranslateEndeNumbers):
    vocab_size = 300

    def __init__(self):
        super().__init__(train_size=1500, dev_size=30, test_size=30)


def read_shards(data_dir, name, split, n):
    """The examples of each shard of a split, as (inputs, targets) id lists in file order."""
    out = []
    for path in datagen.shard_paths(str(data_dir), name, split, n):
        out.append([])
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            ex = tf.train.Example.FromString(record).features.feature
            out[-1].append((list(ex["inputs"].int64_list.value),
                            list(ex["targets"].int64_list.value)))
    return out


def read_split(data_dir, name, split, n):
    """All examples of a split in written order (example k is in shard k % n; dev
    and test keep that order, train shards are shuffled)."""
    shards = read_shards(data_dir, name, split, n)
    return [shards[k % n][k // n] for k in range(sum(map(len, shards)))]


def summary(log):
    """The log without progress lines (whose number depends on the machine's speed)."""
    return [line for line in log if "elapsed" not in line]


def dir_bytes(path):
    return {f: (Path(path) / f).read_bytes() for f in sorted(os.listdir(path))}


@pytest.fixture
def multi30k_slice(tmp_path):
    """The first 2,000 train and 200 val/test lines of Multi30k (keeps the &amp; of line 561)."""
    sizes = {"train": 2000, "val": 200, "test_2016_flickr": 200}
    raw = tmp_path / "raw"
    raw.mkdir()
    for stem, n in sizes.items():
        for lang in ("en", "de"):
            lines = (MULTI30K / f"{stem}.{lang}").read_bytes().split(b"\n")[:n]
            (raw / f"{stem}.{lang}").write_bytes(b"\n".join(lines) + b"\n")
    return raw


@needs_multi30k
def test_multi30k_slice_shards_and_summary(multi30k_slice, tmp_path):
    data_dir, log = tmp_path / "data", []
    meta = datagen.generate_data(SmallMulti30k(), str(data_dir), str(multi30k_slice), log.append)
    name = "translate_ende_multi30k"
    assert sorted(os.listdir(data_dir)) == [
        f"{name}-dev-00000-of-00001", f"{name}-test-00000-of-00001",
        f"{name}-train-00000-of-00003", f"{name}-train-00001-of-00003",
        f"{name}-train-00002-of-00003", f"{name}.datagen.json",
        f"{name}.sp1000.model", f"{name}.sp1000.vocab"]
    assert {s: meta["splits"][s]["examples"] for s in meta["splits"]} == {
        "train": 2000, "dev": 200, "test": 200}
    assert (meta["vocab_file"], meta["vocab_size"], meta["pad_id"], meta["eos_id"]) == (
        f"{name}.sp1000.model", 1000, 0, 1)
    assert json.loads((data_dir / f"{name}.datagen.json").read_text()) == meta

    vocab = SubwordVocab.load(str(data_dir), SmallMulti30k())
    shards = read_shards(data_dir, name, "train", 3)
    examples = [example for shard in shards for example in shard]
    sources = (multi30k_slice / "train.en").read_text("utf-8").split("\n")[:2000]
    targets = (multi30k_slice / "train.de").read_text("utf-8").split("\n")[:2000]
    assert all(i[-1] == 1 and t[-1] == 1 and 0 not in i + t for i, t in examples)
    for k, shard in enumerate(shards):  # lines k, k + 3, ... of the corpus, shuffled
        pairs = list(zip(vocab.decode_ids([i for i, _ in shard]),
                         vocab.decode_ids([t for _, t in shard])))
        in_order = list(zip(sources[k::3], targets[k::3]))
        assert sorted(pairs) == sorted(in_order) and pairs != in_order
    stats = meta["splits"]["train"]
    assert stats["source_subwords"] == sum(len(i) for i, _ in examples)
    assert stats["target_subwords"] == sum(len(t) for _, t in examples)
    assert stats["dropped"] == {datagen.EMPTY_SIDE: 0}
    assert summary(log)[3].startswith(
        "  train: 2,000 examples in 3 shard(s); subwords incl. EOS: source ")


@needs_multi30k
def test_second_run_reuses_everything(multi30k_slice, tmp_path):
    data_dir = tmp_path / "data"
    datagen.generate_data(SmallMulti30k(), str(data_dir), str(multi30k_slice), lambda s: None)
    before = {f: os.stat(data_dir / f).st_mtime_ns for f in os.listdir(data_dir)
              if not f.endswith(".json")}
    log = []
    datagen.generate_data(SmallMulti30k(), str(data_dir), str(multi30k_slice), log.append)
    assert "vocabulary: reusing translate_ende_multi30k.sp1000.model (1000 pieces)" in log[1]
    assert [line.split(":")[1].split()[0] for line in log[2:]] == ["reusing"] * 3
    assert {f: os.stat(data_dir / f).st_mtime_ns for f in before} == before


def test_empty_lines_policy(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    words = [f"line {i} of the text" for i in range(300)]
    train_en = words[:]
    train_en[3], train_en[10] = "", "   "
    train_de = words[:]
    train_de[20] = ""
    for stem, en, de in [("train", train_en, train_de), ("val", ["", "x"], ["y", ""]),
                         ("test_2016_flickr", ["a"], ["b"])]:
        (raw / f"{stem}.en").write_text("\n".join(en) + "\n", "utf-8")
        (raw / f"{stem}.de").write_text("\n".join(de) + "\n", "utf-8")

    class Tiny(TranslateEndeMulti30k):
        vocab_size = 280

    log = []
    meta = datagen.generate_data(Tiny(), str(tmp_path / "d"), str(raw), log.append)
    assert meta["splits"]["train"]["examples"] == 297
    assert meta["splits"]["train"]["dropped"] == {datagen.EMPTY_SIDE: 3}
    log = summary(log)
    assert "dropped 3 (empty source or target: 3)" in log[3]
    assert (meta["splits"]["dev"]["examples"], meta["splits"]["dev"]["kept_with_empty_side"]) == (2, 2)
    assert "kept 2 with an empty side" in log[4]


def test_line_count_mismatch_leaves_nothing_behind(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    text = "".join(f"line {i} of the text\n" for i in range(200))
    (raw / "train.en").write_text(text, "utf-8")
    (raw / "train.de").write_text(text, "utf-8")
    (raw / "val.en").write_text("a\nb\nc\n", "utf-8")
    (raw / "val.de").write_text("a\nb\n", "utf-8")

    class Tiny(TranslateEndeMulti30k):
        vocab_size = 280

    data_dir = tmp_path / "d"
    with pytest.raises(T2TError, match=rf"{raw}/val\.en has 3 lines but {raw}/val\.de has 2\."):
        datagen.generate_data(Tiny(), str(data_dir), str(raw), lambda s: None)
    left = sorted(os.listdir(data_dir))
    assert not [f for f in left if f.startswith(".") or "-dev-" in f]
    assert "translate_ende_multi30k-train-00003-of-00004" in left  # train was complete


@pytest.mark.skipif(not (SHARED_DATA / "europarl_v7_fr_en_head").is_dir(),
                    reason=f"Europarl sample not found in {SHARED_DATA} (../shared/data)")
def test_enfr_local_files_drop_europarl_empty_lines(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for f in (SHARED_DATA / "europarl_v7_fr_en_head").iterdir():
        os.symlink(f, raw / f.name)  # train: europarl-v7.fr-en.head3000.{en,fr}
    for stem in ("newstest2013.en-fr", "newstest2014-full.en-fr"):
        for lang in ("en", "fr"):
            os.symlink(SHARED_DATA / "wmt14" / f"{stem}.{lang}", raw / f"{stem}.{lang}")

    class SmallEnfr(TranslateEnfr):
        vocab_size = 4000
        num_train_shards = 2

    meta = datagen.generate_data(SmallEnfr(), str(tmp_path / "d"), str(raw), lambda s: None)
    assert {s: v["examples"] for s, v in meta["splits"].items()} == {
        "train": 2994, "dev": 3000, "test": 3003}
    assert meta["splits"]["train"]["dropped"] == {datagen.EMPTY_SIDE: 6}


def test_wmt_problem_through_tfds_mock(tmp_path):
    import tensorflow_datasets as tfds
    rows = {"train": [(f"house number {i}", f"Hausnummer {i}") for i in range(200)],
            "validation": [("house", "Haus")], "test": [("number 7", "Nummer 7")]}

    def as_dataset(self, split, **kwargs):
        del self, kwargs
        pairs = rows[str(split)]
        return tf.data.Dataset.from_tensor_slices(
            {"en": [p[0] for p in pairs], "de": [p[1] for p in pairs]})

    class TinyEnde(TranslateEnde):
        vocab_size = 290
        num_train_shards = 2

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        meta = datagen.generate_data(TinyEnde(), str(tmp_path / "d"), None, lambda s: None)
    assert {s: v["examples"] for s, v in meta["splits"].items()} == {
        "train": 200, "dev": 1, "test": 1}
    vocab = SubwordVocab.load(str(tmp_path / "d"), TinyEnde())
    test = read_split(tmp_path / "d", "translate_ende", "test", 1)
    assert vocab.decode_ids([test[0][0], test[0][1]]) == ["number 7", "Nummer 7"]


_KILLED_RUN = """
import os, signal, sys
from t2t_lite.data import datagen, encoding, split_writer
from t2t_lite.problems.translate_numbers import TranslateEndeNumbers

class SmallNumbers(TranslateEndeNumbers):
    vocab_size = 300
    def __init__(self):
        super().__init__(train_size=1500, dev_size=30, test_size=30)

split_writer.CHUNK_PAIRS = 200
original, calls = encoding.encode_batch, [0]
def dying_batch(vocab, pairs):
    calls[0] += 1
    if calls[0] == 4:  # part-way through the train split: 3 chunks of 200 pairs written
        os.kill(os.getpid(), signal.SIGKILL)
    return original(vocab, pairs)
encoding.encode_batch = dying_batch
datagen.generate_data(SmallNumbers(), sys.argv[1], threads=1)
"""


def test_killed_run_then_rerun_equals_uninterrupted_run(tmp_path):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", _KILLED_RUN, str(killed)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    state = ".partial.translate_ende_numbers-train"
    assert sorted(os.listdir(killed)) == [
        f"{state}.chunk-0000{i}" for i in range(3)] + [
        f"{state}.json", "translate_ende_numbers.datagen.json",
        "translate_ende_numbers.sp300.model", "translate_ende_numbers.sp300.vocab"]
    log = []
    datagen.generate_data(SmallNumbers(), str(killed), None, log.append)
    assert log[2] == "  train: resuming after 3 chunk(s) (600 pairs) an interrupted run encoded"
    datagen.generate_data(SmallNumbers(), str(clean), None, lambda s: None)  # 1 chunk
    assert dir_bytes(killed) == dir_bytes(clean)
    assert len(dir_bytes(clean)) == 9


@needs_multi30k
def test_cli_full_multi30k_as_written(tmp_path, capfd):
    data_dir = tmp_path / "data"
    rc = t2t_datagen.main(["--problem=translate_ende_multi30k", f"--tmp_dir={MULTI30K}",
                           f"--data_dir={data_dir}"])
    out, err = capfd.readouterr()
    assert rc == 0 and err == ""
    lines = summary(out.splitlines())
    assert lines[2].startswith("  vocabulary: learned translate_ende_multi30k.sp8000.model "
                               "(8000 pieces) from 58,000 sentences")
    assert [line.split(";")[0] for line in lines[3:]] == [
        "  train: 29,000 examples in 4 shard(s)", "  dev: 1,014 examples in 1 shard(s)",
        "  test: 1,000 examples in 1 shard(s)"]


def test_cli_errors_are_one_line(tmp_path, capfd):
    rc = t2t_datagen.main(["--problem=translate_ened", f"--data_dir={tmp_path}"])
    out, err = capfd.readouterr()
    assert rc == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("t2t-datagen: error: Unknown problem "
                                                   "'translate_ened'. Did you mean 'translate_ende'")
    with pytest.raises(SystemExit) as e:
        t2t_datagen.main(["--help"])
    assert e.value.code == 0
    assert "--tmp_dir" in capfd.readouterr().out
