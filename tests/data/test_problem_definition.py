"""The problem definition as a typed value: the JSON it writes, byte for byte, and back.

The definition files of data and model directories written before the typed
value existed must keep loading, and new ones must be written exactly as then:
the expected files are written out literally here.
"""

import json

import pytest

from registry_isolation import isolated_registry  # noqa: F401 (a fixture)
from t2t_lite import model_dir, model_dir_writer, registry
from t2t_lite.bin import problem_flags, t2t_datagen
from t2t_lite.data import definitions
from t2t_lite.data.problem import Problem
from t2t_lite.data.problem_definition import HeldOut, ProblemDefinition, SplitFiles, TrainCorpus
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

NAME = "translate_xy_literal"


def write_corpora(d):
    """Two train corpora (one named, one with a non-ASCII file name), aligned dev files."""
    (d / "news.tsv").write_text("a\tb\nc\td\ne\tf\n", encoding="utf-8")
    (d / "korpus-ü.tsv").write_text("g\th\ni\tj\n", encoding="utf-8")
    (d / "dev.x").write_text("k\nl\n", encoding="utf-8")
    (d / "dev.y").write_text("m\nn\n", encoding="utf-8")


def define(d, *flags):
    """The problem defined by t2t-datagen's files flags (nothing encoded)."""
    args = t2t_datagen.parse_args([f"--data_dir={d / 'data'}", f"--problem={NAME}",
                                   "--source_lang=x", "--target_lang=y",
                                   f"--train_files=news={d / 'news.tsv'}",
                                   f"--train_files={d / 'korpus-ü.tsv'}", *flags])
    return problem_flags.resolve_problem(args, log=lambda line: None)


def literal_json(d):
    """The definition of `define(d, --dev_files=...)`, written out."""
    return {
        "kind": "text_files",
        "version": 1,
        "name": NAME,
        "source_language": "x",
        "target_language": "y",
        "vocab_size": 8000,
        "train": [
            {"name": "news", "files": [f"{d}/news.tsv"], "pairs": 3},
            {"name": "korpus-ü", "files": [f"{d}/korpus-ü.tsv"], "pairs": 2},
        ],
        "dev": {"files": [f"{d}/dev.x", f"{d}/dev.y"], "pairs": 2},
        "test": None,
    }


def test_the_data_directory_file_is_written_as_before(tmp_path):
    write_corpora(tmp_path)
    define(tmp_path, f"--dev_files={tmp_path / 'dev.x'},{tmp_path / 'dev.y'}")
    written = (tmp_path / "data" / f"{NAME}.problem.json").read_text(encoding="utf-8")
    assert written == f"""{{
  "kind": "text_files",
  "version": 1,
  "name": "{NAME}",
  "source_language": "x",
  "target_language": "y",
  "vocab_size": 8000,
  "train": [
    {{
      "name": "news",
      "files": [
        "{tmp_path}/news.tsv"
      ],
      "pairs": 3
    }},
    {{
      "name": "korpus-ü",
      "files": [
        "{tmp_path}/korpus-ü.tsv"
      ],
      "pairs": 2
    }}
  ],
  "dev": {{
    "files": [
      "{tmp_path}/dev.x",
      "{tmp_path}/dev.y"
    ],
    "pairs": 2
  }},
  "test": null
}}
"""
    assert json.loads(written) == literal_json(tmp_path)


def test_the_model_directory_problem_json_is_written_as_before(tmp_path):
    """Its copy of the definition, ASCII-escaped as problem.json always was."""
    write_corpora(tmp_path)
    problem = define(tmp_path, f"--test_files={tmp_path / 'dev.x'},{tmp_path / 'dev.y'}")
    vocab = tmp_path / "v.model"
    vocab.write_bytes(b"pieces")
    model_dir_writer.prepare(str(tmp_path / "m"), HParams(), NAME, str(vocab), 300, None,
                             definition=problem.definition)
    dev = ('"test": {\n      "files": [\n'
           f'        "{tmp_path}/dev.x",\n        "{tmp_path}/dev.y"\n'
           '      ],\n      "pairs": 2\n    }')
    assert (tmp_path / "m" / "problem.json").read_text(encoding="ascii") == (
        f'{{\n  "problem": "{NAME}",\n  "vocab_file": "v.model",\n  "vocab_size": 300,\n'
        '  "definition": {\n    "kind": "text_files",\n    "version": 1,\n'
        f'    "name": "{NAME}",\n    "source_language": "x",\n    "target_language": "y",\n'
        '    "vocab_size": 8000,\n    "train": [\n'
        f'      {{\n        "name": "news",\n        "files": [\n'
        f'          "{tmp_path}/news.tsv"\n        ],\n        "pairs": 3\n      }},\n'
        f'      {{\n        "name": "korpus-\\u00fc",\n        "files": [\n'
        f'          "{tmp_path}/korpus-\\u00fc.tsv"\n        ],\n        "pairs": 2\n      }}\n'
        '    ],\n    "dev": {\n      "held_out": {\n        "pairs": 1,\n'
        f'        "seed": 1234\n      }}\n    }},\n    {dev}\n  }}\n}}')
    assert model_dir.ModelDir.open(str(tmp_path / "m")).definition == ProblemDefinition(
        NAME, "x", "y", 8000,
        (TrainCorpus("news", (f"{tmp_path}/news.tsv",), 3),
         TrainCorpus("korpus-ü", (f"{tmp_path}/korpus-ü.tsv",), 2)),
        HeldOut(pairs=1, seed=1234), SplitFiles((f"{tmp_path}/dev.x", f"{tmp_path}/dev.y"), 2))


def test_json_round_trip(tmp_path):
    stored = literal_json(tmp_path)
    definition = ProblemDefinition.from_json(stored, "W")
    assert definition == ProblemDefinition(
        name=NAME, source_language="x", target_language="y", vocab_size=8000,
        train=(TrainCorpus("news", (f"{tmp_path}/news.tsv",), 3),
               TrainCorpus("korpus-ü", (f"{tmp_path}/korpus-ü.tsv",), 2)),
        dev=SplitFiles((f"{tmp_path}/dev.x", f"{tmp_path}/dev.y"), 2), test=None, version=1)
    assert definition.held_out is None
    assert definition.split_files("dev") == (f"{tmp_path}/dev.x", f"{tmp_path}/dev.y")
    assert definition.split_files("test") == ()
    assert definition.to_json() == stored
    assert list(definition.to_json()) == ["kind", "version", "name", "source_language",
                                          "target_language", "vocab_size", "train", "dev", "test"]
    held_out = dict(stored, dev={"held_out": {"pairs": 1, "seed": 1234}},
                    test={"files": [f"{tmp_path}/t.tsv"], "pairs": 4})
    definition = ProblemDefinition.from_json(held_out, "W")
    assert (definition.dev, definition.held_out, definition.test) == (
        HeldOut(1, 1234), HeldOut(1, 1234), SplitFiles((f"{tmp_path}/t.tsv",), 4))
    assert definition.split_files("dev") == ()
    assert definition.to_json() == held_out


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["train"][1].update(pairs=0),
     "Corrupt problem definition in W: train[1].pairs is 0, expected a whole number of pairs."),
    (lambda d: d["dev"].update(files=[]),
     "Corrupt problem definition in W: dev.files is [], expected a list of one or two file "
     "names."),
    (lambda d: d.update(target_language=""),
     'Corrupt problem definition in W: target_language is "", expected a language code.'),
    (lambda d: d.update(kind="text"), "Corrupt problem definition in W."),
    (lambda d: d.pop("test"), "Corrupt problem definition in W."),
    (lambda d: d.update(version=2),
     "W holds a problem definition of a newer t2t-lite (version 2); upgrade t2t-lite."),
])
def test_a_field_of_the_wrong_type_is_one_line(edit, message, tmp_path):
    stored = literal_json(tmp_path)
    edit(stored)
    with pytest.raises(T2TError) as e:
        ProblemDefinition.from_json(stored, "W")
    assert str(e.value) == message


def test_define_problem_takes_plain_values(tmp_path):
    """The files flags' policy, without argparse: the default name and vocabulary
    size, the definition written and registered."""
    write_corpora(tmp_path)
    logged = []
    problem = definitions.define_problem(
        str(tmp_path / "data"), None, "x", "y", [f"news={tmp_path / 'news.tsv'}"], None,
        f"{tmp_path / 'dev.x'},{tmp_path / 'dev.y'}", None, log=logged.append)
    assert logged == ["No --dev_files: holding out 1 of the 3 train pairs as dev (seed 1234; "
                      "they and their duplicates are left out of train)."]
    assert problem.definition == ProblemDefinition(
        "translate_xy_files", "x", "y", 8000, (TrainCorpus("news", (f"{tmp_path}/news.tsv",), 3),),
        HeldOut(1, 1234), SplitFiles((f"{tmp_path}/dev.x", f"{tmp_path}/dev.y"), 2))
    assert definitions.read(str(tmp_path / "data" / "translate_xy_files.problem.json")) == \
        problem.definition


@pytest.mark.parametrize("values, message", [
    ((None, "x", None, ["a.tsv"]), "A problem defined by files needs --target_lang, --data_dir."),
    (("D", "", "y", []), "A problem defined by files needs --source_lang, --train_files."),
])
def test_define_problem_names_the_missing_flags(values, message):
    data_dir, source, target, train = values
    with pytest.raises(T2TError) as e:
        definitions.define_problem(data_dir, None, source, target, train, None, None, None)
    assert str(e.value) == message


def test_define_problem_refuses_a_usr_dir_problem_name(isolated_registry, tmp_path):
    write_corpora(tmp_path)
    with registry.user_code("/my/usr_dir"):
        @registry.register_problem("translate_xy_mine")
        class Mine(Problem):
            pass
    with pytest.raises(T2TError) as e:
        definitions.define_problem(str(tmp_path / "data"), "translate_xy_mine", "x", "y",
                                   [str(tmp_path / "news.tsv")], None, None, None)
    assert str(e.value) == ("--problem=translate_xy_mine is the name of a --usr_dir /my/usr_dir "
                            "problem: give your files' problem another --problem name.")
    assert not (tmp_path / "data").exists()


def test_a_damaged_definition_stops_opening_the_model_directory(tmp_path):
    """ModelDir.open raises every Corrupt error itself, the recorded definition's too
    (not later, when a program first builds the problem)."""
    write_corpora(tmp_path)
    problem = define(tmp_path)
    vocab = tmp_path / "v.model"
    vocab.write_bytes(b"pieces")
    model_dir_writer.prepare(str(tmp_path / "m"), HParams(), NAME, str(vocab), 300, None,
                             definition=problem.definition)
    path = tmp_path / "m" / "problem.json"
    info = json.loads(path.read_text())
    info["definition"]["version"] = "1"
    path.write_text(json.dumps(info))
    with pytest.raises(T2TError, match=r'^Corrupt problem definition in .*problem\.json: '
                                       r'version is "1", expected a whole number\.$'):
        model_dir.ModelDir.open(str(tmp_path / "m"))
