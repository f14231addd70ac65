"""Fine-tuning a model imported from Hugging Face Marian on one's own pairs: `t2t-datagen
--vocab_from=M` encodes the sources with the source side and the targets with the target side
(transformers' ids, from tests/t2t_import/marian/*/expected/logprobs.npz), and `t2t-trainer
--warm_start_from=M` starts from the imported weights: its first training loss and dev loss are
transformers' teacher-forced losses of those pairs, and the fine-tuned model decodes with the
imported model's generation settings.
"""

import contextlib
import io
import json
import pathlib
import re

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.decode.search import SearchParams
from t2t_lite.marian import vocab_file
from t2t_lite.model_dir import ModelDir
from t2t_lite.model_dir_writer import copy_metadata

from test_marian_import import MARIAN, imported, run  # noqa: F401 (imported: a fixture)

# t2t-import's translation of the reference models' generation_config.json (num_beams 4 or 6,
# length_penalty 1.0, bad_words_ids [[pad]], forced_eos_token_id, renormalize_logits true,
# max_length 512): what a model fine-tuned from them decodes with by default.
GENERATION = {"alpha": 1.0, "length_penalty": "fairseq", "stop_rule": "transformers",
              "forbid_pad": True, "forced_eos": True, "renormalize": True,
              "max_output_length": 511}


def pairs(name):
    return (MARIAN / name / "expected" / "pairs.tsv").read_text(encoding="utf-8").splitlines()


def t2t_lite_ids(marian_ids, vocab_size):
    """transformers' ids -> t2t-lite's (`</s>` 0 -> 1, `<unk>` 1 -> 2, `<pad>` V-1 -> 0,
    every other id m -> m + 1): the renumbering docs/pretrained.md describes."""
    return [{0: 1, 1: 2, vocab_size - 1: 0}.get(int(m), int(m) + 1) for m in marian_ids]


def records(path):
    for record in tf.data.TFRecordDataset(str(path)):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        yield (list(features["inputs"].int64_list.value),
               list(features["targets"].int64_list.value))


@pytest.fixture(scope="module")
def encoded(imported, tmp_path_factory):
    """(flags, output) of t2t-datagen --vocab_from=<multilingual_gelu imported>: train pair
    12 of pairs.tsv 24 times (every batch holds only it), dev all 30 pairs."""
    tmp = tmp_path_factory.mktemp("encoded")
    (tmp / "train.tsv").write_text((pairs("multilingual_gelu")[12] + "\n") * 24)
    flags = [f"--data_dir={tmp / 'data'}", "--source_lang=en", "--target_lang=mul",
             f"--train_files={tmp / 'train.tsv'}",
             f"--dev_files={MARIAN / 'multilingual_gelu' / 'expected' / 'pairs.tsv'}"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = t2t_datagen.main([*flags, f"--vocab_from={imported('multilingual_gelu')}"])
    assert code == 0
    return flags, out.getvalue()


def test_datagen_encodes_each_side_with_its_own_vocabulary(capfd, imported, encoded):
    """multilingual_gelu: source.spm and target.spm differ, the sources start with >>deu<< or
    >>fra<<; the dev records hold transformers' source and target ids of every pair."""
    model = imported("multilingual_gelu")
    flags, out = encoded
    data = pathlib.Path(flags[0].split("=", 1)[1])
    copied = data / "translate_enmul_files.marian_vocab.json"
    assert (f"vocabulary: {copied.name} copied from {model / 'marian_vocab.json'} "
            "(240 pieces)") in out
    assert vocab_file.is_vocab_file(str(copied))
    assert copied.read_bytes() == (model / "marian_vocab.json").read_bytes()
    meta = json.loads((data / "translate_enmul_files.datagen.json").read_text())
    assert (meta["vocab_file"], meta["vocab_size"]) == (copied.name, 240)
    expected = np.load(MARIAN / "multilingual_gelu" / "expected" / "logprobs.npz")
    got = list(records(data / "translate_enmul_files-dev-00000-of-00001"))
    assert len(got) == 30
    for i, (inputs, targets) in enumerate(got):
        assert inputs == t2t_lite_ids(expected[f"src_{i}"], 240), i
        assert targets == t2t_lite_ids(expected[f"tgt_{i}"], 240), i
    # Again without --vocab_from: the copy is found and reused, the shards too.
    code, out, err = run(capfd, t2t_datagen, *flags)
    assert code == 0, err
    assert (f"vocabulary: reusing {copied.name} (an imported Marian model's: 240 source and "
            "240 target ids)") in out
    assert "train: reusing 24 examples" in out


def test_a_multilingual_training_pair_without_its_language_token_is_refused(
        capfd, imported, tmp_path):
    lines = pairs("multilingual_gelu")[:6]
    lines[4] = lines[4].split(" ", 1)[1]  # without its ">>deu<< "
    (tmp_path / "train.tsv").write_text("\n".join(lines) + "\n")
    (tmp_path / "dev.tsv").write_text(pairs("multilingual_gelu")[6] + "\n")
    source = lines[4].split("\t")[0]
    code, _, err = run(capfd, t2t_datagen, f"--data_dir={tmp_path / 'data'}",
                       "--source_lang=en", "--target_lang=mul",
                       f"--train_files={tmp_path / 'train.tsv'}",
                       f"--dev_files={tmp_path / 'dev.tsv'}",
                       f"--vocab_from={imported('multilingual_gelu')}")
    assert code == 1
    assert err.strip().splitlines() == [
        "t2t-datagen: error: translate_enmul_files, train split, corpus train: This model "
        "translates into several languages: each line must start with the token of the "
        "language to translate into, one of >>deu<<, >>fra<<, >>spa<<. "
        f"Refused pair 5: {source!r}."]
    assert not list((tmp_path / "data").glob("*-train-*"))


def test_subword_sampling_with_a_marian_vocabulary_is_refused(capfd, imported, tmp_path):
    (tmp_path / "train.tsv").write_text("\n".join(pairs("multilingual_gelu")[:4]) + "\n")
    code, _, err = run(capfd, t2t_datagen, f"--data_dir={tmp_path / 'data'}",
                       "--source_lang=en", "--target_lang=mul",
                       f"--train_files={tmp_path / 'train.tsv'}", "--subword_samples=2",
                       f"--vocab_from={imported('multilingual_gelu')}")
    assert code == 1
    assert err.strip().splitlines() == [
        "t2t-datagen: error: Subword sampling (--subword_samples) needs a SentencePiece "
        "vocabulary; this problem's is translate_enmul_files.marian_vocab.json (a "
        "vocabulary of a Hugging Face Marian model imported with t2t-import)."]


def test_fine_tuning_starts_from_the_imported_weights_and_decodes_as_transformers(
        capfd, imported, encoded, tmp_path):
    """multilingual_gelu, learning rate 0, dropout and label smoothing off: the first
    training loss is transformers' mean -log p of the training pair's target tokens, the dev
    loss that of the 30 dev pairs (a fresh model's would be near log(240) = 5.48); the
    fine-tuned model keeps the imported model's generation settings and translates as
    transformers' beam search did."""
    model = imported("multilingual_gelu")
    expected = np.load(MARIAN / "multilingual_gelu" / "expected" / "logprobs.npz")
    first_loss = -float(np.mean(expected["logp_12"]))
    dev_loss = -float(np.mean(np.concatenate([expected[f"logp_{i}"] for i in range(30)])))
    assert round(first_loss, 4) == 2.6966
    data, tuned = encoded[0][0].split("=", 1)[1], tmp_path / "tuned"
    code, out, err = run(
        capfd, t2t_trainer, f"--warm_start_from={model}", "--problem=translate_enmul_files",
        f"--data_dir={data}", f"--output_dir={tuned}", "--train_steps=1",
        "--hparams=learning_rate=0,label_smoothing=0,layer_prepostprocess_dropout=0,"
        "tokens_per_step=0,batch_size=512",
        "--eval_every=1", "--eval_bleu_sentences=0", "--save_checkpoints_steps=0",
        "--save_checkpoints_secs=0", "--log_every=1")
    assert code == 0, err
    assert f"Weights from {model}/ckpt-0" in out
    [train_loss] = re.findall(r"^step 1/1  loss (\S+)", out, re.M)
    [eval_loss] = re.findall(r"^eval step 1: .* loss (\S+)", out, re.M)
    assert abs(float(train_loss) - first_loss) < 6e-5, (train_loss, first_loss)
    assert abs(float(eval_loss) - dev_loss) < 6e-5, (eval_loss, dev_loss)

    recorded = json.loads((tuned / "decode_defaults.json").read_text())
    assert recorded == {"decode_hparams": {"beam_size": 6, **GENERATION},
                        "from": str(model.resolve())}
    problem = ModelDir.open(str(tuned)).problem()
    assert problem.name == "translate_enmul_files"
    params = SearchParams.for_problem(problem)
    assert (params.beam_size, params.alpha, params.length_penalty, params.stop_rule,
            params.forbid_pad, params.forced_eos, params.renormalize,
            params.max_output_length) == (6, 1.0, "fairseq", "transformers", True, True, True,
                                          511)
    # A weights-only copy (best/, an average) keeps them.
    copy_metadata(ModelDir.open(str(tuned)), str(tmp_path / "copy"))
    assert ModelDir.open(str(tmp_path / "copy")).problem().search_defaults == \
        recorded["decode_hparams"]
    # Lines 1-3 (>>deu<<) and 26-28 (>>fra<<) of the reference input.
    chosen = [0, 1, 2, 25, 26, 27]
    lines = (MARIAN / "multilingual_gelu" / "expected" / "input.txt").read_text(
        encoding="utf-8").splitlines()
    source = tmp_path / "in.txt"
    source.write_text("".join(lines[i] + "\n" for i in chosen), encoding="utf-8")
    code, _, err = run(capfd, t2t_decoder, f"--output_dir={tuned}",
                       f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out'}")
    assert code == 0, err
    beam = (MARIAN / "multilingual_gelu" / "expected" / "beam6.txt").read_text(
        encoding="utf-8").splitlines()
    assert (tmp_path / "out").read_text(encoding="utf-8").splitlines() == \
        [beam[i] for i in chosen]
