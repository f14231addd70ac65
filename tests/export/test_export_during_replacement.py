"""t2t-exporter reads `M/best` (or an average) whose replacement a kill cut short
from its previous copy, as t2t-decoder does (`atomic.readable_dir`)."""

import json
import os
import subprocess

from t2t_lite.export import exporter, versions
from t2t_lite.model_dir import ModelDir

from model_dirs import make_model_dir


def test_a_best_dir_moved_aside_is_exported_from_its_previous_copy(tmp_path):
    killed = subprocess.Popen(["true"])
    killed.wait()
    aside = tmp_path / f".best.replaced-{killed.pid}@host@k2j9x1"  # the old best/, set aside
    make_model_dir(str(aside), steps=(3,))
    best = str(tmp_path / "best")  # absent: the new one never arrived
    directory = ModelDir.open(best)
    source = exporter.load_source(directory)
    assert [os.path.basename(p) for p in source.info["checkpoints"]] == ["ckpt-3"]
    versions.write_provenance(directory, str(tmp_path / "export"), {"step": 3})
    with open(aside / "hparams.json", encoding="utf-8") as f, \
            open(tmp_path / "export" / "assets.extra" / "hparams.json", encoding="utf-8") as g:
        assert json.load(g) == json.load(f)
