"""Tests for t2t_lite.parsing.linearize: trees <-> sequences and the repair rule."""

import random

import pytest

from t2t_lite.errors import T2TError
from t2t_lite.parsing import evalb
from t2t_lite.parsing.linearize import align_slots, delinearize, linearize
from t2t_lite.parsing.trees import Tree, parse_tree, parse_trees

HAAG = "(TOP (S (NP (NNP Ms.) (NNP Haag)) (VP (VBZ plays) (NP (NNP Elianti))) (. .)))"
WORDS = ["Ms.", "Haag", "plays", "Elianti", "."]


def _well_formed(tree: Tree, words: list) -> None:
    """The repair contract: TOP root, exactly the words, no empty node, re-readable."""
    assert tree.label == "TOP"
    assert tree.leaves() == words
    assert parse_tree(str(tree)) == tree
    stack = [tree]
    while stack:
        node = stack.pop()
        assert node.children, f"empty constituent {node.label!r} in {tree}"
        if not node.is_preterminal():
            assert all(isinstance(c, Tree) for c in node.children)
            stack.extend(node.children)


def test_linearize_keeps_pos_tags_as_word_slots():
    source, target = linearize(parse_tree(HAAG))
    assert source == "Ms. Haag plays Elianti ."
    assert target == "(S (NP NNP NNP ) (VP VBZ (NP NNP ) ) . )"


def test_linearize_vinyals_placeholders():
    source, target = linearize(parse_tree(HAAG), pos_tags=False)
    assert target == "(S (NP XX XX ) (VP XX (NP XX ) ) XX )"
    tree = delinearize(target, source, pos_tags=False)
    assert tree.tags() == ["XX"] * 5
    assert delinearize(target, source, pos_tags=False, tags=parse_tree(HAAG).tags()) == parse_tree(HAAG)


def test_linearize_rejects_unwritable_trees():
    with pytest.raises(T2TError, match="not under a POS tag"):
        linearize(parse_tree("(TOP (S word (NN b)))"))
    with pytest.raises(T2TError, match="space or bracket"):
        linearize(Tree("TOP", [Tree("NN", ["a b"])]))


def test_round_trip_every_sample_tree(shared_data):
    lines = (shared_data / "ptb_sample" / "wsj_sample.clean.trees").read_text().splitlines()
    trees = parse_trees("\n".join(lines))
    assert len(trees) == 3914
    for line, tree in zip(lines, trees):
        source, target = linearize(tree)
        assert str(delinearize(target, source.split())) == line
        source, target = linearize(tree, pos_tags=False)
        assert delinearize(target, source, pos_tags=False, tags=tree.tags()) == tree


# Malformed outputs for WORDS and the tree the documented rule makes of each.
REPAIRS = [
    # empty output: every word appended to TOP, punctuation keeps its tag
    ("", "(TOP (XX Ms.) (XX Haag) (XX plays) (XX Elianti) (. .))"),
    # unbalanced: missing closes are closed at the end
    ("(S (NP NNP NNP ) (VP VBZ (NP NNP",
     "(TOP (S (NP (NNP Ms.) (NNP Haag)) (VP (VBZ plays) (NP (NNP Elianti))) (. .)))"),
    # extra closes are dropped
    (") ) (S (NP NNP NNP ) ) ) ) VBZ NNP .",
     "(TOP (S (NP (NNP Ms.) (NNP Haag))) (VBZ plays) (NNP Elianti) (. .))"),
    # too few slots: leftover words go to the last top-level constituent
    ("(S (NP NNP NNP ) )", "(TOP (S (NP (NNP Ms.) (NNP Haag)) (XX plays) (XX Elianti) (. .)))"),
    # too many slots: extra slots dropped, then the empty NP removed
    ("(S NNP NNP VBZ NNP . (NP NN NN ) )", "(TOP (S (NNP Ms.) (NNP Haag) (VBZ plays) (NNP Elianti) (. .)))"),
    # unknown tokens dropped: <unk>, bare "(", "NP)", "((S"; ")NP" reads as ")"
    ("<unk> ( (S (NP NNP NP) NNP )NP ((S VBZ </s> NNP . )",
     "(TOP (S (NP (NNP Ms.) (NNP Haag)) (VBZ plays) (NNP Elianti) (. .)))"),
    # empty constituents anywhere are pruned
    ("(S (NP ) (VP (ADVP ) ) NNP NNP VBZ NNP . (X (Y ) ) )",
     "(TOP (S (NNP Ms.) (NNP Haag) (VBZ plays) (NNP Elianti) (. .)))"),
    # several top-level constituents are all kept under TOP
    ("(NP NNP NNP ) (VP VBZ NNP ) .", "(TOP (NP (NNP Ms.) (NNP Haag)) (VP (VBZ plays) (NNP Elianti)) (. .))"),
]


@pytest.mark.parametrize("target, expected", REPAIRS)
def test_repair_rule(target, expected):
    tree = delinearize(target, WORDS)
    assert str(tree) == expected
    _well_formed(tree, WORDS)


@pytest.mark.parametrize("slots, words, expected", [
    # agreeing slots fill the words in order
    (["NNP", "NNP", "VBZ", "NNP", "."], WORDS, [0, 1, 2, 3, 4]),
    # one slot missing before the full stop: the last word before the anchor goes without one
    (["NNP", "VBZ", "NNP", "."], WORDS, [0, 1, 2, 4]),
    # one slot too many: the slot just before the anchor is left out
    (["NNP", "NNP", "NNP", "VBZ", "NNP", "."], WORDS, [0, 1, 2, 3, None, 4]),
    # a comma slot one word late: leaving out a word (1) and a slot (1) beats two forced
    # matches (3); of the two alignments of cost 2, the earlier slot keeps a word
    (["DT", "NN", ",", "NN"], ["a", ",", "b", "c"], [0, 2, None, 3]),
    # a forced match (1.5) beats leaving out a slot and a word (2); "'" may be either
    (["NN", ",", "NN", "POS"], ["x", "y", "z", "'"], [0, 1, 2, 3]),
    ([",", "DT"], [], [None, None]),
    ([], ["a", "."], []),
])
def test_align_slots_by_hand(slots, words, expected):
    assert align_slots(slots, words) == expected


def test_a_dropped_slot_no_longer_shifts_words_past_the_full_stop():
    target = "(S (NP NNP ) (VP VBZ (NP NNP ) ) . )"  # the model forgot one NNP
    tree = delinearize(target, WORDS)
    assert str(tree) == "(TOP (S (NP (NNP Ms.)) (VP (VBZ Haag) (NP (NNP plays))) (XX Elianti) (. .)))"
    _well_formed(tree, WORDS)
    # Filling slots in order would tag Elianti "." and leave "." without a slot: EVALB
    # rejects that sentence (length mismatch); the aligned tree is scored instead.
    result = evalb.score_sentence(HAAG, str(tree))
    assert result.status == evalb.OK
    # S matches; NP, VP and the inner NP are one word off: 1 of 4 brackets.
    assert (result.gold_brackets, result.test_brackets, result.matched) == (4, 4, 1)


def test_repair_of_deep_nesting_and_no_words():
    deep = " ".join(["(S"] * 5000) + " NNP"
    tree = delinearize(deep, ["a"])
    _well_formed(tree, ["a"])
    assert len(str(tree)) > 5000
    assert delinearize("(S NN )", []) == Tree("TOP", [])


def test_repair_never_raises_on_token_soup():
    rng = random.Random(8)
    vocab = ["(S", "(NP", "(VP", ")", ")NP", "NN", "DT", ".", "XX", "<unk>", "(", "((", "a)", "<pad>"]
    for _ in range(500):
        words = [f"w{i}" for i in range(rng.randint(0, 12))]
        target = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30)))
        for pos_tags in (True, False):
            tree = delinearize(target, words, pos_tags=pos_tags)
            if words:
                _well_formed(tree, words)
            else:
                assert tree == Tree("TOP", [])


def test_words_may_be_a_source_string_and_bad_tags_are_ignored():
    tree = delinearize("(S XX XX )", "a b", pos_tags=False, tags=["DT"])  # wrong length: XX
    assert str(tree) == "(TOP (S (XX a) (XX b)))"
