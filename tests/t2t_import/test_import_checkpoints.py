"""Several t2t checkpoints imported for t2t-avg-checkpoints, and the other programs on an
imported model (t2t-attention, n-best, sampling, ensembles; alignments refused)."""

import os

import numpy as np
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.bin import t2t_attention, t2t_avg_checkpoints, t2t_decoder, t2t_import

from conftest import T2T_MODEL_A, require_t2t_model_a


def write_t2t_checkpoint(prefix: str, tensors: dict) -> None:
    """A checkpoint as t2t's TF 1.x Saver writes it: one tensor per variable name."""
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])


def test_the_last_checkpoints_are_imported_and_averaged(tmp_path, capfd):
    """A t2t directory with model.ckpt-1000 (model_a's weights halved) and
    model.ckpt-1500 (model_a's): both are imported, and their average is 0.75 of
    model_a's weights, as computed here with numpy."""
    source = require_t2t_model_a() / "output_dir"
    t2t_dir = tmp_path / "t2t_train"
    t2t_dir.mkdir()
    for name in ("hparams.json", "flags.txt"):
        (t2t_dir / name).write_bytes((source / name).read_bytes())
    reader = tf.train.load_checkpoint(str(source / "model.ckpt-1500"))
    tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
    write_t2t_checkpoint(str(t2t_dir / "model.ckpt-1500"), tensors)
    halved = {n: (v * 0.5 if n != "global_step" else np.int64(1000)) for n, v in tensors.items()}
    write_t2t_checkpoint(str(t2t_dir / "model.ckpt-1000"), halved)
    (t2t_dir / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-1500"\n'
        'all_model_checkpoint_paths: "model.ckpt-1000"\n'
        'all_model_checkpoint_paths: "model.ckpt-1500"\n')

    imported = str(tmp_path / "imported")
    assert t2t_import.main([f"--t2t_output_dir={t2t_dir}",
                            f"--t2t_data_dir={T2T_MODEL_A / 'data_dir'}",
                            f"--output_dir={imported}", "--num_last_checkpoints=2"]) == 0
    out = capfd.readouterr().out
    assert "as ckpt-1000" in out and "as ckpt-1500" in out and "(2 checkpoint(s))" in out
    averaged = str(tmp_path / "avg")
    assert t2t_avg_checkpoints.main([f"--output_dir={imported}", "--num_last_checkpoints=2",
                                     f"--avg_dir={averaged}"]) == 0
    average = model_dir_lib.ModelDir.open(averaged)
    assert average.is_imported  # the provenance travels with the average
    model = average.load_model()[0]
    full = model_dir_lib.ModelDir.open(imported).load_model(
        os.path.join(imported, "ckpt-1500"))[0]
    assert len(model.weights) == len(full.weights) > 50
    for got, weight in zip(model.weights, full.weights):
        np.testing.assert_allclose(got.numpy(), 0.75 * weight.numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=got.path)


def test_attention_pictures_of_an_imported_model(t2t_imported, tmp_path):
    npz = tmp_path / "cross.npz"
    assert t2t_attention.main([f"--output_dir={t2t_imported}", "--source=Two dogs play.",
                               "--kind=cross", f"--png={tmp_path / 'cross.png'}",
                               f"--npz={npz}"]) == 0
    maps = np.load(npz)
    # Labelled with t2t's subtokens (t2t's tokenizer drops the spaces between words).
    assert maps["source"].tolist() == ["Two_", "dogs_", "play_", "._", "<EOS>_"]
    assert maps["target"].tolist()[-1] == "<EOS>_"
    # [layers, heads, target pieces, source pieces]; each row sums to 1.
    assert maps["cross"].shape == (2, 4, len(maps["target"]), 5)
    np.testing.assert_allclose(maps["cross"].sum(axis=-1), 1.0, atol=1e-5)
    assert (tmp_path / "cross.png").stat().st_size > 1000


def test_alignments_are_refused_for_t2t_subwords(t2t_imported, tmp_path, capfd):
    source = tmp_path / "in.txt"
    source.write_text("Two dogs play.\n")
    code = t2t_decoder.main([f"--output_dir={t2t_imported}", f"--decode_from_file={source}",
                             "--decode_hparams=alignments=true"])
    assert (code, capfd.readouterr().err.strip()) == (1, (
        "t2t-decoder: error: alignments=true needs a SentencePiece vocabulary: the output "
        "words of t2t's subtokens (escaped, '_'-terminated) are not mapped yet."))


def decoder_lines(model_dirs: str, source, out, decode_hparams: str):
    assert t2t_decoder.main([f"--output_dir={model_dirs}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}",
                             f"--decode_hparams={decode_hparams}"]) == 0
    return out.read_text(encoding="utf-8").split("\n")[:-1]


def test_nbest_sampling_and_ensemble_of_an_imported_model(t2t_imported, tmp_path):
    """On 8 of t2t's test lines: the n-best list's first hypothesis and score are t2t's
    beam-4 output and score; top-1 sampling is t2t's greedy output; an ensemble of the
    model with itself (the mean of two equal distributions) is t2t's beam-4 output."""
    expected = T2T_MODEL_A / "expected"

    def read(name):
        with open(expected / name, encoding="utf-8", newline="\n") as f:
            return f.read().split("\n")[:8]

    source = tmp_path / "in.txt"
    source.write_text("\n".join(read("input.en")) + "\n", encoding="utf-8")
    nbest = decoder_lines(t2t_imported, source, tmp_path / "nbest.txt",
                          "return_beams=true,write_beam_scores=true")
    for line, text, score in zip(nbest, read("t2t.beam4.txt"), read("t2t.beam4.scores")):
        fields = line.split("\t")
        assert len(fields) == 8 and fields[0] == text  # 4 hypotheses, each with its score
        assert abs(float(fields[1]) - float(score)) < 1e-4
        assert [float(s) for s in fields[1::2]] == sorted(map(float, fields[1::2]),
                                                          reverse=True)
    sampled = decoder_lines(t2t_imported, source, tmp_path / "sampled.txt",
                            "sampling_temperature=1.0,top_k=1")
    assert sampled == read("t2t.greedy.txt")
    ensemble = decoder_lines(f"{t2t_imported},{t2t_imported}", source,
                             tmp_path / "ensemble.txt", "")
    assert ensemble == read("t2t.beam4.txt")
