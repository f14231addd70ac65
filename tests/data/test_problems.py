"""Problems: registry names, raw-text policy, numbers splits, Multi30k and WMT sources."""

import collections
import os
import time
from pathlib import Path

import pytest

from t2t_lite import registry
from t2t_lite.data import layout
from t2t_lite.data import problem as problem_lib
from t2t_lite.data import tfds_source
from t2t_lite.errors import T2TError
from t2t_lite.problems import translate_numbers, translate_wmt
from paths import SHARED_DATA

TRANSLATION_PROBLEMS = ["translate_ende", "translate_ende_multi30k", "translate_ende_numbers",
                        "translate_enfr"]


def needs_shared(folder: str):
    return pytest.mark.skipif(
        not (SHARED_DATA / folder).is_dir(),
        reason=f"real data sample not found at {SHARED_DATA / folder} (../shared/data)")


# --- registry ---

def test_registered_problems_and_names():
    assert set(registry.list_problems()) >= set(TRANSLATION_PROBLEMS)  # parsing adds its own
    for name in registry.list_problems():
        assert registry.problem(name).name == name


def test_t2t_aliases_resolve():
    assert registry.problem_name("translate_ende_wmt32k") == "translate_ende"
    assert registry.problem_name("translate_enfr_wmt32k") == "translate_enfr"
    assert isinstance(registry.problem("translate_ende_wmt32k"), translate_wmt.TranslateEnde)


def test_unknown_problem_suggests():
    with pytest.raises(T2TError, match="Did you mean 'translate_ende'"):
        registry.problem("translate_ened")


BLEU = ("bleu", "chrf", "exact_match")  # the dev metrics of translation problems


def test_problem_specs():
    specs = {name: (p.vocab_size, tuple(sorted(p.dev_scores(["a b"], ["a b"], ["x"]))),
                    p.beam_size, p.alpha,
                    p.num_shards("train"), p.num_shards("test"))
             for name in TRANSLATION_PROBLEMS for p in [registry.problem(name)]}
    assert specs == {
        "translate_ende": (37000, BLEU, 4, 0.6, 100, 1),
        "translate_enfr": (32000, BLEU, 4, 0.6, 400, 1),
        "translate_ende_multi30k": (8000, BLEU, 4, 0.6, 4, 1),
        "translate_ende_numbers": (700, BLEU, 4, 0.6, 4, 1),
    }
    with pytest.raises(T2TError, match="Unknown split 'valid'"):
        registry.problem("translate_ende").num_shards("valid")


# --- raw text policy ---

def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_read_parallel_text_keeps_text_exactly(tmp_path):
    src = _write(tmp_path / "a.en", b"one  \n\tA &amp; B\xc2\xa0\r\n\nlast")
    tgt = _write(tmp_path / "a.de", b"eins\nzwei\ndrei\nvier\n")
    assert list(problem_lib.read_parallel_text(src, tgt)) == [
        ("one  ", "eins"), ("\tA &amp; B\xa0", "zwei"), ("", "drei"), ("last", "vier")]


def test_line_count_mismatch_names_files_and_counts(tmp_path):
    src = _write(tmp_path / "x.en", b"a\nb\nc\n")
    tgt = _write(tmp_path / "x.de", b"a\nb\n")
    with pytest.raises(T2TError) as e:
        next(problem_lib.read_parallel_text(src, tgt))
    assert str(e.value) == (f"Parallel files differ in length: {src} has 3 lines but "
                            f"{tgt} has 2.")


def test_non_utf8_line_is_an_error_naming_file_and_line(tmp_path):
    src = _write(tmp_path / "x.en", b"good\nbad \xff byte\n")
    tgt = _write(tmp_path / "x.de", b"gut\nschlecht\n")
    with pytest.raises(T2TError, match=r"x\.en, line 2: not valid UTF-8"):
        list(problem_lib.read_parallel_text(src, tgt))


# --- numbers ---

def test_number_splits_golden():
    splits = translate_numbers.number_splits()
    assert {k: len(v) for k, v in splits.items()} == {"train": 100000, "dev": 1000, "test": 1000}
    train, dev, test = set(splits["train"]), set(splits["dev"]), set(splits["test"])
    # 0..999 ten times, every other number once; the splits disjoint
    counts = collections.Counter(splits["train"])
    assert all(counts[n] == 10 for n in range(1000)) and len(counts) == 100000 - 9 * 1000
    assert all(c == 1 for n, c in counts.items() if n >= 1000)
    assert len(train | dev | test) == 91000 + 2000
    assert all(1000 <= n < 1_000_000 for n in dev | test)
    digits = lambda ns: dict(sorted(collections.Counter(len(str(n)) for n in ns).items()))
    assert digits(splits["train"]) == {1: 100, 2: 900, 3: 9000, 4: 8332, 5: 40834, 6: 40834}
    assert digits(splits["test"]) == {4: 334, 5: 333, 6: 333}
    # dev and test as the versions with 0..999 once made them
    assert splits["test"][:3] == [433739, 18893, 75931]
    assert splits["dev"][:3] == [873758, 43221, 8401]
    assert translate_numbers.number_splits() == splits  # seeded


def test_small_numbers_fill_ten_percent_of_train_at_least_once():
    assert [translate_numbers.small_copies(n) for n in (1000, 1003, 19_999, 20_000, 100_000,
                                                        1_000_000)] == [1, 1, 1, 2, 10, 100]
    splits = translate_numbers.number_splits(train_size=20_000, dev_size=3, test_size=3)
    assert collections.Counter(splits["train"])[7] == 2 and len(splits["train"]) == 20_000


def test_number_pairs():
    assert translate_numbers.number_pair(342) == ("three hundred and forty-two",
                                                  "dreihundertzweiundvierzig")
    assert translate_numbers.number_pair(21000) == ("twenty-one thousand", "einundzwanzigtausend")
    problem = translate_numbers.TranslateEndeNumbers(train_size=1003, dev_size=3, test_size=3)
    assert len(list(problem.raw_pairs("train", None))) == 1003
    assert list(problem.raw_pairs("dev", None)) == [
        translate_numbers.number_pair(n) for n in problem.numbers("dev")]
    with pytest.raises(T2TError, match="train_size must be at least 1000"):
        translate_numbers.number_splits(train_size=999)


def test_number_words_are_written_once_per_process_and_split_sizes(monkeypatch):
    """num2words costs ~15 s per default train split: a second instance (a rerun
    datagen) reuses the words; other sizes are their own split, computed anew."""
    calls = []
    real = translate_numbers.number_pair
    monkeypatch.setattr(translate_numbers, "number_pair", lambda n: calls.append(n) or real(n))
    monkeypatch.setattr(translate_numbers, "_PAIRS", {})
    sizes = dict(train_size=1002, dev_size=3, test_size=3)
    first = list(translate_numbers.TranslateEndeNumbers(**sizes).raw_pairs("dev", None))
    assert len(calls) == 3
    again = list(translate_numbers.TranslateEndeNumbers(**sizes).raw_pairs("dev", None))
    assert again == first and len(calls) == 3
    other = translate_numbers.TranslateEndeNumbers(train_size=1002, dev_size=6, test_size=3)
    assert len(list(other.raw_pairs("dev", None))) == 6 and len(calls) == 9
    assert first == [real(n) for n in translate_numbers.number_splits(**sizes)["dev"]]


# --- Multi30k ---

@needs_shared("multi30k")
def test_multi30k_splits():
    problem = registry.problem("translate_ende_multi30k")
    tmp_dir = str(SHARED_DATA / "multi30k")
    counts = {s: sum(1 for _ in problem.raw_pairs(s, tmp_dir)) for s in layout.SPLITS}
    assert counts == {"train": 29000, "dev": 1014, "test": 1000}
    assert next(problem.raw_pairs("test", tmp_dir)) == (
        "A man in an orange hat starring at something.",
        "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.")


def test_multi30k_missing_files(tmp_path):
    problem = registry.problem("translate_ende_multi30k")
    with pytest.raises(T2TError, match="pass --tmp_dir"):
        next(problem.raw_pairs("train", None))
    with pytest.raises(T2TError, match=r"missing .*train\.en"):
        next(problem.raw_pairs("train", str(tmp_path)))


# --- WMT: local files ---

@needs_shared("wmt14")
def test_wmt_local_newstest_files():
    tmp_dir = str(SHARED_DATA / "wmt14")
    ende, enfr = registry.problem("translate_ende"), registry.problem("translate_enfr")
    assert ende.local_files("dev", tmp_dir) == [
        (f"{tmp_dir}/newstest2013.en-de.en", f"{tmp_dir}/newstest2013.en-de.de")]
    assert enfr.local_files("test", tmp_dir) == [
        (f"{tmp_dir}/newstest2014-full.en-fr.en", f"{tmp_dir}/newstest2014-full.en-fr.fr")]
    assert ende.local_files("train", tmp_dir) == []  # held-out sets never serve as train
    for problem in (ende, enfr):
        assert sum(1 for _ in problem.raw_pairs("dev", tmp_dir)) == 3000
        assert sum(1 for _ in problem.raw_pairs("test", tmp_dir)) == 3003
    with open(f"{tmp_dir}/newstest2014-full.en-de.de", encoding="utf-8") as f:
        first_de = f.readline().rstrip("\n")
    assert next(ende.raw_pairs("test", tmp_dir))[1] == first_de


@needs_shared("wmt_newstest_2008_2012")
def test_wmt_local_train_files_any_names(tmp_path):
    news = SHARED_DATA / "wmt_newstest_2008_2012"
    for f in news.iterdir():
        if ".en-de." in f.name:
            os.symlink(f, tmp_path / f.name)
    os.symlink(SHARED_DATA / "wmt14" / "newstest2013.en-de.en", tmp_path / "newstest2013.en-de.en")
    os.symlink(SHARED_DATA / "wmt14" / "newstest2013.en-de.de", tmp_path / "newstest2013.en-de.de")
    ende = registry.problem("translate_ende")
    stems = [os.path.basename(s)[:-3] for s, _ in ende.local_files("train", str(tmp_path))]
    assert stems == ["news-test2008.en-de", "newssyscomb2009.en-de", "newstest2009.en-de",
                     "newstest2010.en-de", "newstest2011.en-de", "newstest2012.en-de"]
    assert sum(1 for _ in ende.raw_pairs("train", str(tmp_path))) == 13573
    os.symlink(news / "newstest2012.en-de.en", tmp_path / "train.en-de.en")
    os.symlink(news / "newstest2012.en-de.de", tmp_path / "train.en-de.de")
    assert sum(1 for _ in ende.raw_pairs("train", str(tmp_path))) == 3003  # train.* wins


# --- WMT: tensorflow-datasets ---

def _mock_wmt(examples):
    import tensorflow as tf
    import tensorflow_datasets as tfds

    def as_dataset(self, split, **kwargs):
        del self, kwargs
        rows = examples[str(split)]
        return tf.data.Dataset.from_tensor_slices(
            {"en": [r[0] for r in rows], "de": [r[1] for r in rows]})

    return tfds.testing.mock_data(as_dataset_fn=as_dataset)


def test_wmt_through_tfds_mock(tmp_path):
    examples = {"train": [("Hello world.", "Hallo Welt."), ("Thanks!", "Danke!")],
                "validation": [("Yes", "Ja")], "test": [("No", "Nein")]}
    ende = registry.problem("translate_ende")
    with _mock_wmt(examples):
        got = {s: list(ende.raw_pairs(s, str(tmp_path))) for s in layout.SPLITS}
    assert got == {"train": examples["train"], "dev": [("Yes", "Ja")], "test": [("No", "Nein")]}


def test_wmt_offline_error_is_one_fast_line(tmp_path, monkeypatch):
    monkeypatch.setattr(tfds_source, "host_reachable", lambda host: False)
    ende = registry.problem("translate_ende")
    ende.tfds_data_dir = str(tmp_path / "tfds")  # nothing prepared there
    start = time.time()
    with pytest.raises(T2TError) as e:
        next(ende.raw_pairs("train", str(tmp_path)))
    assert time.time() - start < 10
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("wmt14_translate/de-en split 'train' is not prepared")
    assert "no network" in message and "--tmp_dir" in message and str(tmp_path) in message


def test_host_reachable_fails_fast_on_closed_port():
    start = time.time()
    assert not tfds_source.host_reachable("127.0.0.1", port=1, timeout_s=2)
    assert time.time() - start < 3
