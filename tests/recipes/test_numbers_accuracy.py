"""The offline default problem reaches its target through the whole pipeline.

transformer_tiny with its default train_steps on translate_ende_numbers must
reach at least 95% exact match on the held-out test numbers (issue 4), decoded
by t2t-decoder with the problem's defaults (beam 4). This is the README's
first command; it takes about 4 minutes on 2 CPU cores.
"""

from t2t_lite import registry
from t2t_lite.bin import t2t_decoder, t2t_trainer


def test_transformer_tiny_reaches_95_percent_exact_match(tmp_path, capfd):
    model = str(tmp_path / "model")
    code = t2t_trainer.main(["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
                             "--generate_data", f"--data_dir={tmp_path}/data",
                             f"--output_dir={model}", "--eval_every=0", "--log_every=500"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "step 2000/2000" in out

    pairs = list(registry.problem("translate_ende_numbers").raw_pairs("test", None))
    assert len(pairs) == 1000
    sources, references = tmp_path / "test.en", tmp_path / "test.de"
    sources.write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    references.write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    output = tmp_path / "test.out"
    code = t2t_decoder.main([f"--output_dir={model}", f"--decode_from_file={sources}",
                             f"--decode_to_file={output}", f"--decode_reference={references}"])
    _, err = capfd.readouterr()
    assert code == 0, err
    assert "BLEU = " in err
    hypotheses = output.read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(pairs)
    errors = [(s, t, h) for (s, t), h in zip(pairs, hypotheses) if h != t]
    assert len(errors) <= 50, errors[:10]  # >= 95% exact match
