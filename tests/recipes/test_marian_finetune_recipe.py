"""The Marian fine-tuning recipe (recipes/marian_finetune.py) end to end on a slice of Multi30k.

The recipe imports a Hugging Face Marian directory, encodes Multi30k with its vocabulary,
fine-tunes it and scores both models. Here the Marian directory is transformers' own en->de
reference model (tests/t2t_import/marian/shared_swish: number words only), Multi30k is cut to
200 training pairs and 3 lines per scored set, and fine-tuning runs 4 steps.
"""

import json
import subprocess
import sys

from paths import REPO_ROOT

SLICE = {"train": 200, "val": 3, "test_2016_flickr": 3}
MARIAN = REPO_ROOT / "tests" / "t2t_import" / "marian" / "shared_swish"


def test_recipe_imports_fine_tunes_and_scores_both_models(shared_data, tmp_path):
    (tmp_path / "shared" / "multi30k").mkdir(parents=True)
    for stem, count in SLICE.items():
        for lang in ("en", "de"):
            with open(shared_data / "multi30k" / f"{stem}.{lang}", encoding="utf-8") as f:
                lines = [next(f) for _ in range(count)]
            (tmp_path / "shared" / "multi30k" / f"{stem}.{lang}").write_text(
                "".join(lines), encoding="utf-8")
    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "recipes" / "marian_finetune.py"),
         f"--marian_dir={MARIAN}", f"--shared_data={tmp_path / 'shared'}", f"--work_dir={work}",
         "--finetune_steps=4", "--max_output_length=6",
         "--finetune_hparams=learning_rate_warmup_steps=1,learning_rate=0.01,tokens_per_step=0,"
         "batch_size=512"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    results = json.loads((work / "results.json").read_text(encoding="utf-8"))
    assert results["finetune_steps"] == 4
    warm = json.loads((work / "finetuned" / "warm_start.json").read_text(encoding="utf-8"))
    assert warm["model_dir"] == str(work / "imported")
    assert (work / "finetuned" / "ckpt-4.index").exists()
    # The imported model knows number words only; 4 steps on captions lower its dev loss.
    before = results["imported"]["dev_loss"]["multi30k_val"]["nll"]
    after = results["finetuned"]["dev_loss"]["multi30k_val"]["nll"]
    assert after < before
    for model in ("imported", "finetuned"):
        assert set(results[model]["bleu"]) == {"val", "test_2016_flickr"}
        for name in ("val", "test_2016_flickr"):
            out = (work / f"{model}.{name}.de").read_text(encoding="utf-8").split("\n")
            assert len(out) == 4 and out[-1] == ""  # one line per source line
