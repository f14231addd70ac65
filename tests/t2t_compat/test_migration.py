"""A tensor2tensor user's migration, both halves: the checkpoint through t2t-import and the
--t2t_usr_dir unchanged. Model B (tests/t2t_import/data/model_b, trained by t2t 1.15.7)
is imported; its own user directory makes new data with its vocabulary; the imported
model is fine-tuned on it and decodes with the directory given again."""

import json
import shutil

from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_import, t2t_trainer

from paths import REPO_ROOT
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)

MODEL_B = REPO_ROOT / "tests" / "t2t_import" / "data" / "model_b"


def test_model_b_and_its_user_directory(isolated_registry, tmp_path, monkeypatch, capfd):
    imported = tmp_path / "imported"
    assert t2t_import.main([f"--t2t_output_dir={MODEL_B / 'output_dir'}",
                            f"--t2t_data_dir={MODEL_B / 'data_dir'}",
                            f"--output_dir={imported}"]) == 0
    usr = shutil.copytree(MODEL_B / "usr", tmp_path / "usr")
    raw = tmp_path / "multi30k"  # its problem reads $M30K_DIR/{train,val}.{en,de}
    raw.mkdir()
    for split, count in (("train", 60), ("val", 6)):
        (raw / f"{split}.en").write_text("".join(f"A man plays {i} songs.\n"
                                                 for i in range(count)))
        (raw / f"{split}.de").write_text("".join(f"Ein Mann spielt {i} Lieder.\n"
                                                 for i in range(count)))
    monkeypatch.setenv("M30K_DIR", str(raw))
    problem = "--problem=translate_ende_multi30k_tiny"
    data, tuned = tmp_path / "data", tmp_path / "tuned"
    assert t2t_datagen.main([f"--t2t_usr_dir={usr}", problem, f"--data_dir={data}",
                             f"--vocab_from={imported}"]) == 0
    meta = json.loads((data / "translate_ende_multi30k_tiny.datagen.json").read_text())
    assert (meta["vocab_size"], meta["splits"]["train"]["examples"]) == (513, 60)
    assert t2t_trainer.main([f"--t2t_usr_dir={usr}", problem, f"--data_dir={data}",
                             f"--warm_start_from={imported}", f"--output_dir={tuned}",
                             "--train_steps=2", "--eval_bleu_sentences=0"]) == 0
    assert json.loads((tuned / "usr_dir.json").read_text())["problem"] == \
        "translate_ende_multi30k_tiny"
    (tmp_path / "in.txt").write_text("A man plays songs.\n")
    capfd.readouterr()
    assert t2t_decoder.main([f"--t2t_usr_dir={usr}", f"--output_dir={tuned}",
                             f"--decode_from_file={tmp_path / 'in.txt'}",
                             f"--decode_to_file={tmp_path / 'out.txt'}",
                             "--decode_hparams=beam_size=2,extra_length=5"]) == 0
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 1
