"""A rerun of the same t2t-datagen command after a raw file changed: the change reaches
the shards. Datagen records each raw file's size and SHA-256 per split (and for the
vocabulary it learned); a split whose files changed is written again with a one-line
note, a vocabulary learned from them is learned again (so every split is encoded
again), a given one is kept; data of an older t2t-datagen (no record) is reused as
it is, saying so, and the files are recorded from then on."""

import hashlib
import json
import os

from t2t_lite.bin import t2t_datagen
from t2t_lite.data import datagen
from t2t_lite.data.raw_files import changed_file
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.problems.translate_multi30k import TranslateEndeMulti30k

from test_datagen import read_split

PROBLEM = "translate_deen_files"
TRAIN = [(f"Satz {i} über den Hund", f"sentence {i} about the dog") for i in range(40)]
DEV = [(f"Prüfung {i}", f"check {i}") for i in range(4)]


def write(tmp_path, train, dev):
    (tmp_path / "train.tsv").write_text(tsv(train), encoding="utf-8")
    (tmp_path / "dev.tsv").write_text(tsv(dev), encoding="utf-8")


def tsv(pairs):
    return "".join(f"{s}\t{t}\n" for s, t in pairs)


def datagen_main(tmp_path, *flags):
    """t2t-datagen on train.tsv and dev.tsv in tmp_path; returns its exit code."""
    return t2t_datagen.main([
        f"--data_dir={tmp_path / 'data'}", "--source_lang=de", "--target_lang=en",
        f"--train_files={tmp_path / 'train.tsv'}", f"--dev_files={tmp_path / 'dev.tsv'}",
        "--vocab_size=300", *flags])


def run(tmp_path, capsys, *flags):
    """`datagen_main`, which must succeed; returns its log lines."""
    assert datagen_main(tmp_path, *flags) == 0
    return capsys.readouterr().out.splitlines()


def decoded(data_dir, split, problem=PROBLEM):
    """The (source, target) text of a split's examples, sorted (train shards are shuffled)."""
    return sorted(decoded_in_order(data_dir, split, problem))


def decoded_in_order(data_dir, split, problem=PROBLEM):
    """The (source, target) text of a split's examples in written order (dev and test
    keep the problem's)."""
    meta = datagen.read_metadata(str(data_dir), problem)
    vocab = SubwordVocab.from_file(str(data_dir / meta["vocab_file"]))
    examples = read_split(data_dir, problem, split, len(meta["splits"][split]["shards"]))
    return list(zip(vocab.decode_ids([i for i, _ in examples]),
                    vocab.decode_ids([t for _, t in examples])))


def mtimes(data_dir, *names):
    return [os.stat(data_dir / name).st_mtime_ns for name in names]


def test_an_edited_train_line_reaches_the_shards(tmp_path, capsys):
    write(tmp_path, TRAIN, DEV)
    run(tmp_path, capsys)
    data = tmp_path / "data"
    dev_text = mtimes(data, f"{PROBLEM}-dev.de", f"{PROBLEM}-dev.en")
    size = os.path.getsize(tmp_path / "train.tsv")
    edited = list(TRAIN)
    edited[7] = ("Satz 7 über den Wolf", "sentence 7 about the cat")  # same length
    write(tmp_path, edited, DEV)
    assert os.path.getsize(tmp_path / "train.tsv") == size
    log = run(tmp_path, capsys)
    assert decoded(data, "train") == sorted(edited)
    train_file = tmp_path / "train.tsv"
    # The vocabulary was learned from the file: learned again, so every split is
    # encoded again (dev with the same text: its text files are kept).
    assert log[1] == (f"  vocabulary: {train_file} changed since {PROBLEM}.sp300.model was "
                      "learned from it; learning it again")
    assert log[-4] == f"  train: {train_file} changed since the split was written; writing it again"
    assert [line.split(":")[0] for line in log[-3:]] == ["  train", "  dev", "  test"]
    assert not any("reusing" in line for line in log)
    assert decoded(data, "dev") == sorted(DEV)
    assert mtimes(data, f"{PROBLEM}-dev.de", f"{PROBLEM}-dev.en") == dev_text
    meta = datagen.read_metadata(str(data), PROBLEM)
    data_bytes = tsv(edited).encode("utf-8")
    record = [{"file": str(train_file), "bytes": len(data_bytes),
               "sha256": hashlib.sha256(data_bytes).hexdigest()}]
    assert meta["splits"]["train"]["raw_files"] == record
    assert meta["vocab_raw_files"] == record
    assert "raw_files" not in meta["splits"]["test"]  # no test files


def test_a_dev_set_held_out_of_edited_train_files_is_written_again(tmp_path, capsys):
    """No --dev_files: dev is drawn from the train file, so its shard and text files
    follow an edit of it ("Hund" -> "Huhn" on every line: whichever pairs are held out)."""
    (tmp_path / "train.tsv").write_text(tsv(TRAIN), encoding="utf-8")
    flags = [f"--data_dir={tmp_path / 'data'}", "--source_lang=de", "--target_lang=en",
             f"--train_files={tmp_path / 'train.tsv'}", "--vocab_size=300"]
    assert t2t_datagen.main(flags) == 0
    edited = [(s.replace("Hund", "Huhn"), t) for s, t in TRAIN]
    (tmp_path / "train.tsv").write_text(tsv(edited), encoding="utf-8")
    assert t2t_datagen.main(flags) == 0
    data = tmp_path / "data"
    dev = decoded(data, "dev")
    assert len(dev) == 2 and set(dev) < set(edited)  # held_out_size(40) == 2
    assert (data / f"{PROBLEM}-dev.de").read_text("utf-8").splitlines() == [
        s for s, _ in decoded_in_order(data, "dev")]
    assert set(decoded(data, "train")) == set(edited) - set(dev)
    log = capsys.readouterr().out.splitlines()
    assert f"  dev: {tmp_path / 'train.tsv'} changed since the split was written; writing it " \
        "again" in log


def test_a_changed_dev_file_writes_only_dev_again(tmp_path, capsys):
    write(tmp_path, TRAIN, DEV)
    first = run(tmp_path, capsys)
    data = tmp_path / "data"
    kept = [f"{PROBLEM}.sp300.model", f"{PROBLEM}-train-00000-of-00004",
            f"{PROBLEM}-test-00000-of-00001"]
    before = mtimes(data, *kept)
    new_dev = DEV[:2] + [("Prüfung X", "check X")] + DEV[3:]  # "2" -> "X": same length
    write(tmp_path, TRAIN, new_dev)
    log = run(tmp_path, capsys)
    train_line = next(line for line in first if line.startswith("  train: 40 examples"))
    assert log[2:] == [
        train_line.replace("train: ", "train: reusing ").rsplit(" [", 1)[0],
        f"  dev: {tmp_path / 'dev.tsv'} changed since the split was written; writing it again",
        f"  dev: wrote {PROBLEM}-dev.de", f"  dev: wrote {PROBLEM}-dev.en"] + log[6:]
    assert log[6].startswith("  dev: 4 examples in 1 shard(s)")
    assert log[7].startswith("  test: reusing 0 examples")
    assert decoded(data, "dev") == sorted(new_dev)
    assert (data / f"{PROBLEM}-dev.de").read_text("utf-8").splitlines()[2] == "Prüfung X"
    assert mtimes(data, *kept) == before


def test_data_of_an_older_datagen_is_reused_and_its_files_recorded(tmp_path, capsys):
    write(tmp_path, TRAIN, DEV)
    run(tmp_path, capsys)
    data = tmp_path / "data"
    path = datagen.metadata_path(str(data), PROBLEM)
    meta = datagen.read_metadata(str(data), PROBLEM)
    recorded = meta.pop("vocab_raw_files"), meta["splits"]["train"].pop("raw_files")
    meta["splits"]["dev"].pop("raw_files")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(meta, f)
    log = run(tmp_path, capsys)
    older = ("written by an older t2t-datagen, which recorded no size and SHA-256 of its raw "
             "files: reused as written; recorded now (delete its shards to write them from "
             "the current files)")
    assert [line for line in log if "older t2t-datagen," in line] == [f"  train: {older}",
                                                                       f"  dev: {older}"]
    assert [line.split()[1] for line in log[2:]] == ["reusing", "written", "reusing",
                                                     "written", "reusing"]
    meta = datagen.read_metadata(str(data), PROBLEM)
    assert (meta["vocab_raw_files"], meta["splits"]["train"]["raw_files"]) == recorded


def test_a_given_vocabulary_is_kept_when_train_changes(tmp_path, capsys):
    write(tmp_path, TRAIN, DEV)
    run(tmp_path, capsys)
    given = tmp_path / "given.model"
    given.write_bytes((tmp_path / "data" / f"{PROBLEM}.sp300.model").read_bytes())
    data = tmp_path / "data"
    for name in os.listdir(data):  # a new data directory encoded with the given vocabulary
        os.remove(data / name)
    run(tmp_path, capsys, f"--vocab_from={given}")
    edited = TRAIN[:-1] + [("Satz 39 über die Katze", "sentence 39 about the cat")]
    write(tmp_path, edited, DEV)
    log = run(tmp_path, capsys, f"--vocab_from={given}")
    assert log[1].startswith(f"  vocabulary: reusing {PROBLEM}.sp300.model (")
    assert log[1].endswith(f" pieces, the same as {given})")
    assert log[2] == (f"  train: {tmp_path / 'train.tsv'} changed since the split was written; "
                      "writing it again")
    assert decoded(data, "train") == sorted(edited)
    assert "vocab_raw_files" not in datagen.read_metadata(str(data), PROBLEM)


class TinyMulti30k(TranslateEndeMulti30k):
    vocab_size = 300
    num_train_shards = 2


def test_a_built_in_problems_edited_local_file_reaches_the_shards(tmp_path):
    """Multi30k reads train/val/test files in --tmp_dir: an edited val.de is noticed."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for stem, pairs in (("train", TRAIN), ("val", DEV), ("test_2016_flickr", DEV)):
        (raw / f"{stem}.en").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
        (raw / f"{stem}.de").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    data = tmp_path / "data"
    datagen.generate_data(TinyMulti30k(), str(data), str(raw), lambda line: None, threads=1)
    (raw / "val.de").write_text("Prüfung X\n" + "".join(s + "\n" for s, _ in DEV[1:]),
                                encoding="utf-8")
    log = []
    datagen.generate_data(TinyMulti30k(), str(data), str(raw), log.append, threads=1)
    assert log[3] == (f"  dev: {raw / 'val.de'} changed since the split was written; "
                      "writing it again")
    assert [line.split()[1] for line in log[1:]] == ["reusing", "reusing", str(raw / "val.de"),
                                                     "4", "reusing"]
    assert decoded(data, "dev", TinyMulti30k.name) == sorted(
        [("check 0", "Prüfung X")] + [(t, s) for s, t in DEV[1:]])


def test_raw_files_gone_keep_the_data_as_written(tmp_path, capsys):
    """t2t-datagen --data_dir=D alone after the files were deleted: nothing to compare,
    everything reused, the records kept for when the files are back."""
    write(tmp_path, TRAIN, DEV)
    run(tmp_path, capsys)
    data = tmp_path / "data"
    recorded = datagen.read_metadata(str(data), PROBLEM)
    os.remove(tmp_path / "train.tsv")
    os.remove(tmp_path / "dev.tsv")
    assert t2t_datagen.main([f"--data_dir={data}"]) == 0
    log = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in log[1:]] == ["reusing"] * 4
    assert datagen.read_metadata(str(data), PROBLEM) == recorded


def test_another_line_count_is_refused_naming_the_file(tmp_path, capsys):
    """The pair counts are part of the definition (the held-out dev set is drawn by
    them): a file edited to another length is a new problem, refused in one line."""
    write(tmp_path, TRAIN, DEV)
    run(tmp_path, capsys)
    write(tmp_path, TRAIN[:-1], DEV)
    assert datagen_main(tmp_path) == 1
    assert capsys.readouterr().err == (
        f"t2t-datagen: error: {tmp_path / 'data'} already holds problem '{PROBLEM}' defined "
        f"with other train ({tmp_path / 'train.tsv'}: 39 pairs, not the 40 recorded); use a "
        "new --data_dir or another --problem name.\n")


def test_changed_file_compares_content_in_order_and_a_damaged_record_differs():
    a = {"file": "/x/a", "bytes": 3, "sha256": "aa"}
    b = {"file": "/x/b", "bytes": 3, "sha256": "bb"}
    moved = [dict(a, file="/y/a"), dict(b, file="/y/b")]
    assert changed_file([a, b], moved) is None  # the same content elsewhere
    assert changed_file([a, b], [a, dict(b, sha256="cc")]) == "/x/b"  # same length, edited
    assert changed_file([a, b], [b, a]) == "/x/b"
    assert changed_file([a, b], [a]) == "/x/b"
    assert changed_file([a], [a, b]) == "/x/b"
    assert changed_file("damaged", [a]) == "/x/a"
    assert changed_file([{"bytes": "3"}], [a]) == "/x/a"
    assert changed_file([a, 7], [a]) == "a recorded file"
