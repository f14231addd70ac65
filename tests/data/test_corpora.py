"""Datagen records the corpora of a train split, a range of shards each.

The fixture is a WMT-like --tmp_dir with two train file pairs, `aaa.en-de`
(600 "cat" pairs) and `bbb.en-de` (300 "dog" pairs), read in name order as
local WMT files are, and newstest2013/2014 for dev and test.
"""

import json
import random

import pytest

from t2t_lite.data import datagen, encoding, mixing
from t2t_lite.data.corpora import allocate_shards
from t2t_lite.data.problem import Problem
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.problems.translate_wmt import TranslateEnde
from test_datagen import dir_bytes, read_shards

NAME = "translate_ende"
CATS, DOGS = 600, 300
SEED = datagen.SHUFFLE_SEED


class TwoStems(TranslateEnde):
    vocab_size = 300
    num_train_shards = 4


class OneCorpus(TwoStems):
    """The same files as one corpus (the default of `Problem.train_corpora`)."""

    train_corpora = Problem.train_corpora


@pytest.fixture(scope="module")
def two_stems(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    files = {"aaa.en-de": ([f"cat {i}" for i in range(CATS)], [f"Katze {i}" for i in range(CATS)]),
             "bbb.en-de": ([f"dog {i}" for i in range(DOGS)], [f"Hund {i}" for i in range(DOGS)]),
             "newstest2013.en-de": (["a cat"], ["eine Katze"]),
             "newstest2014.en-de": (["a dog"], ["ein Hund"])}
    for stem, (en, de) in files.items():
        (raw / f"{stem}.en").write_text("".join(s + "\n" for s in en), "utf-8")
        (raw / f"{stem}.de").write_text("".join(t + "\n" for t in de), "utf-8")
    data, log = tmp_path_factory.mktemp("data"), []
    meta = datagen.generate_data(TwoStems(), str(data), str(raw), log.append)
    return raw, data, meta, log


def sources_of(data_dir, shards):
    vocab = SubwordVocab.load(str(data_dir), TwoStems())
    return [vocab.decode_ids([inputs for inputs, _ in shard]) for shard in shards]


def shuffled(lines, shard):
    """What the README says shard `shard` holds: its lines, permuted by its seed."""
    lines = list(lines)
    random.Random(f"{SEED}:{shard}").shuffle(lines)
    return lines


@pytest.mark.parametrize("counts, shards, expected", [
    ([600, 300], 4, [(0, 3), (3, 4)]),           # quotas 8/3, 4/3: the larger remainder wins
    ([1000, 1], 4, [(0, 3), (3, 4)]),            # at least one shard each
    ([1, 1000, 1], 4, [(0, 1), (1, 3), (3, 4)]),  # 1 + 3 + 1 > 4: the large one gives one back
    ([5, 5, 5], 2, [(0, 1), (1, 2), (2, 3)]),    # more corpora than shards: one each
    ([300, 300], 5, [(0, 3), (3, 5)]),           # a tie goes to the earlier corpus
    # WMT14 en-de's local files: 2,399,123 / 1,920,209 / 201,288 pairs into 100 shards:
    # quotas 53.07, 42.48, 4.45 -> 53, 42, 4, and the largest remainder (0.48) gets the 100th.
    ([2_399_123, 1_920_209, 201_288], 100, [(0, 53), (53, 96), (96, 100)]),
])
def test_allocate_shards(counts, shards, expected):
    assert allocate_shards(counts, shards) == expected


def test_datagen_records_each_corpus_and_its_shard_range(two_stems):
    _, data, meta, log = two_stems
    assert meta["layout_version"] == 3
    train = meta["splits"]["train"]
    assert train["corpora"] == [
        {"name": "aaa.en-de", "shard_range": [0, 3], "examples": CATS},
        {"name": "bbb.en-de", "shard_range": [3, 4], "examples": DOGS}]
    assert train["examples"] == CATS + DOGS and len(train["shards"]) == 4
    assert json.loads((data / f"{NAME}.datagen.json").read_text()) == meta
    line = next(line for line in log if line.startswith("  train: "))
    assert line.split(" [")[0].endswith("; dropped 0; corpora: aaa.en-de 600 (shards 0-2), "
                                        "bbb.en-de 300 (shard 3)"), line
    # Each shard holds only its corpus: corpus line k in the range's shard k % size,
    # each shard permuted by the seed of its split-wide index.
    cats, dogs = [f"cat {i}" for i in range(CATS)], [f"dog {i}" for i in range(DOGS)]
    assert sources_of(data, read_shards(data, NAME, "train", 4)) == [
        shuffled(cats[0::3], 0), shuffled(cats[1::3], 1), shuffled(cats[2::3], 2),
        shuffled(dogs, 3)]


def test_one_corpus_keeps_the_shards_of_before(two_stems, tmp_path):
    """Example k in shard k % 4, each shard permuted by its seed: the rule of the
    shards written before corpora were recorded, so their bytes are unchanged."""
    raw, data, _, _ = two_stems
    log = []
    meta = datagen.generate_data(OneCorpus(), str(tmp_path), str(raw), log.append,
                                 vocab_model=str(data / f"{NAME}.sp300.model"))
    assert meta["splits"]["train"]["corpora"] == [
        {"name": NAME, "shard_range": [0, 4], "examples": CATS + DOGS}]
    lines = [f"cat {i}" for i in range(CATS)] + [f"dog {i}" for i in range(DOGS)]
    assert sources_of(tmp_path, read_shards(tmp_path, NAME, "train", 4)) == [
        shuffled(lines[k::4], k) for k in range(4)]
    assert next(line for line in log if line.startswith("  train: ")).split(" [")[0].endswith(
        "; dropped 0")  # no list of corpora


def test_train_shards_that_record_no_corpora_are_written_again(two_stems, tmp_path):
    raw, data, _, _ = two_stems
    for name, content in dir_bytes(data).items():
        (tmp_path / name).write_bytes(content)
    meta_path = tmp_path / f"{NAME}.datagen.json"
    meta = json.loads(meta_path.read_text())
    meta["layout_version"] = 2  # as t2t-datagen wrote it before corpora were recorded
    del meta["splits"]["train"]["corpora"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(Exception, match="do not record their corpora"):
        mixing.train_sources(str(tmp_path), NAME, "aaa.en-de=1")
    log = []
    datagen.generate_data(TwoStems(), str(tmp_path), str(raw), log.append)
    assert log[1] == ("  train: the shards do not record their corpora (an older "
                      "t2t-datagen); writing them again, a range of shards per corpus")
    assert dir_bytes(tmp_path) == dir_bytes(data)


class Interrupted(Exception):
    """Stands for a kill."""


def test_killed_in_the_second_corpus_resumes_after_the_first(two_stems, tmp_path, monkeypatch):
    raw, data, _, _ = two_stems
    seen = {"kill": True, "pairs": []}
    original = encoding.encode_batch

    def encode_batch(vocab, pairs):
        if seen["kill"] and pairs and pairs[0][0] == "dog 0":
            raise Interrupted()
        seen["pairs"] += pairs
        return original(vocab, pairs)

    monkeypatch.setattr(encoding, "encode_batch", encode_batch)
    with pytest.raises(Interrupted):
        datagen.generate_data(TwoStems(), str(tmp_path), str(raw), lambda line: None)
    seen.update(kill=False, pairs=[])
    log = []
    datagen.generate_data(TwoStems(), str(tmp_path), str(raw), log.append)
    assert "  train aaa.en-de: resuming after 3 of 3 shard(s) an interrupted run wrote" in log
    # Only the second corpus, dev and test are encoded again.
    assert [s for s, _ in seen["pairs"]] == [f"dog {i}" for i in range(DOGS)] + ["a cat", "a dog"]
    assert dir_bytes(tmp_path) == dir_bytes(data)


def test_datagen_takes_a_vocabulary_file_for_a_problem_to_mix_in(two_stems, tmp_path):
    """`t2t-datagen --vocab_from=FILE`: the data of another problem, encoded with
    this data's vocabulary, can be mixed in (`vocab_sha256` equal)."""
    from t2t_lite.bin import t2t_datagen
    raw, data, meta, _ = two_stems
    vocab = data / f"{NAME}.sp300.model"
    assert t2t_datagen.main([f"--problem={NAME}", f"--tmp_dir={raw}", f"--data_dir={tmp_path}",
                             f"--vocab_from={vocab}"]) == 0
    copied = json.loads((tmp_path / f"{NAME}.datagen.json").read_text())
    assert copied["vocab_sha256"] == meta["vocab_sha256"]
    assert (tmp_path / copied["vocab_file"]).read_bytes() == vocab.read_bytes()
