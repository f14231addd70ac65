"""--usr_dir: a user's problems and hparams sets from a directory outside the repository.

The user directory is the complete example of docs/from-tensor2tensor.md (its two
files, read from the page), and datagen -> trainer -> decoder run its commands; the
model directory records the directory (path, hash) but never imports it: a decoder
without it is refused in one line; one given a copy at another path (or a symlink),
or changed files, is told in one line. Every test restores the registries.
"""

import json
import re
import shutil

import pytest

from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.errors import T2TError
from docs_commands import commands
from paths import REPO_ROOT
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)

DOCS_PAGE = REPO_ROOT / "docs" / "from-tensor2tensor.md"
# {"my_usr/__init__.py": source, "my_usr/words.py": source} of the page's example.
EXAMPLE = dict(re.findall(r"^`(my_usr/\w+\.py)`:\n\n```python\n(.*?)^```",
                          DOCS_PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL))
USR_PROBLEM = EXAMPLE["my_usr/words.py"]


def make_usr_dir(parent, name="my_usr", body=USR_PROBLEM):
    """The page's example directory (`body` for its words.py) as `parent/name`."""
    path = parent / name
    path.mkdir()
    (path / "__init__.py").write_text(EXAMPLE["my_usr/__init__.py"])
    (path / "words.py").write_text(body)
    return path


def decode(usr, model, tmp_path):
    """t2t-decoder with --usr_dir=usr on in.txt into out.txt; its exit code."""
    return t2t_decoder.main([f"--usr_dir={usr}", f"--output_dir={model}",
                             f"--decode_from_file={tmp_path / 'in.txt'}",
                             f"--decode_to_file={tmp_path / 'out.txt'}",
                             "--decode_hparams=beam_size=1,extra_length=3"])


def test_the_docs_example_datagen_trainer_decoder(isolated_registry, tmp_path, monkeypatch,
                                                  capfd):
    # capfd: while a program runs, its messages go to the process's stderr descriptor.
    assert sorted(EXAMPLE) == ["my_usr/__init__.py", "my_usr/words.py"]
    datagen, trainer, decoder = [c for c in commands(DOCS_PAGE) if "--usr_dir=my_usr" in c.argv]
    assert [datagen.program, trainer.program, decoder.program] == [
        "t2t-datagen", "t2t-trainer", "t2t-decoder"]
    monkeypatch.chdir(tmp_path)
    usr = make_usr_dir(tmp_path)
    data, model = tmp_path / "data_words", tmp_path / "model_words"
    assert t2t_datagen.main(datagen.argv) == 0
    # The page trains 600 steps (measured there); 2 show that the example trains.
    assert t2t_trainer.main(trainer.argv + ["--train_steps=2", "--eval_bleu_sentences=0"]) == 0
    meta = json.loads((data / "translate_words_reversed.datagen.json").read_text())
    assert {s: meta["splits"][s]["examples"] for s in ("train", "dev", "test")} == {
        "train": 5000, "dev": 100, "test": 100}
    recorded = json.loads((model / "usr_dir.json").read_text())
    assert recorded == {"path": str(usr), "sha256": usr_dir.python_files_sha256(str(usr)),
                        "problem": "translate_words_reversed", "hparams_set": "transformer_words"}
    hparams = json.loads((model / "hparams.json").read_text())
    assert (hparams["hidden_size"], hparams["filter_size"], hparams["batch_size"],
            hparams["learning_rate_warmup_steps"]) == (64, 256, 1024, 200)
    (tmp_path / "in.txt").write_text("one two three\nten nine eight seven six five\n")
    capfd.readouterr()
    assert t2t_decoder.main(decoder.argv) == 0
    outputs = capfd.readouterr()
    assert len(outputs.out.splitlines()) == 2
    assert "--usr_dir" not in outputs.err

    # A process that was not given the directory (as a fresh one) is refused in one line.
    usr_dir._imported = None
    assert t2t_decoder.main([f"--output_dir={model}",
                             f"--decode_from_file={tmp_path / 'in.txt'}"]) == 1
    assert capfd.readouterr().err == (
        f"t2t-decoder: error: {model} was trained on problem 'translate_words_reversed' of "
        f"--usr_dir={usr}: pass --usr_dir with a directory that registers it.\n")

    # A byte-identical copy elsewhere (the model moved with its code): decoded, said in one line.
    copy = shutil.copytree(usr, tmp_path / "elsewhere" / usr.name)
    assert decode(copy, model, tmp_path) == 0
    assert (f"--usr_dir={copy}: {model} was trained with --usr_dir={usr}; this one has the "
            "same Python files (SHA-256).\n") in capfd.readouterr().err

    # Changed Python files: decoded all the same, said in one line.
    with open(usr / "words.py", "a") as f:
        f.write("# changed\n")
    assert decode(usr, model, tmp_path) == 0
    assert (f"--usr_dir={usr}: its Python files differ from the ones {model} was trained "
            "with; its problems and hparams sets may have changed.\n") in capfd.readouterr().err


def trained_record(tmp_path, usr):
    """A model directory whose usr_dir.json says it was trained with `usr` as it is now."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "usr_dir.json").write_text(json.dumps({
        "path": str(usr), "sha256": usr_dir.python_files_sha256(str(usr)),
        "problem": "translate_words_reversed", "hparams_set": "transformer_words"}))
    return model


def recorded(model) -> dict:
    """The usr_dir.json `trained_record` wrote, as a model directory holds it."""
    return json.loads((model / "usr_dir.json").read_text())


@pytest.mark.parametrize("given, line", [
    ("the same path", None),
    ("a symlink to it", None),
    ("a copy", "--usr_dir={given}: {model} was trained with --usr_dir={usr}; this one has the "
               "same Python files (SHA-256)."),
    ("a symlink to a copy", "--usr_dir={given}: {model} was trained with --usr_dir={usr}; this "
                            "one has the same Python files (SHA-256)."),
    ("a changed copy", "--usr_dir={given}: {model} was trained with --usr_dir={usr}; this one "
                       "has other Python files (SHA-256): its problems and hparams sets may "
                       "have changed."),
])
def test_a_model_accepts_its_user_directory_at_any_path(isolated_registry, tmp_path, given,
                                                        line):
    usr = make_usr_dir(tmp_path)
    model = trained_record(tmp_path, usr)
    path = usr
    if "copy" in given:
        path = shutil.copytree(usr, tmp_path / "copied" / usr.name)
        if given == "a changed copy":
            with open(path / "words.py", "a") as f:
                f.write("# changed\n")
    if "symlink" in given:
        (tmp_path / "linked").mkdir()
        (tmp_path / "linked" / usr.name).symlink_to(path, target_is_directory=True)
        path = tmp_path / "linked" / usr.name
    usr_dir.import_usr_dir(str(path))
    lines = []
    usr_dir.check_model(str(model), recorded(model), note=lines.append)
    assert lines == ([] if line is None else [line.format(given=path, model=model, usr=usr)])


def test_a_directory_that_does_not_register_the_model_s_problem_is_refused(
        isolated_registry, tmp_path):
    usr = make_usr_dir(tmp_path)
    model = trained_record(tmp_path, usr)
    (tmp_path / "other").mkdir()
    other = make_usr_dir(tmp_path / "other", body=USR_PROBLEM.replace(
        "class TranslateWordsReversed", "class TranslateWordsBackwards"))
    usr_dir.import_usr_dir(str(other))
    with pytest.raises(T2TError) as raised:
        usr_dir.check_model(str(model), recorded(model))
    assert str(raised.value) == (
        f"{model} was trained on problem 'translate_words_reversed' of --usr_dir={usr}: pass "
        f"--usr_dir with a directory that registers it (--usr_dir={other} does not register "
        "it).")


def test_a_user_problem_replaces_a_built_in_of_the_same_name(isolated_registry, tmp_path,
                                                              capsys):
    body = USR_PROBLEM.replace("@registry.register_problem\n",
                               '@registry.register_problem("translate_ende_numbers")\n')
    usr = make_usr_dir(tmp_path, "shadowing_usr", body)
    usr_dir.import_usr_dir(str(usr))
    assert capsys.readouterr().err == (
        f"The problem 'translate_ende_numbers' of --usr_dir {usr} replaces the built-in one.\n")
    assert type(registry.problem("translate_ende_numbers")).__name__ == "TranslateWordsReversed"
    assert registry.problem_origin("translate_ende_numbers") == str(usr)


def test_the_built_in_is_back_after_the_test():
    # Runs after the test above in the same process (one worker per module).
    assert type(registry.problem("translate_ende_numbers")).__name__ == "TranslateEndeNumbers"


@pytest.mark.parametrize("body, line, message", [
    ("x = 1\nraise ValueError('no corpus here')\n", 2, "ValueError: no corpus here"),
    ("def broken(:\n", 1, "SyntaxError: invalid syntax"),
    ("import not_a_module_anywhere\n", 1,
     "ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
])
def test_a_failing_import_names_the_file_line_and_error(isolated_registry, tmp_path, capsys,
                                                         body, line, message):
    usr = make_usr_dir(tmp_path, "failing_usr", body)
    assert t2t_datagen.main([f"--usr_dir={usr}", "--problem=x", f"--data_dir={tmp_path}"]) == 1
    assert capsys.readouterr().err == (
        f"t2t-datagen: error: --usr_dir={usr} failed to import: {usr / 'words.py'}:{line}: "
        f"{message}\n")


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "absent", "--usr_dir={p}/absent: not a directory."),
    (lambda p: (p / "no_init").mkdir() or p / "no_init",
     "--usr_dir={p}/no_init has no __init__.py: it is imported as a Python package, whose "
     "__init__.py imports the modules that register problems and hparams sets."),
])
def test_a_directory_that_is_no_package_is_one_line(isolated_registry, tmp_path, capsys, make,
                                                    message):
    usr = make(tmp_path)
    assert t2t_datagen.main([f"--usr_dir={usr}", "--problem=x", f"--data_dir={tmp_path}"]) == 1
    assert capsys.readouterr().err == f"t2t-datagen: error: {message.format(p=tmp_path)}\n"


def test_unknown_names_suggest_the_user_directory_s_names(isolated_registry, tmp_path, capsys):
    usr = make_usr_dir(tmp_path)
    assert t2t_trainer.main([f"--usr_dir={usr}", "--problem=translate_words_revresed",
                             f"--data_dir={tmp_path}", "--hparams_set=transformer_words",
                             f"--output_dir={tmp_path / 'm'}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("t2t-trainer: error: Unknown problem 'translate_words_revresed'. "
                          "Did you mean 'translate_words_reversed'")
    assert t2t_trainer.main([f"--usr_dir={usr}", "--problem=translate_words_reversed",
                             f"--data_dir={tmp_path}", "--hparams_set=transformer_wrods",
                             f"--output_dir={tmp_path / 'm'}"]) == 1
    assert "Did you mean 'transformer_words'" in capsys.readouterr().err
