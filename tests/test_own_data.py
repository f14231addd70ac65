"""Your own corpus, no code: a pair t2t-lite does not ship (de->en), from a TSV and two .gz files.

t2t-datagen gets the files once; after that t2t-trainer needs only --data_dir,
and a fresh process with the raw files deleted decodes, exports and serves from
the model directory alone (no data flags, no --problem).
"""

import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

from paths import REPO_ROOT
from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.textio import read_lines

PROBLEM = "translate_deen_files"
TRAIN_PAIRS = 240
SOURCES = ["Zwei Männer stehen am Strand.", "Ein Hund läuft.", "", "Eine Frau singt."]


def _gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, request):
    """(data dir, model dir) of a de->en problem trained 3 steps from the user's files."""
    shared = REPO_ROOT.parent / "shared" / "data" / "multi30k"
    if not shared.is_dir():
        pytest.skip(f"real data samples not found at {shared}")
    root = tmp_path_factory.mktemp("own_data")
    raw = root / "raw"
    raw.mkdir()
    de = read_lines(shared / "train.de", strip="newline")[:TRAIN_PAIRS]
    en = read_lines(shared / "train.en", strip="newline")[:TRAIN_PAIRS]
    half = TRAIN_PAIRS // 2
    _gz(raw / "flickr.tsv.gz", [f"{s}\t{t}" for s, t in zip(de[:half], en[:half])])
    _gz(raw / "more.de.gz", de[half:])
    _gz(raw / "more.en.gz", en[half:])
    (raw / "dev.tsv").write_text("".join(
        f"{s}\t{t}\n" for s, t in zip(read_lines(shared / "val.de", strip="newline")[:20],
                                      read_lines(shared / "val.en", strip="newline")[:20])),
        encoding="utf-8")
    data, model = root / "data", root / "model"
    assert t2t_datagen.main([
        f"--data_dir={data}", "--source_lang=de", "--target_lang=en",
        f"--train_files={raw / 'flickr.tsv.gz'}",
        f"--train_files=more={raw / 'more.de.gz'},{raw / 'more.en.gz'}",
        f"--dev_files={raw / 'dev.tsv'}", "--vocab_size=400"]) == 0
    assert t2t_trainer.main([
        f"--data_dir={data}", "--hparams_set=transformer_tiny", f"--output_dir={model}",
        "--hparams=hidden_size=32,filter_size=64,batch_size=512", "--train_steps=3",
        "--eval_bleu_sentences=2", "--train_mix=flickr=1,more=1", "--log_every=1"]) == 0
    for path in raw.iterdir():
        path.unlink()  # nothing after training may read the raw files
    return data, model


def test_datagen_records_the_definition_and_the_corpora(trained):
    data, _ = trained
    definition = json.loads((data / f"{PROBLEM}.problem.json").read_text(encoding="utf-8"))
    assert (definition["source_language"], definition["target_language"]) == ("de", "en")
    assert [(c["name"], c["pairs"]) for c in definition["train"]] == [("flickr", 120),
                                                                       ("more", 120)]
    assert definition["dev"]["pairs"] == 20 and definition["test"] is None
    meta = json.loads((data / f"{PROBLEM}.datagen.json").read_text(encoding="utf-8"))
    assert [(c["name"], c["examples"]) for c in meta["splits"]["train"]["corpora"]] == \
        [("flickr", 120), ("more", 120)]
    assert meta["splits"]["dev"]["examples"] == 20
    assert meta["splits"]["test"]["examples"] == 0
    shared = REPO_ROOT.parent / "shared" / "data" / "multi30k"
    for lang in ("de", "en"):  # dev as text, to decode and score
        assert read_lines(data / f"{PROBLEM}-dev.{lang}", strip="newline") == \
            read_lines(shared / f"val.{lang}", strip="newline")[:20]
        assert (data / f"{PROBLEM}-test.{lang}").read_text() == ""


def test_trainer_generate_data_takes_the_same_flags(tmp_path):
    (tmp_path / "c.tsv").write_text("".join(f"eins {i}\tone {i}\n" for i in range(60)))
    assert t2t_trainer.main([
        "--generate_data", f"--data_dir={tmp_path / 'data'}", "--source_lang=de",
        "--target_lang=en", f"--train_files={tmp_path / 'c.tsv'}", "--vocab_size=300",
        "--hparams_set=transformer_tiny", "--hparams=hidden_size=32,filter_size=64",
        f"--output_dir={tmp_path / 'model'}", "--train_steps=1", "--eval_bleu_sentences=0"]) == 0
    problem = json.loads((tmp_path / "model" / "problem.json").read_text())
    assert problem["definition"]["dev"] == {"held_out": {"pairs": 3, "seed": 1234}}
    held_out = read_lines(tmp_path / "data" / "translate_deen_files-dev.de", strip="newline")
    assert len(held_out) == 3 and all(line.startswith("eins ") for line in held_out)


def test_the_model_directory_describes_the_problem(trained):
    data, model = trained
    problem = json.loads((model / "problem.json").read_text(encoding="utf-8"))
    recorded = json.loads((data / f"{PROBLEM}.problem.json").read_text(encoding="utf-8"))
    assert problem["problem"] == PROBLEM and problem["definition"] == recorded
    assert json.loads((model / "train_mix.json").read_text())["train_mix"] == "flickr=1,more=1"


_FRESH_PROCESS = textwrap.dedent("""
    import json, sys
    from t2t_lite import registry
    from t2t_lite.bin import t2t_decoder, t2t_exporter
    model, export, source, out = sys.argv[1:5]
    assert "translate_deen_files" not in registry.list_problems()
    decode = "beam_size=2,extra_length=6"
    assert t2t_decoder.main([f"--output_dir={model}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", f"--decode_hparams={decode}"]) == 0
    assert t2t_exporter.main([f"--output_dir={model}", f"--export_dir={export}",
                              f"--decode_hparams={decode}"]) == 0
    from t2t_lite.model_dir import ModelDir
    from t2t_lite.serve.engine import TFEngine
    from t2t_lite.serve.saved_model_engine import SavedModelEngine
    lines = open(source, encoding="utf-8").read().split("\\n")[:-1]
    served = [t.line for t in TFEngine.load(ModelDir.open(model), decode).translate(lines)]
    exported = [t.line for t in SavedModelEngine.load(export).translate(lines)]
    print(json.dumps({"served": served, "exported": exported,
                      "problem": registry.problem(registry.list_problems()[-1]).name}))
""")


def test_a_fresh_process_decodes_exports_and_serves_from_the_model_dir(trained, tmp_path):
    _, model = trained
    source = tmp_path / "in.de"
    source.write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    out = tmp_path / "out.en"
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS, str(model), str(tmp_path / "export"),
         str(source), str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-2000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    decoded = read_lines(out, strip="newline")
    assert len(decoded) == len(SOURCES) and decoded[2] == ""
    assert answer["served"] == decoded  # t2t-server's engine on the model directory
    assert answer["exported"] == decoded  # the SavedModel, which needs no problem at all


def test_trainer_needs_problem_only_when_the_data_dir_holds_several(trained, tmp_path, capsys):
    data, _ = trained
    (tmp_path / "other.datagen.json").write_text("{}")
    for name in os.listdir(data):
        os.symlink(data / name, tmp_path / name)
    code = t2t_trainer.main([f"--data_dir={tmp_path}", "--hparams_set=transformer_tiny",
                             f"--output_dir={tmp_path / 'm'}"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"t2t-trainer: error: --problem is needed: {tmp_path} holds 2 problems (other, "
        f"{PROBLEM}).\n")
