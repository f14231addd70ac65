"""A problem defined by the user's files: corpus specs, held-out dev, and every refusal.

Each refusal is one line naming the file (and line), and nothing is written:
the data directory is not even created.
"""

import gzip
import json
import os
import random

import pytest

from t2t_lite import registry, textio
from t2t_lite.bin import t2t_datagen
from t2t_lite.data import definitions, files_problem
from t2t_lite.data.files_problem import CorpusFiles, parse_corpus_spec
from t2t_lite.data.problem_definition import HeldOut, ProblemDefinition, TrainCorpus


def write(path, text, gz=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return str(path)


def pairs_text(n, start=0):
    return [(f"quelle {i}", f"target {i}") for i in range(start, start + n)]


def tsv(pairs):
    return "".join(f"{s}\t{t}\n" for s, t in pairs)


@pytest.mark.parametrize("spec, name, files", [
    ("corpus.tsv.gz", "corpus", ("corpus.tsv.gz",)),
    ("europarl-v7.de-en.de,europarl-v7.de-en.en", "europarl-v7.de-en",
     ("europarl-v7.de-en.de", "europarl-v7.de-en.en")),
    ("news=a.de.gz,a.en.gz", "news", ("a.de.gz", "a.en.gz")),
    ("train.txt", "train", ("train.txt",)),
])
def test_corpus_specs(spec, name, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = parse_corpus_spec(spec, "--train_files")
    assert corpus == CorpusFiles(name, tuple(str(tmp_path / f) for f in files))


@pytest.mark.parametrize("spec", ["", "a,b,c", "a,", "=a.tsv"])
def test_malformed_corpus_specs_are_one_line(spec):
    with pytest.raises(files_problem.T2TError, match="--train_files="):
        parse_corpus_spec(spec, "--train_files")


def test_gzipped_text_reads_like_plain_text(tmp_path):
    text = "a\tb\r\nc  \td\n\u00a0x\ty"
    plain = write(tmp_path / "c.tsv", text)
    packed = write(tmp_path / "c.tsv.gz", text, gz=True)
    assert textio.read_lines(packed, strip="newline") == ["a\tb", "c  \td", "\u00a0x\ty"]
    assert textio.read_lines(packed, strip="newline") == textio.read_lines(plain, strip="newline")
    assert textio.count_lines(packed) == 3


def test_held_out_dev_is_seeded_sized_and_never_in_train(tmp_path):
    pairs = pairs_text(300)
    pairs[250] = pairs[7]  # a duplicate of a pair that may be held out
    first = write(tmp_path / "a.tsv", tsv(pairs[:200]))
    second = write(tmp_path / "b.tsv.gz", tsv(pairs[200:]), gz=True)
    logged = []
    definition = files_problem.make_definition(
        "translate_xy_test", "x", "y",
        [parse_corpus_spec(first, "-"), parse_corpus_spec(second, "-")], None, None, 500,
        log=logged.append)
    assert logged == ["No --dev_files: holding out 15 of the 300 train pairs as dev (seed 1234; "
                      "they and their duplicates are left out of train)."]
    assert definition.dev == HeldOut(pairs=15, seed=1234)
    assert [c.pairs for c in definition.train] == [200, 100]
    problem = files_problem.FilesProblem(definition)
    dev = list(problem.raw_pairs("dev", None))
    # The same indices as an independent draw with the recorded seed.
    chosen = sorted(random.Random(1234).sample(range(300), 15))
    assert dev == [pairs[i] for i in chosen]
    train = list(problem.raw_pairs("train", None))
    assert not set(dev) & set(train)
    duplicates = sum(1 for i, p in enumerate(pairs) if i not in chosen and p in set(dev))
    assert len(train) == 300 - 15 - duplicates
    assert [name for name, _ in problem.train_corpora(None)] == ["a", "b"]
    assert list(problem.raw_pairs("test", None)) == []


def test_held_out_size():
    assert [files_problem.held_out_size(n) for n in (2, 40, 100, 19_999, 100_000)] == \
        [1, 2, 5, 999, 1000]


def test_same_file_as_train_and_dev_is_a_warning(tmp_path):
    corpus = parse_corpus_spec(write(tmp_path / "a.tsv", tsv(pairs_text(10))), "-")
    logged = []
    files_problem.make_definition("translate_xy_test", "x", "y", [corpus], corpus, None, 500,
                                  log=logged.append)
    assert logged == [f"Warning: {tmp_path / 'a.tsv'} is both a train and a dev file: dev "
                      "scores will be measured on training data."]


def datagen(tmp_path, *flags):
    return t2t_datagen.main([f"--data_dir={tmp_path / 'data'}", "--source_lang=de",
                             "--target_lang=en", *flags])


REFUSALS = [
    (lambda d: [f"--train_files={d / 'missing.tsv'}"],
     "Cannot read {d}/missing.tsv (train corpus 'missing'): the file does not exist."),
    (lambda d: ["--train_files=" + write(d / 'a.de', 'x\ny\n') + "," + write(d / 'a.en', 'x\n')],
     "Parallel files differ in length: {d}/a.de has 2 lines but {d}/a.en has 1."),
    (lambda d: ["--train_files=" + write(d / 'n.tsv', 'a\tb\nno tab\n')],
     "{d}/n.tsv, line 2: expected one TAB between source and target, found 0."),
    (lambda d: ["--train_files=" + write(d / 't.tsv', 'a\tb\tc\n')],
     "{d}/t.tsv, line 1: expected one TAB between source and target, found 2; a side holding "
     "a TAB cannot be told from the separator (`paste` writes such lines): give the two sides "
     "as aligned files, SOURCE,TARGET."),
    (lambda d: ["--train_files=" + write(d / 'e.tsv', '')],
     "The train corpus 'e' ({d}/e.tsv) is empty."),
    (lambda d: ["--train_files=" + write(d / 'u.tsv', 'a\tb\nc\td\xff\n'.encode('latin-1'))],
     "{d}/u.tsv, line 2: not valid UTF-8 (byte 0xff at file offset 7: invalid start byte); "
     "convert the file (e.g. iconv -c -f utf-8 -t utf-8) and re-run."),
    (lambda d: ["--train_files=" + write(d / 'g.tsv.gz', 'not gzip')],
     "Cannot read {d}/g.tsv.gz: not a valid gzip file (Not a gzipped file (b'no'))."),
    (lambda d: ["--train_files=" + write(d / 'ok.tsv', 'a\tb\n')],
     "The train corpora hold 1 pair(s): too few to hold out a dev set; give --dev_files."),
    (lambda d: ["--train_files=" + write(d / 'ok.tsv', 'a\tb\nc\td\n'),
                "--problem=translate_ende"],
     "--problem=translate_ende is the name of a built-in problem: give your files' problem "
     "another --problem name."),
    (lambda d: ["--train_files=" + write(d / 'x.tsv', 'a\tb\nc\td\n'),
                f"--train_files={d / 'x.tsv'}"],
     "Two train corpora are named 'x': name them with --train_files=NAME=FILES."),
    (lambda d: ["--train_files=" + write(d / 'ok.tsv', 'a\tb\nc\td\n'), "--problem=../escaped"],
     "Problem name '../escaped': only lower-case letters, digits and '_' (it names files in "
     "the data directory); give another --problem=NAME."),
    (lambda d: ["--train_files=" + write(d / 'ok.tsv', 'a\tb\nc\td\n'), "--problem=My_Data"],
     "Problem name 'My_Data': only lower-case letters, digits and '_' (it names files in "
     "the data directory); give another --problem=NAME."),
]


@pytest.mark.parametrize("flags, message", REFUSALS)
def test_each_refusal_is_one_line_and_writes_nothing(flags, message, tmp_path, capsys):
    given = flags(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert datagen(tmp_path, *given) == 1
    err = capsys.readouterr().err
    assert err == f"t2t-datagen: error: {message.format(d=tmp_path)}\n"
    assert sorted(os.listdir(tmp_path)) == before  # no data directory, nothing beside it


def test_every_registered_problem_name_is_a_file_name_the_rule_allows():
    names = registry.list_problems() + ["translate_ende_wmt32k", "translate_enfr_wmt32k",
                                        "parsing_english_ptb16k"]
    assert [registry.problem(n).name for n in names[-3:]] == [
        "translate_ende", "translate_enfr", "parsing_wsj"]  # the aliases are registered
    assert [n for n in names if not files_problem.PROBLEM_NAME.fullmatch(n)] == []


@pytest.mark.parametrize("codes, name", [
    (("de", "en"), "translate_deen_files"), (("pt-BR", "en"), "translate_pt_bren_files")])
def test_the_default_problem_name_is_lower_case_with_underscores(codes, name):
    assert files_problem.default_problem_name(*codes) == name


def test_a_second_definition_of_the_same_name_is_refused(tmp_path, capsys):
    first = write(tmp_path / "a.tsv", tsv(pairs_text(40)))
    second = write(tmp_path / "b.tsv", tsv(pairs_text(40, start=40)))
    definition = files_problem.make_definition(
        "translate_xy_twice", "x", "y", [parse_corpus_spec(first, "-")], None, None, 500,
        log=lambda line: None)
    definitions.write(str(tmp_path / "data"), definition)
    with pytest.raises(files_problem.T2TError, match=r"already holds problem 'translate_xy_twice' "
                                                     r"defined with other train; use a new"):
        definitions.write(str(tmp_path / "data"), files_problem.make_definition(
            "translate_xy_twice", "x", "y", [parse_corpus_spec(second, "-")], None, None, 500,
            log=lambda line: None))
    saved = json.loads((tmp_path / "data" / "translate_xy_twice.problem.json").read_text())
    assert saved == definition.to_json()
    assert registry.problem_origin("translate_xy_twice") == registry.DEFINED


def test_a_definition_cannot_take_a_built_in_name():
    definition = ProblemDefinition("translate_ende_numbers", "x", "y", 500,
                                   (TrainCorpus("a", ("a.tsv",), 2),), HeldOut(1, 1234), None)
    with pytest.raises(files_problem.T2TError,
                       match="problem 'translate_ende_numbers' is already registered."):
        registry.register_defined_problem(definitions.problem_class(definition),
                                          "translate_ende_numbers")
    assert registry.problem_origin("translate_ende_numbers") == registry.BUILT_IN


def test_corrupt_definition_is_one_line(tmp_path):
    os.makedirs(tmp_path / "data")
    (tmp_path / "data" / "p.problem.json").write_text('{"kind": "text_files"}')
    with pytest.raises(files_problem.T2TError, match=r"Corrupt problem definition in .*p\.problem"):
        definitions.register_data_dir(str(tmp_path / "data"))


def _valid_definition(tmp_path):
    """A definition as JSON, to damage."""
    corpus = parse_corpus_spec(write(tmp_path / "a.tsv", tsv(pairs_text(40))), "-")
    return files_problem.make_definition("translate_xy_edit", "x", "y", [corpus], None, corpus,
                                         500, log=lambda line: None).to_json()


@pytest.mark.parametrize("edit, damage", [
    (lambda d: d.update(version="1"), 'version is "1", expected a whole number'),
    (lambda d: d.update(version=True), "version is true, expected a whole number"),
    (lambda d: d.update(vocab_size=8000.5), "vocab_size is 8000.5, expected a whole number"),
    (lambda d: d.update(source_language=None), "source_language is null, expected a language code"),
    (lambda d: d.update(train=[]), "train is [], expected a list of corpora"),
    (lambda d: d["train"][0].update(pairs="40"),
     'train[0].pairs is "40", expected a whole number of pairs'),
    (lambda d: d["train"][0].update(files="a.tsv"),
     'train[0].files is "a.tsv", expected a list of one or two file names'),
    (lambda d: d["train"][0].update(name=7), "train[0].name is 7, expected a corpus name"),
    (lambda d: d["dev"]["held_out"].update(seed="1234"),
     'dev.held_out is {"pairs": 2, "seed": "1234"}, expected {"pairs": N, "seed": S}'),
    (lambda d: d.update(dev=None), "dev is null, expected dev files or a held-out count"),
    (lambda d: d.update(test=[]), "test is [], expected an object"),
    (lambda d: d.update(name="../x"), 'name is "../x", expected a problem name'),
    (lambda d: d.update(name="translate_other"),
     'name is "translate_other", expected "translate_xy_edit" (the file\'s name)'),
])
def test_a_damaged_field_of_a_stored_definition_is_one_line_naming_the_file(
        edit, damage, tmp_path, capsys):
    definition = _valid_definition(tmp_path)
    edit(definition)
    data = tmp_path / "data"
    os.makedirs(data)
    path = data / "translate_xy_edit.problem.json"
    path.write_text(json.dumps(definition))
    assert t2t_datagen.main([f"--data_dir={data}", "--problem=translate_xy_edit"]) == 1
    assert capsys.readouterr().err == (
        f"t2t-datagen: error: Corrupt problem definition in {path}: {damage}.\n")


def test_a_damaged_definition_in_a_model_directory_names_its_problem_json(tmp_path):
    definition = _valid_definition(tmp_path)
    definition["vocab_size"] = "500"
    with pytest.raises(files_problem.T2TError) as e:
        ProblemDefinition.from_json(definition, "M/problem.json")
    assert str(e.value) == ('Corrupt problem definition in M/problem.json: vocab_size is "500", '
                            "expected a whole number.")


def test_a_blank_tsv_line_is_a_blank_pair_as_in_aligned_files(tmp_path):
    """Dropped from train, kept in dev and test, counted: the same in both formats."""
    write(tmp_path / "t.tsv", "eins\tone\n\nzwei\ttwo\n  \ndrei\tthree\n\n")
    write(tmp_path / "a.de", "eins\n\nzwei\n  \ndrei\n\n")
    write(tmp_path / "a.en", "one\n\ntwo\n\nthree\n\n")
    write(tmp_path / "dev.tsv", "vier\tfour\n\n")
    assert [list(parse_corpus_spec(f, "-").pairs()) for f in (
        str(tmp_path / "t.tsv"), f"{tmp_path / 'a.de'},{tmp_path / 'a.en'}")] == [
        [("eins", "one"), ("", ""), ("zwei", "two"), ("  ", ""), ("drei", "three"), ("", "")]] * 2
    assert datagen(tmp_path, f"--train_files={tmp_path / 't.tsv'}",
                   f"--train_files={tmp_path / 'a.de'},{tmp_path / 'a.en'}",
                   f"--dev_files={tmp_path / 'dev.tsv'}", "--vocab_size=300") == 0
    data = tmp_path / "data"
    definition = json.loads((data / "translate_deen_files.problem.json").read_text())
    assert [c["pairs"] for c in definition["train"]] + [definition["dev"]["pairs"]] == [6, 6, 2]
    splits = json.loads((data / "translate_deen_files.datagen.json").read_text())["splits"]
    assert [c["examples"] for c in splits["train"]["corpora"]] == [3, 3]
    assert splits["train"]["dropped"] == {"empty source or target": 6}
    assert (splits["dev"]["examples"], splits["dev"]["kept_with_empty_side"]) == (2, 1)
    assert (data / "translate_deen_files-dev.de").read_text() == "vier\n\n"


def test_the_same_language_on_both_sides_is_said_with_the_text_file_names(tmp_path):
    corpus = parse_corpus_spec(write(tmp_path / "p.tsv", tsv(pairs_text(40))), "-")
    logged = []
    definition = files_problem.make_definition("translate_enen_files", "en", "en", [corpus],
                                               corpus, None, 500, log=logged.append)
    assert logged[0] == ("Source and target are both 'en': dev and test are written as text to "
                         "translate_enen_files-dev.source / translate_enen_files-dev.target "
                         "(and -test.*), not .en.")
    assert sorted(files_problem.FilesProblem(definition).text_files("dev", None)) == [
        "source", "target"]
