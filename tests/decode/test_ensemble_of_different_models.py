"""Ensembles of two models that differ, checked against each model's own probabilities.

An ensemble of a model with itself cannot tell a correct ensemble from one that
ignores its second member or crosses the members' caches or encoder outputs.
Here the members differ: the trained numbers model (2 layers, checkpoint 2000)
with either its own checkpoint 1000 (other weights) or a 1-layer model with
random weights over the same vocabulary (other depth). The expected values are
computed in the test, independently of the search and of
`t2t_lite.decode.scoring`: each member's teacher-forced log-softmax
(`model(features)`), combined here in float64 as log(mean(p1, p2)).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite import model_dir_writer
from t2t_lite import registry
from t2t_lite.data.layout import EOS_ID
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator

from model_dirs import load_model, number_sentences

SOURCES = number_sentences(60)[1::4]  # 15 English numbers the model was not shown as such
FAIRSEQ = dict(alpha=0.6, length_penalty="fairseq", extra_length=8)


@pytest.fixture(scope="module")
def shallow_dir(numbers_model, tmp_path_factory) -> str:
    """A 1-layer transformer_tiny (the trained one has 2) with random weights, written as a
    model directory with the trained model's problem and vocabulary file."""
    path = str(tmp_path_factory.mktemp("shallow") / "model")
    trained = model_dir_lib.ModelDir.open(numbers_model.path)
    hp = registry.hparams("transformer_tiny").parse("num_hidden_layers=1,filter_size=256")
    model_dir_writer.prepare(path, hp, trained.problem_name, trained.vocab_path,
                             trained.vocab_size, model_dir_writer.existing_run(path))
    tf.keras.utils.set_random_seed(7)
    model = model_dir_lib.ModelDir.open(path).build_model()
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), path, max_to_keep=None).save(
        checkpoint_number=1)
    return path


@pytest.fixture(scope="module", params=["checkpoint_1000", "shallow_random"])
def members(request, numbers_model, shallow_dir):
    """([trained model, the other member], vocab)."""
    trained, vocab = load_model(numbers_model.path)
    if request.param == "checkpoint_1000":
        other, _ = load_model(numbers_model.path, os.path.join(numbers_model.path, "ckpt-1000"))
    else:
        other, _ = load_model(shallow_dir)
    assert len(trained.decoder_layers) == 2
    return [trained, other], vocab


def member_log_probs(model, inputs, targets) -> np.ndarray:
    """One member's teacher-forced log P(targets[t] | targets[<t], inputs): float64 [B, T]."""
    logits = model({"inputs": inputs, "targets": targets}, training=False).numpy()
    logits = logits.astype(np.float64)
    log_softmax = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                  keepdims=True)) - logits.max(-1, keepdims=True)
    return np.take_along_axis(log_softmax, np.asarray(targets)[..., None], axis=-1)[..., 0]


def ensemble_log_probs(models, inputs, targets) -> np.ndarray:
    """log(mean_i p_i(token)) per position, float64 [B, T], 0 at padding."""
    per_member = np.stack([member_log_probs(m, inputs, targets) for m in models])
    mixed = np.log(np.exp(per_member).mean(axis=0))
    return np.where(np.asarray(targets) != 0, mixed, 0.0)


def test_beam_n_best_scores_are_log_mean_probabilities_over_fairseq_lengths(members):
    models, vocab = members
    search = Search(models, SearchParams(beam_size=3, **FAIRSEQ))
    inputs = Translator(search, vocab).encode(SOURCES)
    ids, scores = search.run(inputs)  # [B, 3, T], [B, 3]
    checked = 0
    for beam in range(3):
        hypotheses = ids[:, beam].numpy()
        finished = (hypotheses == EOS_ID).any(axis=1) & np.isfinite(scores[:, beam].numpy())
        lengths = np.count_nonzero(hypotheses, axis=1)  # EOS included
        expected = ensemble_log_probs(models, inputs, hypotheses).sum(axis=1) / lengths ** 0.6
        np.testing.assert_allclose(scores[:, beam].numpy()[finished], expected[finished],
                                   rtol=1e-4, atol=1e-4)
        checked += finished.sum()
        if beam == 0:
            assert finished.all()
            # Either member alone scores the best hypotheses differently: a search that
            # ignored one member would fail the comparison above.
            for member in models:
                alone = member_log_probs(member, inputs, hypotheses)
                alone = np.where(hypotheses != 0, alone, 0.0).sum(axis=1) / lengths ** 0.6
                assert np.abs(alone - expected).max() > 0.01
    assert checked >= 2 * len(SOURCES)


def test_greedy_takes_the_most_likely_token_of_the_mean_at_every_step(members):
    models, vocab = members
    search = Search(models, SearchParams(beam_size=1, **FAIRSEQ))
    inputs = Translator(search, vocab).encode(SOURCES)
    ids, scores = search.run(inputs)
    outputs = ids[:, 0].numpy()  # [B, T]
    assert (outputs == EOS_ID).any(axis=1).all()
    # The mean distribution at every position of the greedy output, teacher-forced.
    distributions = []
    for model in models:
        logits = model({"inputs": inputs, "targets": outputs}, training=False).numpy()
        distributions.append(tf.nn.softmax(logits.astype(np.float64)).numpy())
    mean = np.mean(distributions, axis=0)  # [B, T, V]
    chosen = np.take_along_axis(mean, outputs[..., None], axis=-1)[..., 0]
    steps = outputs != 0
    # Up to float32 rounding in the search: no token was more likely than the chosen one.
    assert (chosen[steps] >= mean.max(-1)[steps] - 1e-6).all()
    lengths = np.count_nonzero(outputs, axis=1)
    np.testing.assert_allclose(scores[:, 0].numpy(),
                               np.log(np.where(steps, chosen, 1.0)).sum(axis=1) / lengths ** 0.6,
                               rtol=1e-4, atol=1e-4)


def test_decoder_score_file_of_two_model_directories(numbers_model, shallow_dir, tmp_path, capfd):
    from t2t_lite.bin import t2t_decoder
    targets = ["fünf", "dreihundertzwölf", "zwei tausend und eins"]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, targets)), encoding="utf-8")
    out = tmp_path / "scores.txt"
    assert t2t_decoder.main([f"--output_dir={numbers_model.path},{shallow_dir}",
                             f"--score_file={pairs}", f"--decode_to_file={out}"]) == 0, \
        capfd.readouterr().err
    written = [float(x) for x in out.read_text(encoding="utf-8").split()]
    trained, vocab = load_model(numbers_model.path)
    shallow, _ = load_model(shallow_dir)
    translator = Translator(Search(trained), vocab)
    inputs, outputs = translator.encode(SOURCES[:3]), translator.encode(targets)
    expected = ensemble_log_probs([trained, shallow], inputs, outputs.numpy()).sum(axis=1)
    np.testing.assert_allclose(written, expected, rtol=1e-4, atol=1e-3)
    alone = np.where(outputs.numpy() != 0, member_log_probs(trained, inputs, outputs), 0.0)
    assert np.abs(alone.sum(axis=1) - expected).min() > 0.1  # the second member counts
