"""Training draws from corpora and problems by weight (--train_mix).

The toy problem toy_mix has two corpora, alpha (300 examples, shards 0-1) and
beta (100 examples, shard 2); toy_other, a second problem in the same data
directory, has one (200 examples). Each example's corpus is written in its
first id (`mix_data.corpus_of`), so the batches say where they were drawn from.

Tolerances: the pipeline draws each example from source i with probability
w_i, independently (`sample_from_datasets`), so the count drawn from i among n
examples is Binomial(n, w_i); each assertion allows 4 standard deviations,
4 * sqrt(n * w_i * (1 - w_i)) (about 6e-5 two-sided per count). The length
buckets hold back a few examples, which were drawn the same way.
"""

import collections
import json
import math
import os

import pytest
import tensorflow as tf

from t2t_lite import model_dir, model_dir_writer, registry
from t2t_lite.bin import t2t_trainer
from t2t_lite.data import mixing, pipeline
from t2t_lite.errors import T2TError

from mix_data import MAIN, OTHER, corpus_of, marked_examples, write_problem
from toy_data import TOY_BUDGET, batch_examples

DRAWN = 4000  # examples counted per proportion test


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mix"))
    write_problem(path, MAIN, [("alpha", marked_examples(300, 0, seed=0), 2),
                               ("beta", marked_examples(100, 1, seed=1), 1)])
    write_problem(path, OTHER, [(OTHER, marked_examples(200, 2, seed=2), 1)])
    return path


def drawn_shares(data_dir, spec, **kwargs):
    """{corpus number: examples drawn} over the first DRAWN examples of training."""
    sources = mixing.train_sources(data_dir, MAIN, spec)
    ds = pipeline.make_dataset(data_dir, MAIN, "train", TOY_BUDGET, 40, training=True, seed=7,
                               sources=sources, **kwargs)
    counts, n = collections.Counter(), 0
    for batch in ds:
        examples = batch_examples(batch)
        counts.update(corpus_of(e) for e in examples)
        n += len(examples)
        if n >= DRAWN:
            return counts, n


def assert_shares(counts, n, expected):
    for corpus, share in expected.items():
        sigma = math.sqrt(n * share * (1 - share))
        assert abs(counts[corpus] - n * share) <= 4 * sigma, (corpus, counts, n, expected)


def test_corpus_weights_are_the_shares_drawn(data_dir):
    counts, n = drawn_shares(data_dir, "alpha=1,beta=3")
    assert_shares(counts, n, {0: 0.25, 1: 0.75})
    assert counts[2] == 0


def test_a_second_problem_mixed_in(data_dir):
    # toy_mix's half is split between its corpora by their examples: 3/8 and 1/8.
    counts, n = drawn_shares(data_dir, f"{MAIN}=1,{OTHER}=1")
    assert_shares(counts, n, {0: 0.375, 1: 0.125, 2: 0.5})


def test_without_a_mix_every_corpus_by_its_share_of_the_examples(data_dir):
    sources = mixing.train_sources(data_dir, MAIN, None)
    assert [(s.corpus, s.weight, len(s.files)) for s in sources] == [
        ("alpha", 0.75, 2), ("beta", 0.25, 1)]
    counts, n = drawn_shares(data_dir, None)
    assert_shares(counts, n, {0: 0.75, 1: 0.25})


def test_unnamed_corpora_are_not_drawn_and_the_start_line_says_so(data_dir):
    sources = mixing.train_sources(data_dir, MAIN, f"beta=2,{OTHER}=2")
    assert [(s.problem, s.corpus, s.weight) for s in sources] == [
        (MAIN, "beta", 0.5), (OTHER, OTHER, 0.5)]
    assert mixing.describe(sources, MAIN, data_dir, f"beta=2,{OTHER}=2") == (
        f"Training draws from beta 50.0%, {OTHER} 50.0% of the examples "
        f"(--train_mix=beta=2,{OTHER}=2); not drawn: alpha.")
    # The order of the spec does not change the streams (the same seeds, the same draws).
    assert mixing.train_sources(data_dir, MAIN, f"{OTHER}=2,beta=2") == sources


def test_one_pass_over_two_input_pipelines_reads_every_example_once(data_dir):
    """alpha's 2 shards are split between the 2 pipelines, beta's 1 shard by example."""
    sources = mixing.train_sources(data_dir, MAIN, None)
    seen = []
    for pipeline_id in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2,
                                             input_pipeline_id=pipeline_id)
        ds = pipeline.make_dataset(data_dir, MAIN, "train", TOY_BUDGET, 40, training=True,
                                   seed=3, repeat=False, input_context=context,
                                   sources=sources)
        seen += [e for batch in ds for e in batch_examples(batch)]
    expected = marked_examples(300, 0, seed=0) + marked_examples(100, 1, seed=1)
    assert collections.Counter(seen) == collections.Counter(expected)


def one_line(match):
    return pytest.raises(T2TError, match=match)


@pytest.mark.parametrize("spec, message", [
    ("alpha", r"^--train_mix=alpha: 'alpha' is not NAME=WEIGHT \(expected NAME=WEIGHT"),
    ("alpha=1,=2", r"^--train_mix=alpha=1,=2: '=2' is not NAME=WEIGHT"),
    ("alpha=x", r"^--train_mix=alpha=x: the weight of alpha is not a number: 'x'\.$"),
    ("alpha=inf", r"^--train_mix=alpha=inf: the weight of alpha is not a number: 'inf'\.$"),
    ("alpha=1,beta=-0.5", r"^--train_mix=alpha=1,beta=-0.5: the weight of beta is negative "
                          r"\(-0\.5\); weights are shares, 0 or more\.$"),
    ("alpha=0,beta=0", r"^--train_mix=alpha=0,beta=0: all weights are zero; give at least one "
                       r"a positive weight\.$"),
    ("alpha=1,alpha=2", r"^--train_mix=alpha=1,alpha=2: alpha is given twice\.$"),
])
def test_malformed_mixes_are_one_line_errors(data_dir, spec, message):
    with one_line(message):
        mixing.train_sources(data_dir, MAIN, spec)


def test_an_unknown_name_lists_the_known_ones(data_dir):
    with one_line(rf"^--train_mix: unknown corpus or problem 'gamma' in {data_dir} \(corpora "
                  rf"of {MAIN}: alpha, beta; problems with data there: {MAIN}, {OTHER}\)\.$"):
        mixing.train_sources(data_dir, MAIN, "alpha=1,gamma=1")
    # A registered problem without data there: the command that writes it.
    with one_line(rf"^--train_mix: no t2t-datagen output for 'translate_ende_multi30k' in "
                  rf"{data_dir} \(.*\); run t2t-datagen --problem=translate_ende_multi30k "
                  rf"--data_dir={data_dir} --vocab_from={data_dir}/{MAIN}\.sp30\.model\.$"):
        mixing.train_sources(data_dir, MAIN, "alpha=1,translate_ende_multi30k=1")
    assert "translate_ende_multi30k" in registry.list_problems()


def test_another_vocabulary_is_refused(tmp_path):
    write_problem(str(tmp_path), MAIN, [("alpha", marked_examples(30, 0, seed=0), 1)])
    write_problem(str(tmp_path), OTHER, [(OTHER, marked_examples(30, 2, seed=2), 1)],
                  vocab_sha256="another vocabulary")
    with one_line(rf"^--train_mix: {OTHER}'s data in {tmp_path} was encoded with another "
                  rf"vocabulary than {MAIN}'s \({OTHER}\.sp30\.model is not {MAIN}\.sp30\.model"
                  rf"\); re-run t2t-datagen --problem={OTHER} --data_dir={tmp_path} "
                  rf"--vocab_from={tmp_path}/{MAIN}\.sp30\.model \(in a new --data_dir, or "
                  r"after deleting its files\)\.$"):
        mixing.train_sources(str(tmp_path), MAIN, f"{MAIN}=1,{OTHER}=1")


def test_missing_shards_of_a_mixed_problem_are_refused(tmp_path):
    write_problem(str(tmp_path), MAIN, [("alpha", marked_examples(30, 0, seed=0), 1)])
    write_problem(str(tmp_path), OTHER, [(OTHER, marked_examples(30, 2, seed=2), 2)])
    gone = tmp_path / f"{OTHER}-train-00001-of-00002"
    gone.unlink()
    with one_line(rf"^{gone} is missing; delete it and re-run t2t-datagen --problem={OTHER} "
                  rf"--data_dir={tmp_path} \(it rewrites only what is missing\)\.$"):
        mixing.train_sources(str(tmp_path), MAIN, f"{MAIN}=1,{OTHER}=1")


def test_data_that_records_no_corpora_is_refused_for_a_mix_only(tmp_path):
    meta = write_problem(str(tmp_path), MAIN, [("alpha", marked_examples(30, 0, seed=0), 1),
                                               ("beta", marked_examples(30, 1, seed=1), 1)])
    del meta["splits"]["train"]["corpora"]
    meta["layout_version"] = 2  # as t2t-datagen wrote it before corpora were recorded
    (tmp_path / f"{MAIN}.datagen.json").write_text(json.dumps(meta))
    assert mixing.train_sources(str(tmp_path), MAIN, None) is None  # every shard, as before
    with one_line(rf"^The train shards of {MAIN} in {tmp_path} do not record their corpora "
                  rf"\(written by an older t2t-datagen\): re-run t2t-datagen --problem={MAIN} "
                  rf"--data_dir={tmp_path} to record them, or train without --train_mix\.$"):
        mixing.train_sources(str(tmp_path), MAIN, "alpha=1")


def test_a_resumed_run_keeps_the_mix_its_directory_recorded(tmp_path):
    hp = registry.hparams("transformer_tiny")
    vocab = tmp_path / "v.model"
    vocab.write_bytes(b"toy")
    out = str(tmp_path / "m")

    def prepare(path, train_mix=None):  # as the trainer: the run the directory holds, if any
        model_dir_writer.prepare(path, hp, MAIN, str(vocab), 30,
                                 model_dir_writer.existing_run(path), train_mix=train_mix)

    prepare(out, train_mix="alpha=1,beta=3")
    assert model_dir.ModelDir.open(out).train_mix == "alpha=1,beta=3"
    prepare(out, train_mix=None)  # uses the recorded one
    prepare(out, train_mix="beta=0.75,alpha=0.25")  # same
    with one_line(rf"^{out} was trained with --train_mix=alpha=1,beta=3, not "
                  r"--train_mix=alpha=1,beta=1; resume with the same mix \(or without the "
                  r"flag, which uses the recorded one\) or use a new --output_dir\.$"):
        prepare(out, train_mix="alpha=1,beta=1")
    plain = str(tmp_path / "plain")
    prepare(plain)
    assert model_dir.ModelDir.open(plain).train_mix is None
    with one_line(rf"^{plain} was trained with no --train_mix, not --train_mix=alpha=1;"):
        prepare(plain, train_mix="alpha=1")


def test_trainer_flag_errors_are_one_line_and_write_nothing(data_dir, tmp_path, capfd):
    out = tmp_path / "model"
    code = t2t_trainer.main(["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
                             f"--data_dir={data_dir}", f"--output_dir={out}",
                             "--train_mix=translate_ende_numbers=-1"])
    _, err = capfd.readouterr()
    assert code == 1 and err == ("t2t-trainer: error: --train_mix=translate_ende_numbers=-1: the "
                                 "weight of translate_ende_numbers is negative (-1); weights are "
                                 "shares, 0 or more.\n")
    assert not os.path.exists(out)
