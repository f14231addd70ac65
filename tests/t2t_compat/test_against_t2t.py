"""The same user directory gives t2t-lite's datagen the pairs tensor2tensor 1.15.7's gave,
in the same splits, and, with t2t's vocabulary file, the same ids.

`data/t2t_datagen` holds what t2t's own t2t-datagen wrote for three patterns of
`t2t_usr_dirs` (README.md there says how it was made): a Text2TextProblem dealt
into 9 train / 1 dev shards, a TranslateProblem of local files, and a
TranslateProblem reading two columns of 4-column TSV files (rows with an empty
first or last column, spaces around columns, CRLF, blank columns, no TAB).
Compared as multisets: t2t shuffles each shard.
"""

import pathlib
import shutil

import pytest
import tensorflow as tf

from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen
from t2t_lite.data import datagen

import t2t_usr_dirs
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)

T2T_OUTPUT = pathlib.Path(__file__).parent / "data" / "t2t_datagen"
PROBLEMS = ["reverse_sentences", "translate_xxyy_toy", "translate_xxyy_columns"]


def t2t_split(problem, split):
    """[(inputs, targets, input ids, target ids)] of what t2t wrote for `split`, sorted."""
    rows = []
    for line in (T2T_OUTPUT / problem / f"{split}.tsv").read_text().splitlines():
        inputs, targets, input_ids, target_ids = line.split("\t")
        rows.append((inputs, targets, [int(i) for i in input_ids.split()],
                     [int(i) for i in target_ids.split()]))
    return sorted(rows)


def lite_ids(data_dir, problem, split):
    """[(input ids, target ids)] of t2t-lite's shards of `split`, sorted."""
    meta = datagen.read_metadata(str(data_dir), problem)
    paths = [str(data_dir / name) for name in meta["splits"][split]["shards"]]
    rows = []
    for record in tf.data.TFRecordDataset(paths).as_numpy_iterator():
        feature = tf.train.Example.FromString(record).features.feature
        rows.append((list(feature["inputs"].int64_list.value),
                     list(feature["targets"].int64_list.value)))
    return sorted(rows)


@pytest.fixture
def t2t_usr(isolated_registry, tmp_path):
    usr = t2t_usr_dirs.write_usr_dir(tmp_path, "my_t2t_problems", {
        "reverse": t2t_usr_dirs.TEXT2TEXT, "toy_translate": t2t_usr_dirs.TRANSLATE,
        "columns": t2t_usr_dirs.COLUMNS})
    t2t_usr_dirs.write_raw_data(tmp_path / "tmp")
    usr_dir.import_usr_dir(str(usr))
    return usr


@pytest.mark.parametrize("problem", PROBLEMS)
def test_the_same_pairs_in_the_same_splits_as_t2t_datagen(t2t_usr, tmp_path, problem):
    lite = registry.problem(problem)
    for split in ("train", "dev"):
        expected = sorted((inputs, targets) for inputs, targets, _, _ in t2t_split(problem, split))
        assert sorted(lite.raw_pairs(split, str(tmp_path / "tmp"))) == expected, split


@pytest.mark.parametrize("given", ["--vocab_from", "left in the data directory"])
@pytest.mark.parametrize("problem", PROBLEMS)
def test_with_t2t_s_vocabulary_file_the_same_ids(t2t_usr, tmp_path, problem, given, capfd):
    data = tmp_path / "data"
    data.mkdir()
    name = f"vocab.{problem}.512.subwords"  # the problem's vocab_filename, as t2t names it
    vocab = shutil.copy(T2T_OUTPUT / problem / name, data)
    flags = [f"--vocab_from={vocab}"] if given == "--vocab_from" else []
    assert t2t_datagen.main([f"--t2t_usr_dir={t2t_usr}", f"--problem={problem}",
                             f"--data_dir={data}", f"--tmp_dir={tmp_path / 'tmp'}",
                             *flags]) == 0
    found = (f"  vocabulary: tensor2tensor's {name} is in {data}: encoding with it "
             "(t2t's ids)")
    assert (found in capfd.readouterr().out.splitlines()) == (given != "--vocab_from")
    for split in ("train", "dev"):
        expected = sorted((i, t) for _, _, i, t in t2t_split(problem, split))
        assert lite_ids(data, problem, split) == expected, split


def test_text_encoder_s_subword_text_encoder_gives_t2t_s_ids():
    from t2t_lite.t2t_compat import text_encoder
    for problem in PROBLEMS:
        encoder = text_encoder.SubwordTextEncoder(
            str(T2T_OUTPUT / problem / f"vocab.{problem}.512.subwords"))
        for inputs, targets, input_ids, target_ids in t2t_split(problem, "dev"):
            assert encoder.encode(inputs) + [text_encoder.EOS_ID] == input_ids
            assert encoder.decode(target_ids[:-1]) == targets
