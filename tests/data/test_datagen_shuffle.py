"""Train shards sample the whole corpus from their first record.

The fixture is two different corpora one after the other, as local WMT files
are read (Common Crawl, then Europarl, ...): 1,800 "cat" pairs, then 900 "dog"
pairs. Before, shard i held lines i, i + 4, ... in corpus order: its first
tenth was all "cat", and a pipeline whose sweep exceeds its shuffle buffer
gave hundreds of "cat"-only batches first.
"""

import json
import os

import pytest

from t2t_lite.data import datagen
from t2t_lite.data.integrity import check_shards
from t2t_lite.data.pipeline import make_dataset
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError
from t2t_lite.problems.translate_multi30k import TranslateEndeMulti30k
from test_datagen import dir_bytes, read_shards, read_split

NAME = "translate_ende_multi30k"
CATS, DOGS = 1800, 900  # dogs: a third of the corpus


class TwoCorpora(TranslateEndeMulti30k):
    vocab_size = 300
    num_train_shards = 4


@pytest.fixture(scope="module")
def two_corpora(tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    sources = [f"cat {i}" for i in range(CATS)] + [f"dog {i}" for i in range(DOGS)]
    targets = [f"Katze {i}" for i in range(CATS)] + [f"Hund {i}" for i in range(DOGS)]
    for stem, en, de in [("train", sources, targets), ("val", sources[::100], targets[::100]),
                         ("test_2016_flickr", sources[1::100], targets[1::100])]:
        (raw / f"{stem}.en").write_text("".join(s + "\n" for s in en), "utf-8")
        (raw / f"{stem}.de").write_text("".join(t + "\n" for t in de), "utf-8")
    data = tmp_path_factory.mktemp("data")
    datagen.generate_data(TwoCorpora(), str(data), str(raw), lambda line: None)
    return raw, data


def decoded_sources(data_dir, shard):
    vocab = SubwordVocab.load(str(data_dir), TwoCorpora())
    return vocab.decode_ids([inputs for inputs, _ in shard])


def test_each_train_shard_first_tenth_holds_both_corpora(two_corpora):
    _, data = two_corpora
    for k, shard in enumerate(read_shards(data, NAME, "train", 4)):
        sources = decoded_sources(data, shard)
        # Shard k holds exactly corpus lines k, k + 4, ... (675 of them) ...
        assert sorted(sources) == sorted(
            ([f"cat {i}" for i in range(CATS)] + [f"dog {i}" for i in range(DOGS)])[k::4])
        # ... and its first tenth (67) has dogs in about their share (22.3): not 0.
        head = sources[:len(sources) // 10]
        dogs = sum(s.startswith("dog") for s in head)
        assert 12 <= dogs <= 33, (k, dogs)


def test_dev_and_test_keep_the_corpus_order(two_corpora):
    raw, data = two_corpora
    vocab = SubwordVocab.load(str(data), TwoCorpora())
    for split, stem in (("dev", "val"), ("test", "test_2016_flickr")):
        lines = (raw / f"{stem}.en").read_text("utf-8").splitlines()
        examples = read_split(data, NAME, split, 1)
        assert vocab.decode_ids([inputs for inputs, _ in examples]) == lines


def test_same_bytes_for_the_same_seed(two_corpora, tmp_path):
    raw, data = two_corpora
    datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), lambda line: None)
    assert dir_bytes(tmp_path) == dir_bytes(data)


def test_pipeline_beyond_its_shuffle_buffer_mixes_both_corpora_in_every_window(two_corpora):
    """A 20-example buffer against a 2,700-example sweep: every window of 60
    examples of the training stream (batches in order) holds cats and dogs."""
    _, data = two_corpora
    vocab = SubwordVocab.load(str(data), TwoCorpora())
    ds = make_dataset(str(data), NAME, "train", batch_size=64, max_length=16, training=True,
                      seed=3, shuffle_buffer=20, repeat=False)
    windows, window = [], []
    for batch in ds:
        window += [s.decode("utf-8") for s in vocab.decode(batch["inputs"]).numpy()]
        if len(window) >= 60:
            windows.append(window)
            window = []
    assert sum(map(len, windows)) + len(window) == CATS + DOGS
    mixed = [any(s.startswith("cat") for s in w) and any(s.startswith("dog") for s in w)
             for w in windows]
    assert len(windows) >= 40 and all(mixed), mixed.index(False)


def test_train_shards_of_an_older_layout_are_rewritten_and_refused(two_corpora, tmp_path):
    raw, data = two_corpora
    old = tmp_path / "old"
    old.mkdir()
    for name, content in dir_bytes(data).items():
        (old / name).write_bytes(content)
    meta_path = old / f"{NAME}.datagen.json"
    meta = json.loads(meta_path.read_text())
    del meta["layout_version"], meta["shuffle_seed"]  # as t2t-datagen wrote it before
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(T2TError, match=(
            rf"^The train shards of {NAME} in {old} hold the corpus in order \(written by an "
            rf"older t2t-datagen\): re-run t2t-datagen --problem={NAME} --data_dir={old} to "
            r"shuffle them\.$")):
        check_shards(str(old), NAME, meta, ["train", "dev"])  # what the trainer checks
    check_shards(str(old), NAME, meta, ["dev", "test"])  # their order is still right

    inodes = {f: os.stat(old / f).st_ino for f in os.listdir(old)}
    log = []
    datagen.generate_data(TwoCorpora(), str(old), str(raw), log.append)
    assert log[1] == ("  train: the shards hold the corpus in order (an older t2t-datagen); "
                      "writing them again, each shuffled")
    assert [line.split(":")[1].split()[0] for line in log if line.startswith(
        ("  dev:", "  test:"))] == ["reusing", "reusing"]
    rewritten = sorted(f for f in inodes if os.stat(old / f).st_ino != inodes[f])
    assert rewritten == [f"{NAME}-train-0000{i}-of-00004" for i in range(4)] + [
        f"{NAME}.datagen.json"]
    assert dir_bytes(old) == dir_bytes(data)


def test_a_newer_layout_is_refused(two_corpora, tmp_path):
    raw, _ = two_corpora
    (tmp_path / f"{NAME}.datagen.json").write_text(json.dumps({"layout_version": 4}))
    with pytest.raises(T2TError, match=rf"^{tmp_path} holds data of a newer t2t-datagen "
                                       r"\(layout 4; this one writes layout 3\)"):
        datagen.generate_data(TwoCorpora(), str(tmp_path), str(raw), lambda line: None)
