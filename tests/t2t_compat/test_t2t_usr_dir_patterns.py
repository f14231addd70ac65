"""t2t user directories run unchanged: t2t-datagen -> t2t-trainer -> t2t-decoder.

One directory holds the three patterns of `t2t_usr_dirs` (a Text2TextProblem
dealt into 9/1 shards, a TranslateProblem of local files, an hparams set from
transformer_base()); each problem runs through the three programs with the
hparams set, as a t2t user runs them (--t2t_usr_dir, t2t's flags). The pairs of
each split are the ones t2t's generate_data puts there.
"""

import json

import pytest

from t2t_lite import registry
from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.data import datagen

import t2t_usr_dirs
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)


@pytest.fixture
def t2t_usr(isolated_registry, tmp_path):
    usr = t2t_usr_dirs.write_usr_dir(tmp_path, "my_t2t_problems", {
        "reverse": t2t_usr_dirs.TEXT2TEXT, "toy_translate": t2t_usr_dirs.TRANSLATE,
        "toy_hparams": t2t_usr_dirs.HPARAMS})
    expected = t2t_usr_dirs.write_raw_data(tmp_path / "tmp")
    return usr, expected


def run_programs(usr, problem, tmp_path, capfd):
    """datagen -> trainer (2 steps) -> decoder (with --output_dir and --usr_dir);
    returns the data and model directories and the decoder's output lines."""
    data, model, tmp = tmp_path / f"data_{problem}", tmp_path / f"model_{problem}", tmp_path / "tmp"
    assert t2t_datagen.main([f"--t2t_usr_dir={usr}", f"--problem={problem}",
                             f"--data_dir={data}", f"--tmp_dir={tmp}"]) == 0
    assert t2t_trainer.main([f"--t2t_usr_dir={usr}", f"--problem={problem}",
                             f"--data_dir={data}", "--hparams_set=transformer_toy",
                             f"--output_dir={model}", "--train_steps=2",
                             "--eval_bleu_sentences=0"]) == 0
    (tmp_path / "in.txt").write_text("eins zwei drei\nvier\n")
    assert t2t_decoder.main([f"--usr_dir={usr}", f"--output_dir={model}",
                             f"--decode_from_file={tmp_path / 'in.txt'}",
                             f"--decode_to_file={tmp_path / 'out.txt'}",
                             "--decode_hparams=beam_size=2,extra_length=3"]) == 0
    return data, model, (tmp_path / "out.txt").read_text().splitlines()


def test_text2text_problem_with_9_1_shards_and_hparams_set(t2t_usr, tmp_path, capfd):
    usr, expected = t2t_usr
    data, model, outputs = run_programs(usr, "reverse_sentences", tmp_path, capfd)
    err = capfd.readouterr().err
    assert ("t2t-lite: the --usr_dir's tf.gfile and tf.logging are answered by TensorFlow "
            "2.21's tf.compat.v1.gfile (tf.io.gfile) and tf.compat.v1.logging.") in err
    assert ("reverse_sentences: a vocabulary t2t-datagen learns for it is a SentencePiece "
            "model of approx_vocab_size=512 pieces, whose ids differ from t2t's "
            "SubwordTextEncoder's (to encode with t2t's own vocabulary file, give t2t-datagen "
            "--vocab_from=DIR/vocab.reverse_sentences.512.subwords).") in err
    assert ("hparams set 'transformer_toy': t2t-lite has no setting for "
            "toy_note='kept by t2t, unused here'; not used.") in err
    assert len(outputs) == 2
    # t2t deals the samples over 9 train shards and 1 dev shard: every 10th is dev.
    meta = datagen.read_metadata(str(data), "reverse_sentences")
    assert (meta["splits"]["train"]["examples"], meta["splits"]["dev"]["examples"]) == (180, 20)
    problem = registry.problem("reverse_sentences")
    tmp = str(tmp_path / "tmp")
    assert list(problem.raw_pairs("dev", tmp)) == expected["reverse_dev"]
    assert list(problem.raw_pairs("train", tmp)) == expected["reverse_train"]
    assert list(problem.raw_pairs("test", tmp)) == []
    # The hparams set: t2t's transformer_base (v3) with the user's changes, t2t's meaning.
    hparams = json.loads((model / "hparams.json").read_text())
    assert {k: hparams[k] for k in ("hidden_size", "filter_size", "num_heads",
                                    "num_hidden_layers", "batch_size",
                                    "layer_prepostprocess_dropout",
                                    "learning_rate_warmup_steps", "layer_preprocess_sequence",
                                    "use_target_space_embedding", "timing_signal",
                                    "learning_rate_schedule", "optimizer_adam_beta2")} == {
        "hidden_size": 32, "filter_size": 64, "num_heads": 2, "num_hidden_layers": 1,
        "batch_size": 256, "layer_prepostprocess_dropout": 0.2,
        "learning_rate_warmup_steps": 100, "layer_preprocess_sequence": "n",
        "use_target_space_embedding": True, "timing_signal": "tensor2tensor",
        "learning_rate_schedule": "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size",
        "optimizer_adam_beta2": 0.997}


def test_translate_problem_of_local_files(t2t_usr, tmp_path, capfd):
    usr, expected = t2t_usr
    data, _, outputs = run_programs(usr, "translate_xxyy_toy", tmp_path, capfd)
    assert len(outputs) == 2
    meta = datagen.read_metadata(str(data), "translate_xxyy_toy")
    assert (meta["splits"]["train"]["examples"], meta["splits"]["dev"]["examples"]) == (150, 30)
    # compile_data's files, in tmp_dir as t2t writes them: train = the two corpora in order.
    tmp = tmp_path / "tmp"
    train = list(zip(*((tmp / f"translate_xxyy_toy-compiled-train.lang{i}")
                       .read_text().splitlines() for i in (1, 2))))
    assert train == expected["toy_train"]
    problem = registry.problem("translate_xxyy_toy")
    assert list(problem.raw_pairs("dev", str(tmp))) == expected["toy_dev"]
