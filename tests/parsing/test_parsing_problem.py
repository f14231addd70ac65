"""parsing_wsj: the problem on the treebank sample, datagen, decoder post-processing and EVALB.

The sample tests skip when ../shared/data is absent (the `shared_data` fixture).
"""

import os
import re

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.errors import T2TError
from t2t_lite.parsing import outputs, trees
from t2t_lite.parsing.linearize import linearize
from paths import SHARED_DATA

SPLIT_SIZES = {"train": 3396, "dev": 273, "test": 245}


@pytest.fixture(scope="module")
def sample(shared_data_dir):
    return shared_data_dir / "ptb_sample"


@pytest.fixture(scope="module")
def shared_data_dir():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data samples not found at {SHARED_DATA}")
    return SHARED_DATA


def _clean_lines(sample):
    return (sample / "wsj_sample.clean.trees").read_text(encoding="utf-8").splitlines()


def test_alias_and_decode_defaults():
    assert registry.problem_name("parsing_english_ptb16k") == "parsing_wsj"
    problem = registry.problem("parsing_english_ptb16k")
    assert (problem.name, problem.vocab_size) == ("parsing_wsj", 16000)
    assert (problem.beam_size, problem.alpha, problem.extra_length) == (21, 0.3, 300)
    # Its metric is EVALB F1 (beside BLEU). By hand: gold S(0,3) NP(0,2) VP(2,3), test
    # S(0,3) NP(0,1) VP(1,3) ("." is deleted): 1 of 3 brackets match, F1 = 33.33.
    gold = "(S (NP DT NN ) (VP VBD ) . )"
    scores = problem.dev_scores(["(S (NP DT ) (VP NN VBD ) . )"], [gold], ["The dog barked ."])
    assert set(scores) == {"bleu", "chrf", "exact_match", "evalb_f1"}
    assert round(scores["evalb_f1"], 2) == 33.33 and scores["exact_match"] == 0.0


def test_missing_tmp_dir_is_a_t2t_error(tmp_path):
    problem = registry.problem("parsing_wsj")
    with pytest.raises(T2TError, match="pass --tmp_dir"):
        next(problem.raw_pairs("train", None))
    with pytest.raises(T2TError, match="no treebank found"):
        next(problem.raw_pairs("train", str(tmp_path)))


def test_sample_splits_match_the_cleaned_trees_file(sample):
    """Pairs equal linearize() of ../shared/data's own cleaned trees, split 3,396 / 273 / 245."""
    problem = registry.problem("parsing_wsj")
    lines = _clean_lines(sample)
    begin = 0
    for split, size in SPLIT_SIZES.items():
        pairs = list(problem.raw_pairs(split, str(sample / "combined")))
        assert len(pairs) == size
        expected = [linearize(trees.parse_tree(line)) for line in lines[begin:begin + size]]
        assert pairs == expected, split
        begin += size
    assert begin == len(lines)
    first = next(problem.raw_pairs("train", str(sample / "combined")))
    assert first == ("Pierre Vinken , 61 years old , will join the board as a nonexecutive "
                     "director Nov. 29 .",
                     "(S (NP (NP NNP NNP ) , (ADJP (NP CD NNS ) JJ ) , ) (VP MD (VP VB (NP DT NN ) "
                     "(PP IN (NP DT JJ NN ) ) (NP NNP CD ) ) ) . )")


def _index_counts(sample):
    counts = {}
    for row in (sample / "wsj_sample.index.tsv").read_text().splitlines()[1:]:
        name = row.split("\t")[1]
        counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.fixture(scope="module")
def small_data(ptb_data):
    """(base dir, datagen metadata, datagen log) of the suite's PTB-sample data
    (conftest.py: train wsj_0001 + wsj_0003, dev wsj_0160, test wsj_0180)."""
    return ptb_data.base, ptb_data.meta, ptb_data.log


def test_datagen_on_a_slice_writes_shards_words_and_gold_trees(sample, small_data):
    base, meta, log = small_data
    counts = _index_counts(sample)
    assert {s: v["examples"] for s, v in meta["splits"].items()} == {
        "train": counts["wsj_0001.mrg"] + counts["wsj_0003.mrg"],
        "dev": counts["wsj_0160.mrg"], "test": counts["wsj_0180.mrg"]}
    # The vocabulary is capped to what SentencePiece can learn from 32 trees, with a note.
    assert meta["vocab_file"] == "parsing_wsj.sp16000.model"
    assert 259 < meta["vocab_size"] < 16000
    assert any(f"supports only {meta['vocab_size']} of the 16000 pieces" in line for line in log)
    # Dev/test words and cleaned gold trees, line for line with the sample's cleaned trees file.
    lines = _clean_lines(sample)
    test_begin = SPLIT_SIZES["train"] + SPLIT_SIZES["dev"]
    gold = lines[test_begin:test_begin + counts["wsj_0180.mrg"]]
    data = base / "data"
    assert (data / "parsing_wsj-test.trees").read_text().splitlines() == gold
    assert (data / "parsing_wsj-test.words").read_text().splitlines() == [
        " ".join(trees.parse_tree(line).leaves()) for line in gold]
    assert not (data / "parsing_wsj-train.trees").exists()
    # Every target token of the train trees is one piece (target_tokens_whole), so a
    # target has exactly one id per token (plus EOS): `(S`, `DT`, `)` are never split.
    from t2t_lite.data.vocab import SubwordVocab
    vocab = SubwordVocab.from_file(str(data / meta["vocab_file"]))
    problem = registry.problem("parsing_wsj")
    for _, target in problem.raw_pairs("train", str(base / "raw")):
        ids = vocab.encode_texts([target])[0]
        assert len(ids) == len(target.split()) + 1
        assert vocab.decode_ids([ids]) == [target]
    assert any("whole target tokens" in line for line in log)


WORDS = ["The dog barked .", "Stocks fell sharply"]
GOLD = ["(TOP (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))",
        "(TOP (S (NP (NNS Stocks)) (VP (VBD fell) (ADVP (RB sharply)))))"]


@pytest.mark.parametrize("output", [
    "", "(S (NP DT NN", ") ) (S (NP DT NN ) ) ) )", "NN NN NN NN NN NN NN", "((S NP) <unk> (VP )",
    "(S (NP DT NN ) (VP VBD ) . ) (S (NP DT NN ) )", "(S (NP ) ) </s> <pad>",
])
def test_malformed_outputs_become_well_formed_trees_over_the_words(output):
    line = outputs.output_tree(output, WORDS[0])
    tree = trees.parse_tree(line)
    assert tree.label == "TOP" and tree.leaves() == WORDS[0].split()
    assert str(tree) == line


def test_evalb_of_repaired_outputs_hand_computed(tmp_path):
    # 1: a wrong NP/VP split: gold S(0,3) NP(0,2) VP(2,3), test S(0,3) NP(0,1) VP(1,3); the
    #    final "." is deleted by COLLINS.prm. 2: stray ")" and too many slots, repaired to gold.
    model_out = ["(S (NP DT ) (VP NN VBD ) . )", ") (S (NP NNS ) (VP VBD (ADVP RB ) NN NN ) ) )"]
    decoded = [outputs.output_tree(out, words) for out, words in zip(model_out, WORDS)]
    assert decoded == ["(TOP (S (NP (DT The)) (VP (NN dog) (VBD barked)) (. .)))", GOLD[1]]
    gold_path = tmp_path / "gold.trees"
    gold_path.write_text("\n".join(GOLD) + "\n")
    result, text = outputs.evalb_report(decoded, gold_path)
    assert (result.all.matched, result.all.gold_brackets, result.all.test_brackets) == (5, 7, 7)
    assert round(result.f1, 2) == 71.43 and result.all.complete_match == 50.0
    assert result.all.tagging_accuracy == 100.0
    assert "Bracketing FMeasure       =  71.43" in text and "-- len<=40 --" in text
    assert text.splitlines()[0] == "EVALB (COLLINS.prm): bracketing F1 71.43 (len<=40: 71.43)"
    # A sentence EVALB rejects (here "barked" under a comma tag, which deletes it) is left out
    # of F1, and the title line says so.
    rejected = ["(TOP (S (NP (DT The) (NN dog)) (VP (, barked)) (. .)))", GOLD[1]]
    result, text = outputs.evalb_report(rejected, gold_path)
    assert result.all.error_sentences == 1 and result.f1 == 100.0
    assert text.splitlines()[0] == ("EVALB (COLLINS.prm): bracketing F1 100.00 (len<=40: 100.00) "
                                    "over 1 of 2 sentences (1 error, 0 skipped)")
    # Raw treebank text (function tags, a trace) is cleaned before scoring.
    raw = tmp_path / "gold.mrg"
    raw.write_text("( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD barked) (NP (-NONE- *T*-1))) (. .)))\n"
                   "((S (NP-SBJ (NNS Stocks))\n  (VP (VBD fell) (ADVP-MNR (RB sharply)))))\n")
    assert outputs.read_gold_trees(raw) == GOLD
    with pytest.raises(T2TError, match="1 decoded trees but 2 gold trees"):
        outputs.evalb_report(decoded[:1], gold_path)


def test_beams_with_scores_are_delinearized_field_by_field():
    from t2t_lite.decode.decoding import DecodeOptions, format_hypotheses
    problem = registry.problem("parsing_wsj")
    beams = [problem.postprocess(h, "a b") for h in ["(S NN NN", "(S (NP NN ) NN ) )"]]
    line = format_hypotheses(beams, [-1.5, -2.0],
                             DecodeOptions(return_beams=True, write_beam_scores=True))
    assert line.split("\t") == ["(TOP (S (NN a) (NN b)))", "-1.5000",
                                "(TOP (S (NP (NN a)) (NN b)))", "-2.0000"]
    assert problem.postprocess("", " ") == ""


def test_train_and_decode_end_to_end_prints_evalb(small_data, tmp_path, capfd):
    from t2t_lite.bin import t2t_decoder, t2t_trainer
    base, _, _ = small_data
    data, model = base / "data", tmp_path / "model"
    code = t2t_trainer.main([
        "--problem=parsing_wsj", "--hparams_set=transformer_parsing_tiny",
        "--hparams=hidden_size=32,filter_size=64,num_heads=2,num_hidden_layers=1,batch_size=1024",
        f"--data_dir={data}", f"--output_dir={model}", "--train_steps=3", "--eval_every=3",
        "--eval_bleu_sentences=3", "--log_every=1"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "evalb_f1" in out
    words = (data / "parsing_wsj-test.words").read_text().splitlines()[:5]
    gold = (data / "parsing_wsj-test.trees").read_text().splitlines()[:5]
    (tmp_path / "in.words").write_text("\n".join(words) + "\n")
    (tmp_path / "gold.trees").write_text("\n".join(gold) + "\n")
    code = t2t_decoder.main([
        f"--output_dir={model}", "--decode_hparams=beam_size=2,extra_length=10",
        f"--decode_from_file={tmp_path / 'in.words'}", f"--decode_to_file={tmp_path / 'out'}",
        f"--decode_reference={tmp_path / 'gold.trees'}"])
    _, err = capfd.readouterr()
    assert code == 0, err
    decoded = (tmp_path / "out").read_text().splitlines()
    assert [trees.parse_tree(line).leaves() for line in decoded] == [w.split() for w in words]
    assert "EVALB (COLLINS.prm)" in err and "Number of sentence        =      5" in err
    for name in ("Bracketing Recall", "Bracketing Precision", "Bracketing FMeasure",
                 "Complete match", "Tagging accuracy"):
        assert err.count(name) == 2, name  # -- All -- and -- len<=40 --
    assert "BLEU" not in err
    assert os.path.getsize(tmp_path / "out") > 0

    # The search writes only well-formed trees: balanced brackets, one slot per
    # word, punctuation tags exactly on the punctuation words (3 training steps
    # leave the model far from writing them by itself).
    from t2t_lite.decode.search import SearchParams, search_for_problem
    from t2t_lite.decode.translator import Translator
    from t2t_lite.model_dir import ModelDir
    directory = ModelDir.open(str(model))
    trained, _ = directory.load_model(None, 1, "float32")
    vocab = directory.vocab()
    problem = registry.problem("parsing_wsj")
    params = SearchParams.for_problem(problem, beam_size=2)
    assert params.tree_constraint
    search = search_for_problem(trained, problem, vocab, params)
    for line, target in zip(words, Translator(search, vocab).translate(words)):
        _assert_well_formed_tree(line, target)
    with pytest.raises(T2TError, match="XLA"):
        search_for_problem(trained, problem, vocab, params, jit_compile=True)

    # The same constraint runs inside an exported SavedModel.
    import tensorflow as tf
    from t2t_lite.export.exporter import export
    served = tf.saved_model.load(export(ModelDir.open(str(model)), str(tmp_path / "export"),
                                        "beam_size=2"))
    outputs = served.signatures["serving_default"](inputs=tf.constant(words[:2]))["outputs"]
    for line, target in zip(words, outputs.numpy()):
        _assert_well_formed_tree(line, target.decode("utf-8"))


def _assert_well_formed_tree(line, target):
    """`target` is a linearized tree over the words of `line`, with punctuation tags
    exactly on punctuation words (either way on ambiguous quotes)."""
    from t2t_lite.parsing.linearize import (AMBIGUOUS_PUNCTUATION_PATTERN,
                                            DELETED_PUNCTUATION_TAGS, PUNCTUATION_TAGS)
    tokens = target.split()
    depths = np.cumsum([t.startswith("(") - (t == ")") for t in tokens])
    slots = [t for t in tokens if not t.startswith("(") and t != ")"]
    assert depths[-1] == 0 and depths[:-1].min() >= 1, target
    assert len(slots) == len(line.split()), target
    for word, tag in zip(line.split(), slots):
        if PUNCTUATION_TAGS.get(word) in DELETED_PUNCTUATION_TAGS:
            assert tag in DELETED_PUNCTUATION_TAGS, (word, target)
        elif not re.fullmatch(AMBIGUOUS_PUNCTUATION_PATTERN, word):
            assert tag not in DELETED_PUNCTUATION_TAGS, (word, target)
