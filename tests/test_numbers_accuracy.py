"""The offline default problem reaches its target through the whole pipeline.

transformer_tiny with its default train_steps on translate_ende_numbers must
reach at least 95% exact match on the held-out test numbers (issue 4). This
is the README's first command; it takes about 4 minutes on 2 CPU cores.
"""

import sys

from t2t_lite.bin import t2t_trainer


def test_transformer_tiny_reaches_95_percent_exact_match(tmp_path, capfd):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "bench"))
    from numbers_exact_match import exact_match

    model = str(tmp_path / "model")
    code = t2t_trainer.main(["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
                             "--generate_data", f"--data_dir={tmp_path}/data",
                             f"--output_dir={model}", "--eval_every=0", "--log_every=500"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "step 2000/2000" in out
    accuracy, _, errors = exact_match(model)
    assert accuracy >= 0.95, errors[:10]
