"""Damaged shards are refused with one line naming the file."""

import json
import os
import struct

import pytest

from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.data import datagen, integrity

PROBLEM = "translate_ende_numbers"
TRAIN = [f"--problem={PROBLEM}", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64", "--train_steps=1", "--eval_every=0",
         "--eval_bleu_sentences=0", "--log_every=1"]


@pytest.fixture
def clean_data(numbers_data):
    """The suite's shared numbers data (read only)."""
    return numbers_data


@pytest.fixture
def data(numbers_data_copy):
    """A private copy of it, to damage."""
    return numbers_data_copy


def shard(data_dir, split, index=0):
    with open(os.path.join(data_dir, f"{PROBLEM}.datagen.json")) as f:
        return os.path.join(data_dir, json.load(f)["splits"][split]["shards"][index])


def one_line_error(capfd, prog):
    err = capfd.readouterr().err.strip()
    assert err.startswith(f"{prog}: error: "), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_datagen_records_sizes_and_checksums(clean_data):
    meta = datagen.read_metadata(clean_data, PROBLEM)
    for split in ("train", "dev", "test"):
        s = meta["splits"][split]
        paths = [os.path.join(clean_data, name) for name in s["shards"]]
        assert s["shard_bytes"] == [os.path.getsize(p) for p in paths]
        assert s["shard_sha256"] == [integrity.file_sha256(p) for p in paths]
        assert all(len(h) == 64 for h in s["shard_sha256"])


def test_truncated_or_missing_shard_stops_the_trainer_and_datagen_rewrites_it(
        data, tmp_path, capfd):
    path = shard(data, "train", 1)
    original = open(path, "rb").read()
    with open(path, "r+b") as f:
        f.truncate(5000)
    argv = [*TRAIN, f"--data_dir={data}", f"--output_dir={tmp_path / 'm'}"]
    assert t2t_trainer.main(argv) == 1
    err = one_line_error(capfd, "t2t-trainer")
    assert f"{path} is truncated (5,000 bytes; t2t-datagen wrote {len(original):,})" in err
    assert "re-run t2t-datagen" in err
    os.remove(path)
    assert t2t_trainer.main(argv) == 1
    assert f"{path} is missing" in one_line_error(capfd, "t2t-trainer")
    # Re-running datagen writes the damaged split again (the same bytes: it is seeded).
    assert t2t_datagen.main([f"--problem={PROBLEM}", f"--data_dir={data}"]) == 0
    assert "train: " in capfd.readouterr().out
    assert open(path, "rb").read() == original
    assert t2t_datagen.main([f"--problem={PROBLEM}", f"--data_dir={data}", "--verify"]) == 0


def test_a_flipped_byte_is_found_by_verify_and_named_when_training_reads_it(
        data, tmp_path, capfd):
    path = shard(data, "dev")
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) // 2] ^= 0xFF  # same size: only the checksum sees it
    open(path, "wb").write(bytes(raw))
    assert t2t_datagen.main([f"--problem={PROBLEM}", f"--data_dir={data}", "--verify"]) == 1
    err = one_line_error(capfd, "t2t-datagen")
    assert f"{path} is corrupt" in err
    # The size check passes; the final dev evaluation reads the corrupt record.
    assert t2t_trainer.main([*TRAIN, f"--data_dir={data}",
                             f"--output_dir={tmp_path / 'm'}"]) == 1
    err = one_line_error(capfd, "t2t-trainer")
    assert f"{path} is corrupt" in err and "corrupted record at" in err


def last_record_start(path: str) -> int:
    """The byte offset of a TFRecord file's last record (each record: an 8-byte
    little-endian length, a 4-byte CRC, the data, a 4-byte CRC)."""
    raw = open(path, "rb").read()
    offset, starts = 0, []
    while offset < len(raw):
        starts.append(offset)
        (length,) = struct.unpack("<Q", raw[offset:offset + 8])
        offset += 8 + 4 + length + 4
    assert offset == len(raw) and len(starts) > 1
    return starts[-1]


@pytest.mark.parametrize("damage", ["last_record_removed", "cut_inside_a_record"])
def test_upgrading_older_metadata_records_only_shards_that_read_back_whole(data, capfd, damage):
    """Metadata from before sizes were recorded: datagen reads every record back before
    recording checksums, and writes a damaged split again instead of blessing it."""
    meta_path = os.path.join(data, f"{PROBLEM}.datagen.json")
    with open(meta_path) as f:
        meta = json.load(f)
    for split_meta in meta["splits"].values():  # as an older t2t-datagen wrote it
        del split_meta["shard_bytes"], split_meta["shard_sha256"]
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    examples = meta["splits"]["dev"]["examples"]
    path = shard(data, "dev")
    original = open(path, "rb").read()
    cut = last_record_start(path) if damage == "last_record_removed" else len(original) - 7
    with open(path, "r+b") as f:
        f.truncate(cut)
    assert t2t_datagen.main([f"--problem={PROBLEM}", f"--data_dir={data}"]) == 0
    out = capfd.readouterr().out
    found = f"{examples - 1:,} examples" if damage == "last_record_removed" else "unreadable records"
    assert (f"dev: the existing shards hold {found}, not the {examples:,} t2t-datagen wrote; "
            "writing the split again") in out, out
    assert "train: recorded the sizes and checksums of the existing shards" in out
    assert open(path, "rb").read() == original  # written again (datagen is seeded)
    assert t2t_datagen.main([f"--problem={PROBLEM}", f"--data_dir={data}", "--verify"]) == 0
