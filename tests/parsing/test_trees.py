"""Tests for t2t_lite.parsing.trees: reading .mrg files, cleaning, WSJ splits."""

import functools
import pathlib

import pytest

from t2t_lite.errors import T2TError
from t2t_lite.parsing.trees import (
    Tree,
    clean_tree,
    parse_tree,
    parse_trees,
    read_tree_file,
    read_trees,
    read_wsj_split,
    strip_function_tags,
    wsj_split_files,
)

MRG_TEXT = """\
( (S 
    (NP-SBJ-1 (NNP Mr.) (NNP Vinken) )
    (VP (VBZ is) 
      (NP-PRD (NN chairman) ))
    (. .) ))
( (S 
    (NP-SBJ (-NONE- *-1) )
    (VP (VBD went) 
      (SBAR (-NONE- 0) 
        (S (-NONE- *T*-2) )))
    (. .) ))
"""


@functools.lru_cache(maxsize=None)
def _sample(root: str):
    raw = read_trees(pathlib.Path(root) / "ptb_sample" / "combined")
    reference = (pathlib.Path(root) / "ptb_sample" / "wsj_sample.clean.trees").read_text().splitlines()
    return raw, reference


def test_parse_multiline_mrg_with_several_trees():
    trees = parse_trees(MRG_TEXT)
    assert len(trees) == 2
    assert trees[0].label == ""
    assert str(trees[0]) == "( (S (NP-SBJ-1 (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP-PRD (NN chairman))) (. .)))"
    assert trees[0].leaves() == ["Mr.", "Vinken", "is", "chairman", "."]
    assert trees[1].tags() == ["-NONE-", "VBD", "-NONE-", "-NONE-", "."]


def test_one_tree_per_line_round_trips_through_str():
    line = "(TOP (S (NP (PRP$ his) (NN dog)) (VP (VBD ran)) (-LRB- -LRB-)))"
    assert str(parse_tree(line)) == line
    assert parse_tree(line) == Tree("TOP", [Tree("S", [
        Tree("NP", [Tree("PRP$", ["his"]), Tree("NN", ["dog"])]),
        Tree("VP", [Tree("VBD", ["ran"])]),
        Tree("-LRB-", ["-LRB-"]),
    ])])


@pytest.mark.parametrize("text, message", [
    ("(S (NP (NN a))", "never closed"),
    ("(S (NN a)))", "unbalanced '\\)'"),
    ("word (S (NN a))", "outside any bracket"),
])
def test_malformed_text_is_a_user_error(text, message):
    with pytest.raises(T2TError, match=message):
        parse_trees(text)


def test_parse_tree_wants_exactly_one():
    with pytest.raises(T2TError, match="expected one tree, found 2"):
        parse_tree("(A (B b)) (A (B b))")


@pytest.mark.parametrize("label, expected", [
    ("NP-SBJ-1", "NP"), ("PP-LOC=2", "PP"), ("NP=3", "NP"), ("S-TPC-1", "S"), ("NP", "NP"),
    ("-LRB-", "-LRB-"), ("-RRB-", "-RRB-"), ("-NONE-", "-NONE-"), ("PRP$", "PRP$"),
    ("ADVP|PRT", "ADVP|PRT"), ("", ""),
])
def test_strip_function_tags(label, expected):
    assert strip_function_tags(label) == expected


def test_clean_removes_traces_function_tags_and_emptied_nodes():
    first, second = (clean_tree(t) for t in parse_trees(MRG_TEXT))
    assert str(first) == "(TOP (S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NN chairman))) (. .)))"
    # NP-SBJ held only a trace; SBAR and its S only traces: all three go.
    assert str(second) == "(TOP (S (VP (VBD went)) (. .)))"


def test_clean_root_handling_and_input_untouched():
    tree = parse_tree("(S-1 (NP-SBJ (NN a)))")
    assert str(clean_tree(tree)) == "(TOP (S (NP (NN a))))"
    assert str(tree) == "(S-1 (NP-SBJ (NN a)))"
    assert str(clean_tree(parse_tree("(ROOT (S (NN a)))"))) == "(TOP (S (NN a)))"
    assert clean_tree(parse_tree("( (S (-NONE- *)))")) == Tree("TOP", [])


def test_read_trees_errors(tmp_path):
    with pytest.raises(T2TError, match="does not exist"):
        read_trees(tmp_path / "missing.mrg")
    with pytest.raises(T2TError, match="no .mrg files"):
        read_trees(tmp_path)
    (tmp_path / "bad.mrg").write_text("( (S (NN a) )\n")
    with pytest.raises(T2TError, match="bad.mrg"):
        read_tree_file(tmp_path / "bad.mrg")


def test_sample_cleaning_matches_the_reference_clean_trees(shared_data):
    raw, reference = _sample(str(shared_data))
    assert len(raw) == len(reference) == 3914
    cleaned = [str(clean_tree(t)) for t in raw]
    mismatches = [i + 1 for i, (a, b) in enumerate(zip(cleaned, reference)) if a != b]
    assert mismatches == []
    tokens = (shared_data / "ptb_sample" / "wsj_sample.tokens").read_text().splitlines()
    assert [" ".join(clean_tree(t).leaves()) for t in raw[:50]] == tokens[:50]


def test_sample_split_by_file_number(shared_data):
    splits = wsj_split_files(shared_data / "ptb_sample")
    assert {k: len(v) for k, v in splits.items()} == {"train": 159, "dev": 20, "test": 20}
    assert splits["train"][-1].name == "wsj_0159.mrg"
    assert splits["dev"][0].name == "wsj_0160.mrg" and splits["dev"][-1].name == "wsj_0179.mrg"
    assert splits["test"][0].name == "wsj_0180.mrg" and splits["test"][-1].name == "wsj_0199.mrg"
    # The counts ../shared/data/README.md gives for this split.
    assert len(read_wsj_split(shared_data / "ptb_sample", "dev")) == 273
    assert len(read_wsj_split(shared_data / "ptb_sample", "test")) == 245


def test_full_treebank_layout_uses_sections_02_21_22_23(tmp_path):
    for section in range(25):
        folder = tmp_path / "wsj" / f"{section:02d}"
        folder.mkdir(parents=True)
        for n in range(2):
            (folder / f"wsj_{section:02d}{n:02d}.mrg").write_text(f"( (S (NN s{section}f{n})) )\n")
    splits = wsj_split_files(tmp_path)
    assert len(splits["train"]) == 40
    assert splits["train"][0].name == "wsj_0200.mrg" and splits["train"][-1].name == "wsj_2101.mrg"
    assert [p.name for p in splits["dev"]] == ["wsj_2200.mrg", "wsj_2201.mrg"]
    assert [p.name for p in splits["test"]] == ["wsj_2300.mrg", "wsj_2301.mrg"]
    assert [t.leaves() for t in read_wsj_split(tmp_path / "wsj", "test")] == [["s23f0"], ["s23f1"]]


def test_split_errors(tmp_path):
    with pytest.raises(T2TError, match="does not exist"):
        wsj_split_files(tmp_path / "nope")
    with pytest.raises(T2TError, match="no treebank found"):
        wsj_split_files(tmp_path)
    (tmp_path / "wsj_0001.mrg").write_text("( (S (NN a)) )\n")
    with pytest.raises(T2TError, match="none for the dev, test split"):
        wsj_split_files(tmp_path)
    with pytest.raises(T2TError, match="unknown treebank split 'valid'"):
        read_wsj_split(tmp_path, "valid")
