"""Datagen resumes mid-split, encodes on every core, shows progress."""

import os
import threading

import pytest

from t2t_lite.data import datagen, encoding, split_writer
from t2t_lite.data.progress import Progress, heartbeat, keep_alive
from test_datagen import dir_bytes
from test_datagen_shuffle import CATS, DOGS, NAME, TwoCorpora, two_corpora  # noqa: F401

TRAIN = [f"{NAME}-train-0000{i}-of-00004" for i in range(4)]


class Interrupted(Exception):
    """Stands for a kill (the subprocess test in test_datagen.py sends a real one)."""


@pytest.fixture
def counting(monkeypatch):
    """Counts the pairs encoded and the raw train reads; `fail_at` batch raises."""
    seen = {"pairs": 0, "batches": 0, "fail_at": None, "train_reads": 0}
    original = encoding.encode_batch

    def encode_batch(vocab, pairs):
        seen["batches"] += 1
        if seen["batches"] == seen["fail_at"]:
            raise Interrupted()
        seen["pairs"] += len(pairs)
        return original(vocab, pairs)

    monkeypatch.setattr(encoding, "encode_batch", encode_batch)
    original_raw = TwoCorpora.raw_pairs

    def raw_pairs(self, split, tmp_dir):
        seen["train_reads"] += split == "train"
        return original_raw(self, split, tmp_dir)

    monkeypatch.setattr(TwoCorpora, "raw_pairs", raw_pairs)
    return seen


def test_killed_while_encoding_resumes_from_the_chunks_written(
        two_corpora, tmp_path, monkeypatch, counting):
    raw, clean = two_corpora
    monkeypatch.setattr(split_writer, "CHUNK_PAIRS", 500)  # 6 chunks of 2 batches
    monkeypatch.setattr(encoding, "BATCH", 250)
    counting["fail_at"] = 7  # the first batch of chunk 3
    with pytest.raises(Interrupted):
        datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), lambda s: None, threads=1)
    chunks = sorted(f for f in os.listdir(tmp_path) if ".chunk-" in f)
    assert chunks == [f".partial.{NAME}-train.chunk-0000{i}" for i in range(3)]

    counting.update(pairs=0, batches=0, fail_at=None)
    written, original_write = [], split_writer.write_atomically

    def write_atomically(path, data):
        written.append(os.path.basename(path))
        original_write(path, data)

    monkeypatch.setattr(split_writer, "write_atomically", write_atomically)
    log = []
    datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), log.append, threads=1)
    assert log[2] == "  train: resuming after 3 chunk(s) (1,500 pairs) an interrupted run encoded"
    assert counting["pairs"] == (CATS + DOGS - 1500) + 27 + 27  # the rest of train, dev, test
    assert [f for f in written if ".chunk-" in f] == [
        f".partial.{NAME}-train.chunk-0000{i}" for i in (3, 4, 5)] + [
        f".partial.{NAME}-{split}.chunk-00000" for split in ("dev", "test")]
    assert dir_bytes(tmp_path) == dir_bytes(clean)  # chunk files and state removed, too


def test_killed_while_writing_shards_keeps_the_shards_written(
        two_corpora, tmp_path, monkeypatch, counting):
    raw, clean = two_corpora
    original = split_writer.SplitWriter._shard_records
    gathered = []

    def shard_records(self, index):
        gathered.append(index)
        if index == 2 and len(gathered) == 3:  # shards 0 and 1 are written
            raise Interrupted()
        return original(self, index)

    monkeypatch.setattr(split_writer.SplitWriter, "_shard_records", shard_records)
    with pytest.raises(Interrupted):
        datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), lambda s: None)
    assert sorted(f for f in os.listdir(tmp_path) if "-train-" in f) == TRAIN[:2]
    before = {f: (os.stat(tmp_path / f).st_ino, os.stat(tmp_path / f).st_mtime_ns)
              for f in TRAIN[:2]}

    counting.update(pairs=0, train_reads=0)
    gathered.clear()
    log = []
    datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), log.append)
    assert log[2] == "  train: resuming after 2 of 4 shard(s) an interrupted run wrote"
    assert gathered[:2] == [2, 3]  # train's shards 0 and 1 were not gathered again
    assert counting["train_reads"] == 0 and counting["pairs"] == 27 + 27  # nor re-encoded
    assert {f: (os.stat(tmp_path / f).st_ino, os.stat(tmp_path / f).st_mtime_ns)
            for f in TRAIN[:2]} == before
    assert dir_bytes(tmp_path) == dir_bytes(clean)


def test_changed_raw_data_is_encoded_again(two_corpora, tmp_path, monkeypatch, counting):
    raw, _ = two_corpora
    monkeypatch.setattr(split_writer, "CHUNK_PAIRS", 500)
    counting["fail_at"] = 2  # chunk 0 written (one batch a chunk)
    changed = tmp_path / "changed"
    changed.mkdir()
    for f in os.listdir(raw):  # line 8 of train differs
        text = (raw / f).read_text("utf-8")
        (changed / f).write_text(text.replace("cat 7\n", "cat seven\n"), "utf-8")
    data = tmp_path / "data"
    with pytest.raises(Interrupted):
        datagen.generate_data(TwoCorpora(), str(data), str(changed), lambda s: None,
                              threads=1)
    expected = tmp_path / "expected"  # `raw` encoded in one go with the same vocabulary
    expected.mkdir()
    for f in os.listdir(data):
        if f.endswith((".model", ".vocab")):
            (expected / f).write_bytes((data / f).read_bytes())
    datagen.generate_data(TwoCorpora(), str(expected), str(raw), lambda s: None,
                          vocab_model=str(expected / f"{NAME}.sp300.model"))

    counting.update(fail_at=None, pairs=0)
    log = []
    # The same vocabulary given (one learned from files that changed is learned again).
    datagen.generate_data(TwoCorpora(), str(data), str(raw), log.append,
                          vocab_model=str(data / f"{NAME}.sp300.model"))
    assert log[2] == ("  train: the raw data differs from what an interrupted run encoded; "
                      "encoding the split again")
    assert counting["pairs"] == CATS + DOGS + 27 + 27
    assert dir_bytes(data) == dir_bytes(expected)


def test_shards_are_the_same_on_one_thread_and_on_four(two_corpora, tmp_path, monkeypatch):
    raw, clean = two_corpora
    monkeypatch.setattr(encoding, "BATCH", 100)  # 27 batches, several in flight
    for threads in (1, 4):
        out = tmp_path / str(threads)
        datagen.generate_data(TwoCorpora(), str(out), str(raw), lambda s: None,
                              threads=threads)
        assert dir_bytes(out) == dir_bytes(clean)


def test_records_have_the_bytes_of_protobufs_deterministic_serialization():
    import random
    import tensorflow as tf
    rng = random.Random(0)
    ids = [0, 1, 5, 127, 128, 300, 16383, 16384, 2 ** 21, 2 ** 31 - 1]
    rows = [[rng.choice(ids) for _ in range(rng.randint(0, 12))] for _ in range(300)]
    records = encoding.serialized_examples(tf.ragged.constant(rows, dtype=tf.int32),
                                           tf.ragged.constant(rows[::-1], dtype=tf.int32))
    assert records.numpy().tolist() == [
        tf.train.Example(features=tf.train.Features(feature={
            "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=source)),
            "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=target))}))
        .SerializeToString(deterministic=True) for source, target in zip(rows, rows[::-1])]


def test_progress_lines_every_ten_seconds():
    times = iter([0.0, 5.0, 10.0, 15.0, 21.0, 40.0])
    lines = []
    progress = Progress(lines.append, "  train: encoding", total=1000, clock=lambda: next(times))
    progress.update(0)            # t=5: too early
    progress.update(200, 2_500_000)  # t=10: 200 pairs in 10 s
    progress.update(300)          # t=15: 5 s after the last line
    progress.update(500, 7_000_000)  # t=21: 500 pairs in 21 s = 23.8/s, 500 left = 21 s
    assert lines == [
        "  train: encoding 200 of 1,000 pairs (20%)  20 pairs/s  2.5 MB written  "
        "elapsed 10s  ETA 40s",
        "  train: encoding 500 of 1,000 pairs (50%)  24 pairs/s  7.0 MB written  "
        "elapsed 21s  ETA 21s"]
    unknown = Progress(lines.append, "  vocabulary: reading the train pairs,",
                       clock=iter([0.0, 0.0, 12.0]).__next__)
    unknown.update(0)
    unknown.update(60_000)
    assert lines[-1] == ("  vocabulary: reading the train pairs, 60,000 pairs  "
                         "5,000 pairs/s  elapsed 12s")


def test_datagen_progress_through_log_with_a_fake_clock(two_corpora, tmp_path, monkeypatch):
    raw, _ = two_corpora
    monkeypatch.setattr(encoding, "BATCH", 1000)
    ticks = iter(range(0, 100_000, 11))  # 11 s a call: every update is a line
    log = []
    datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), log.append,
                          clock=lambda: float(next(ticks)))
    encoding_lines = [line for line in log if line.startswith("  train: encoding")]
    # The total comes from the vocabulary's pass over the train pairs.
    assert [line.split("  ")[1] for line in encoding_lines] == [
        "train: encoding 0 of 2,700 pairs (0%)", "train: encoding 1,000 of 2,700 pairs (37%)",
        "train: encoding 2,000 of 2,700 pairs (74%)",
        "train: encoding 2,700 of 2,700 pairs (100%)"]
    assert encoding_lines[-1].endswith("ETA 0s") and " MB written  elapsed " in encoding_lines[-1]
    shard_lines = [line for line in log if line.startswith("  train: writing shards")]
    assert [line.split("  ")[1] for line in shard_lines] == [
        f"train: writing shards {i} of 4 shards ({25 * i}%)" for i in range(1, 5)]
    assert log[1] == "  vocabulary: learning 300 pieces from 5,400 sentences " \
                     "(sampled from 2,700 train pairs)"
    assert log[2].startswith("  vocabulary: learned translate_ende_multi30k.sp300.model")


def test_heartbeat_says_the_elapsed_time_of_a_long_call():
    lines, two = [], threading.Event()

    def log(line):
        lines.append(line)
        if len(lines) == 2:
            two.set()

    with heartbeat(log, "  vocabulary: learning", every=0.01):
        assert two.wait(10)
    assert all(line.startswith("  vocabulary: learning: ") and line.endswith("s elapsed")
               for line in lines)
    # Stopped with the block: its thread has ended, so no line can follow.
    assert not [t for t in threading.enumerate() if t.name == "datagen-heartbeat"]


def test_keep_alive_fills_any_silence_and_names_the_last_step():
    lines, two = [], threading.Event()

    def log(line):
        lines.append(line)
        if sum("still working" in line for line in lines) == 2:
            two.set()

    with keep_alive(log, every=0.05) as logged:
        logged("  train: encoding 0 of 10 pairs (0%)")
        assert two.wait(10)
    assert lines[0] == "  train: encoding 0 of 10 pairs (0%)"
    assert all(line.startswith("  train: still working, ") and line.endswith("s elapsed")
               for line in lines[1:])
    assert not [t for t in threading.enumerate() if t.name == "datagen-keep-alive"]
