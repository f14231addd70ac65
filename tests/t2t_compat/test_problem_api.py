"""t2t's Text2TextProblem API as the layer answers it: splits as t2t's generate_data
makes them, the txt helpers' rules, space ids, and the user's mistakes in one line."""

import textwrap

import pytest

from t2t_lite import registry, usr_dir
from t2t_lite.errors import T2TError

import t2t_usr_dirs
from registry_isolation import isolated_registry, notes  # noqa: F401  (fixtures)

HEADER = textwrap.dedent('''\
    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.layers import modalities
    from tensor2tensor.utils import registry

''')


def register(tmp_path, body: str):
    path = t2t_usr_dirs.write_usr_dir(tmp_path, "api_usr",
                                      {"problems": HEADER + textwrap.dedent(body)})
    usr_dir.import_usr_dir(str(path))


def test_dealt_samples_skip_none_and_fill_every_listed_split(isolated_registry, tmp_path):
    register(tmp_path, """
        @registry.register_problem
        class Dealt(text_problems.Text2TextProblem):
          is_generate_per_split = False
          dataset_splits = [{"split": problem.DatasetSplit.TRAIN, "shards": 3},
                            {"split": problem.DatasetSplit.EVAL, "shards": 1},
                            {"split": problem.DatasetSplit.TEST, "shards": 2}]

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            assert dataset_split == problem.DatasetSplit.TRAIN
            for i in range(12):
              yield None if i == 4 else {"inputs": "s%d" % i, "targets": "t%d" % i}
        """)
    dealt = registry.problem("dealt")
    # Shards train, train, train, dev, test, test, dealt in turn; None is not counted.
    sources = {split: [s for s, _ in dealt.raw_pairs(split, None)]
               for split in ("train", "dev", "test")}
    assert sources == {"train": ["s0", "s1", "s2", "s7", "s8", "s9"], "dev": ["s3", "s10"],
                       "test": ["s5", "s6", "s11"]}


def test_per_split_problems_with_prefixes_and_space_ids(isolated_registry, tmp_path, notes):
    register(tmp_path, """
        @registry.register_problem
        class PerSplit(text_problems.Text2TextProblem):
          is_generate_per_split = True
          inputs_prefix = "en: "

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            yield {"inputs": dataset_split, "targets": b"bytes are UTF-8 \\xc3\\xa4"}

          def hparams(self, defaults, unused_model_hparams):
            p = defaults
            p.modality = {"inputs": modalities.ModalityType.SYMBOL,
                          "targets": modalities.ModalityType.SYMBOL}
            p.vocab_size = {"inputs": self._encoders["inputs"].vocab_size,
                            "targets": self._encoders["targets"].vocab_size}
            p.input_space_id = problem.SpaceID.EN_TOK
            p.target_space_id = problem.SpaceID.DE_TOK
        """)
    per_split = registry.problem("per_split")
    assert [list(per_split.raw_pairs(split, None)) for split in ("train", "dev", "test")] == [
        [("en: train", "bytes are UTF-8 ä")], [("en: eval", "bytes are UTF-8 ä")], []]
    assert per_split.target_space_id == 8
    per_split.train_corpora(None)
    assert notes[-1] == ("per_split: its target_space_id is 8: train with t2t-trainer "
                         "--hparams=target_space_id=8 for t2t's target-space embedding row.")
    assert per_split.vocab_filename == "vocab.per_split.32768.subwords"


def test_txt_helpers_follow_t2t(tmp_path):
    from t2t_lite.t2t_compat import text_problems
    (tmp_path / "a.tsv").write_text(" x \t y\tz \nno tab\n\t\nq\tr\n")
    assert list(text_problems.text2text_txt_tab_iterator(str(tmp_path / "a.tsv"))) == [
        {"inputs": "x", "targets": "y\tz"}, {"inputs": "q", "targets": "r"}]
    (tmp_path / "s.txt").write_text(" a \nb\nc\n")
    (tmp_path / "t.txt").write_text("A\nB\n")
    assert list(text_problems.text2text_txt_iterator(str(tmp_path / "s.txt"),
                                                     str(tmp_path / "t.txt"))) == [
        {"inputs": "a", "targets": "A"}, {"inputs": "b", "targets": "B"}]


@pytest.mark.parametrize("sample, message", [
    ('{"inputs": "a"}', "Broken.generate_samples yielded \"{'inputs': 'a'}\": expected a dict "
                        "with 'inputs' and 'targets' strings."),
    ('{"inputs": "a", "targets": [1, 2]}',
     "Broken.generate_samples: 'targets' is list, not a string (t2t-lite encodes text "
     "itself)."),
    ('1 / 0', "Broken.generate_samples('train') failed: {path}:{line}: ZeroDivisionError: "
              "division by zero"),
])
def test_a_broken_generate_samples_is_one_line(isolated_registry, tmp_path, sample, message):
    register(tmp_path, f"""
        @registry.register_problem
        class Broken(text_problems.Text2TextProblem):
          is_generate_per_split = True

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            yield {sample}
        """)
    with pytest.raises(T2TError) as raised:
        list(registry.problem("broken").raw_pairs("train", None))
    path = tmp_path / "api_usr" / "problems.py"
    line = path.read_text().splitlines().index(f"    yield {sample}") + 1
    assert str(raised.value) == message.replace("{path}", str(path)).replace("{line}", str(line))


def test_a_subclass_with_its_own_init_is_checked_when_its_data_is_read(isolated_registry,
                                                                       tmp_path):
    register(tmp_path, """
        @registry.register_problem
        class OwnInit(text_problems.Text2TextProblem):
          is_generate_per_split = True
          vocab_type = "pieces"

          def __init__(self):
            self.lines = ["a"]

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            for line in self.lines:
              yield {"inputs": line, "targets": line}
        """)
    with pytest.raises(T2TError, match=r"^OwnInit.vocab_type is 'pieces'"):
        list(registry.problem("own_init").raw_pairs("train", None))


def test_vocabulary_builder_settings_are_said_not_to_be_used(isolated_registry, tmp_path,
                                                             notes):
    register(tmp_path, """
        @registry.register_problem
        class Tuned(text_problems.Text2textTmpdir):
          additional_reserved_tokens = ["<sep>"]

          def generate_text_for_vocab(self, data_dir, tmp_dir):
            yield "only this"
        """)
    for name, lines in (("inputs.train.txt", "a\nb\n"), ("targets.train.txt", "A\nB\n"),
                        ("inputs.eval.txt", "c\n"), ("targets.eval.txt", "C\n")):
        (tmp_path / name).write_text(lines)
    tuned = registry.problem("tuned")
    assert [list(read()) for _, read in tuned.train_corpora(str(tmp_path))] == [
        [("a", "A"), ("b", "B")]]
    assert list(tuned.raw_pairs("dev", str(tmp_path))) == [("c", "C")]
    assert notes[-1] == (
        "tuned: Tuned.generate_text_for_vocab, additional_reserved_tokens ['<sep>'] shape(s) "
        "t2t's SubwordTextEncoder only; t2t-lite learns its SentencePiece vocabulary from the "
        "train pairs and does not use them.")


@pytest.mark.parametrize("languages, expected, report_start", [
    ("", ("", ""), "BLEU = 0.00 nrefs:1|case:mixed|eff:no|tok:13a|"),
    ('source_language, target_language = "en", "zh"', ("en", "zh"),
     # (5/6 * 4/5 * 3/4 * 2/3) ** (1/4): the n-gram precisions of 6 characters, 1 wrong
     "BLEU = 75.98 nrefs:1|case:mixed|eff:no|tok:zh|"),
])
def test_a_t2t_problem_declares_its_languages_in_two_class_attributes(
        isolated_registry, tmp_path, languages, expected, report_start):
    # t2t has no such attributes (and ignores them); t2t-lite does not read the name.
    register(tmp_path, f"""
        @registry.register_problem
        class TranslateEnzhToy(text_problems.Text2TextProblem):
          {languages}
          is_generate_per_split = True

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            yield {{"inputs": "I love you", "targets": "我爱你们"}}
        """)
    problem = registry.problem("translate_enzh_toy")
    assert (problem.source_language, problem.target_language) == expected
    (tmp_path / "ref.zh").write_text("我爱你们的狗\n")  # 13a: one token, zh: one per character
    assert problem.report(["我爱你们的猫"], str(tmp_path / "ref.zh")).startswith(report_start)


def test_no_top_level_tensor2tensor_before_a_user_directory(tmp_path):
    import subprocess
    import sys
    result = subprocess.run(
        [sys.executable, "-c", "import t2t_lite.usr_dir, tensor2tensor"],
        capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'tensor2tensor'")


def test_maybe_download_returns_a_present_file_and_copies_a_local_uri(tmp_path):
    from t2t_lite.t2t_compat import generator_utils
    (tmp_path / "here.txt").write_text("kept")
    assert generator_utils.maybe_download(str(tmp_path), "here.txt", "http://127.0.0.1:9/x") \
        == str(tmp_path / "here.txt")
    (tmp_path / "source.txt").write_text("copied")
    path = generator_utils.maybe_download(str(tmp_path / "new"), "c.txt",
                                          str(tmp_path / "source.txt"))
    assert open(path).read() == "copied"
