"""Fine-tuning a model imported from tensor2tensor on new data: `t2t-datagen --vocab_from=M`
encodes with t2t's SubwordTextEncoder vocabulary, `t2t-trainer --warm_start_from=M` starts
from its weights (learning rate 0 here, so they must come out unchanged)."""

import json
import os

import numpy as np
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib, registry
from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.data.t2t_subwords import T2TSubwordVocab

from conftest import NUMBERS, T2T_MODEL_A

VOCAB = "vocab.translate_ende_multi30k.8192.subwords"
QUIET = ["--eval_every=0", "--eval_bleu_sentences=0", "--save_checkpoints_steps=0",
         "--save_checkpoints_secs=0", "--log_every=100"]


def test_datagen_and_trainer_take_the_imported_vocabulary_and_weights(
        t2t_imported, tmp_path, capfd):
    data_dir = str(tmp_path / "data")
    assert t2t_datagen.main([f"--problem={NUMBERS}", f"--data_dir={data_dir}",
                             f"--vocab_from={t2t_imported}"]) == 0
    out = capfd.readouterr().out
    assert f"{NUMBERS}.subwords copied from" in out
    with open(os.path.join(data_dir, f"{NUMBERS}.subwords"), "rb") as f:
        assert f.read() == (T2T_MODEL_A / "data_dir" / VOCAB).read_bytes()
    with open(os.path.join(data_dir, f"{NUMBERS}.datagen.json"), encoding="utf-8") as f:
        meta = json.load(f)
    assert meta["vocab_file"] == f"{NUMBERS}.subwords" and meta["vocab_size"] == 8079
    # The dev shard holds t2t's ids of the problem's pairs (the vocabulary's ids are
    # checked against t2t's own in tests/data/test_t2t_subwords.py).
    vocab = T2TSubwordVocab.from_file(str(T2T_MODEL_A / "data_dir" / VOCAB))
    pairs = list(registry.problem(NUMBERS).raw_pairs("dev", None))[:20]
    [shard] = meta["splits"]["dev"]["shards"]
    for record, (source, target) in zip(
            tf.data.TFRecordDataset(os.path.join(data_dir, shard)).take(20), pairs):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        assert list(features["inputs"].int64_list.value) == vocab.encode_texts([source])[0]
        assert list(features["targets"].int64_list.value) == vocab.encode_texts([target])[0]
    # Run again without --vocab_from: the t2t vocabulary is found and kept.
    assert t2t_datagen.main([f"--problem={NUMBERS}", f"--data_dir={data_dir}"]) == 0
    assert f"reusing {NUMBERS}.subwords (8079 subwords)" in capfd.readouterr().out

    tuned = str(tmp_path / "tuned")
    code = t2t_trainer.main([f"--warm_start_from={t2t_imported}", f"--problem={NUMBERS}",
                             f"--data_dir={data_dir}", f"--output_dir={tuned}",
                             "--train_steps=2", "--hparams=learning_rate_constant=0",
                             *QUIET])
    captured = capfd.readouterr()
    assert code == 0, captured.err
    assert f"Weights from {t2t_imported}/ckpt-1500" in captured.out
    imported_model = model_dir_lib.ModelDir.open(t2t_imported).load_model()[0]
    tuned_model, used = model_dir_lib.ModelDir.open(tuned).load_model()
    assert used == [os.path.join(tuned, "ckpt-2")]
    assert len(tuned_model.weights) == len(imported_model.weights) > 50
    for got, expected in zip(tuned_model.weights, imported_model.weights):
        assert got.path.split("/", 1)[1] == expected.path.split("/", 1)[1]  # no model counter
        np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=got.path)
    with open(os.path.join(tuned, "hparams.json"), encoding="utf-8") as f:
        hparams = json.load(f)
    assert hparams["timing_signal"] == "tensor2tensor" and hparams["use_target_space_embedding"]

    # The fine-tuned model (unchanged weights) translates as the imported one.
    source = tmp_path / "in.txt"
    source.write_text("A man in an orange hat starring at something.\nTwo dogs play.\n")
    outputs = []
    for model in (t2t_imported, tuned):
        path = tmp_path / f"out{len(outputs)}.txt"
        assert t2t_decoder.main([f"--output_dir={model}", f"--decode_from_file={source}",
                                 f"--decode_to_file={path}",
                                 "--decode_hparams=beam_size=2,alpha=0.6,extra_length=20"]) == 0
        outputs.append(path.read_text())
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 2
