"""Tests for the EVALB-compatible scorer and t2t-evalb; expected values by hand from EVALB's rules."""

import dataclasses

import pytest

from t2t_lite.bin import t2t_evalb
from t2t_lite.errors import T2TError
from t2t_lite.parsing.evalb import COLLINS_PARAMS, EvalbParams, parse_params, read_params, score_sentence
from t2t_lite.parsing.evalb_report import evaluate, evaluate_files, format_report
from t2t_lite.parsing.trees import parse_tree

# Deleted punctuation: "." is dropped with its word; TOP dropped; S, NP, VP remain.
A = "(TOP (S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .)))"
# ADVP = PRT; the "." attached inside VP in the test is deleted, so spans still agree.
B_GOLD = "(TOP (S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))) (. .)))"
B_TEST = "(TOP (S (NP (PRP He)) (VP (VBD gave) (ADVP (RB up)) (. .))))"
# Duplicate brackets: gold has NP(0,1) once, test twice -> 3 of 4 test brackets match.
C_GOLD = "(TOP (S (NP (NN a)) (VP (VB b))))"
C_TEST = "(TOP (S (NP (NP (NN a))) (VP (VB b))))"
# Crossing: test X(1,3) crosses gold NP(0,2); only S matches.
D_GOLD = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NN d))))"
D_TEST = "(TOP (S (DT a) (X (NN b) (VB c)) (NN d)))"
# Length mismatch: the test tags "." as NN, so it is not deleted: 2 words against 3.
E_GOLD = "(TOP (S (NP (NN a)) (VP (VB b)) (. .)))"
E_TEST = "(TOP (S (NP (NN a)) (VP (VB b)) (NN .)))"
F_GOLD = "(TOP (S (NN x)))"  # its test line is blank: skipped

GOLD = [A, B_GOLD, C_GOLD, D_GOLD, E_GOLD, F_GOLD]
TEST = [A, B_TEST, C_TEST, D_TEST, E_TEST, ""]


def _row(gold, test, params=COLLINS_PARAMS):
    return score_sentence(gold, test, params).row()


@pytest.mark.parametrize("gold, test, row", [
    (A, A, "   1    4    0  100.00 100.00     3      3    3      0      3     3   100.00"),
    (B_GOLD, B_TEST, "   1    4    0  100.00 100.00     4      4    4      0      3     2    66.67"),
    (C_GOLD, C_TEST, "   1    2    0  100.00  75.00     3      3    4      0      2     2   100.00"),
    (C_TEST, C_GOLD, "   1    2    0   75.00 100.00     3      4    3      0      2     2   100.00"),
    (D_GOLD, D_TEST, "   1    4    0   33.33  50.00     1      3    2      1      4     4   100.00"),
    (E_GOLD, E_TEST, "   1    3    1    0.00   0.00     0      0    0      0      0     0     0.00"),
    (F_GOLD, "", "   1    1    2    0.00   0.00     0      0    0      0      0     0     0.00"),
    # A trace: not counted in the length, its emptied NP dropped; "." counts in the length.
    ("(TOP (S (NP-SBJ (-NONE- *)) (VP (VB go)) (. .)))", "(TOP (S (VP (VB go)) (. .)))",
     "   1    2    0  100.00 100.00     2      2    2      0      1     1   100.00"),
    # Function tags stripped from brackets before matching.
    ("(TOP (S (NP-SBJ (NN a)) (VP (VB b))))", C_GOLD,
     "   1    2    0  100.00 100.00     3      3    3      0      2     2   100.00"),
])
def test_sentence_rows(gold, test, row):
    assert _row(gold, test) == row


def test_error_messages_like_evalb():
    assert score_sentence(E_GOLD, E_TEST).message == "Length unmatch (2|3)"
    assert score_sentence(C_GOLD, C_GOLD.replace("(VB b)", "(VB c)")).message == "Words unmatch (b|c)"
    bad = score_sentence(C_GOLD, "(TOP (S (NN a)")
    assert bad.status == 1 and "Reading test tree" in bad.message


def test_debug_block_shows_brackets_as_evalb_holds_them():
    # EVALB strips function tags and marks brackets (0 kept, 5 dropped, 1 matched) only for
    # sentences it scores; a bracket spanning no word keeps its label as read. Bracket lines are
    # "%3d : %d : %3d  %3d  %-6s" (index, result, start, end, label), gold then test.
    debug = dataclasses.replace(COLLINS_PARAMS, debug=1)
    trace = "(TOP (S (NP-SBJ (-NONE- *)) (VP (VB go))))"
    lines = score_sentence(trace, trace, debug).debug.splitlines()
    assert lines[3:7] == [
        "  0 : 5 :   0    1  TOP           0 : 5 :   0    1  TOP   ",
        "  1 : 1 :   0    1  S             1 : 1 :   0    1  S     ",
        "  2 : 5 :   0    0  NP-SBJ        2 : 5 :   0    0  NP-SBJ",
        "  3 : 1 :   0    1  VP            3 : 1 :   0    1  VP    ",
    ]
    # Words unmatch (b|c): never scored, so every result stays 9 and NP-SBJ stays whole.
    gold = "(TOP (S (NP-SBJ (NN a)) (VP (VB b))))"
    lines = score_sentence(gold, gold.replace("(VB b)", "(VB c)"), debug).debug.splitlines()
    assert lines[6] == "  2 : 9 :   0    1  NP-SBJ        2 : 9 :   0    1  NP-SBJ"
    assert all(line[6] == "9" and line[38] == "9" for line in lines[4:8])


def test_without_eq_label_advp_and_prt_differ():
    params = dataclasses.replace(COLLINS_PARAMS, eq_labels=())
    assert _row(B_GOLD, B_TEST, params) == (
        "   1    4    0   75.00  75.00     3      4    4      0      3     2    66.67")


def test_unlabeled_scores_spans_only():
    test = "(TOP (S (VP (NN a)) (NP (VB b))))"
    assert score_sentence(C_GOLD, test).matched == 1
    assert score_sentence(C_GOLD, test, dataclasses.replace(COLLINS_PARAMS, labeled=False)).matched == 3


def test_corpus_summary_by_hand():
    result = evaluate(GOLD, TEST)
    s = result.all
    assert (s.sentences, s.error_sentences, s.skip_sentences, s.valid_sentences) == (6, 1, 1, 4)
    assert (s.matched, s.gold_brackets, s.test_brackets) == (11, 13, 13)
    assert s.recall == pytest.approx(100 * 11 / 13) and s.fmeasure == pytest.approx(100 * 11 / 13)
    assert (s.complete_match, s.average_crossing, s.no_crossing, s.two_or_less_crossing) == (50, 0.25, 75, 100)
    assert s.tagging_accuracy == pytest.approx(100 * 11 / 12)
    assert result.messages == ["5 : Length unmatch (2|3)"]
    # Cut-off 3 keeps C (len 2), E (len 3, error) and F (len 1, skip).
    cut = evaluate(GOLD, TEST, dataclasses.replace(COLLINS_PARAMS, cutoff_len=3)).cut
    assert (cut.sentences, cut.error_sentences, cut.skip_sentences, cut.valid_sentences) == (3, 1, 1, 1)
    assert round(cut.fmeasure, 2) == 85.71  # P 75, R 100


def test_line_count_mismatch():
    result = evaluate([A, A, A], [A])
    assert result.all.sentences == 1
    assert result.messages == ["2 : Number of lines unmatch (too many lines in gold file)"]
    result = evaluate([A], [A, A])
    assert result.all.sentences == 1
    assert result.messages == ["2 : Number of lines unmatch (too many lines in test file)"]


def test_stops_after_max_error_plus_one_errors_like_evalb():
    params = dataclasses.replace(COLLINS_PARAMS, max_error=1)
    result = evaluate([E_GOLD] * 5, [E_TEST] * 5, params, stop_at_max_error=True)
    assert result.stopped and len(result.sentences) == 2 and len(result.messages) == 3
    assert "=== Summary ===" not in format_report(result)
    assert len(evaluate([E_GOLD] * 5, [E_TEST] * 5, params).sentences) == 5


def test_collins_prm_file_equals_builtin_defaults(shared_data):
    assert read_params(shared_data / "evalb" / "COLLINS.prm") == COLLINS_PARAMS


def test_parse_params():
    params = parse_params("# comment\nLABELED 0\nCUTOFF_LEN 20  \nDELETE_LABEL TOP\n"
                          "EQ_LABEL ADVP PRT\nEQ_WORD This this\n\nDEBUG 1\n")
    assert params == EvalbParams(debug=1, cutoff_len=20, labeled=False, delete_labels=("TOP",),
                                 eq_labels=(("ADVP", "PRT"),), eq_words=(("This", "this"),))
    with pytest.raises(T2TError, match="unknown keyword 'DELETE_LABELS'.*Did you mean 'DELETE_LABEL'"):
        parse_params("DELETE_LABELS TOP\n")
    with pytest.raises(T2TError, match="requires two values"):
        parse_params("EQ_LABEL ADVP\n")
    with pytest.raises(T2TError, match="needs an integer"):
        parse_params("CUTOFF_LEN forty\n")


# COLLINS.prm plus the QUOTE_LABEL lines of EVALB 2006's new.prm: a word ', " or / under one of
# these tags that one tree deletes (`` or '' are DELETE_LABELs) and the other keeps is put back.
QUOTE_PRM = """DELETE_LABEL TOP
DELETE_LABEL -NONE-
DELETE_LABEL ,
DELETE_LABEL :
DELETE_LABEL ``
DELETE_LABEL ''
DELETE_LABEL .
DELETE_LABEL_FOR_LENGTH -NONE-
EQ_LABEL ADVP PRT
QUOTE_LABEL ``
QUOTE_LABEL ''
QUOTE_LABEL POS
QUOTE_LABEL NN
QUOTE_LABEL CD
QUOTE_LABEL VBZ
QUOTE_LABEL :
"""
QUOTE_PARAMS = parse_params(QUOTE_PRM)

# Gold deletes both quotes, the test keeps them (NN, CD): 2 words against 4.
# Gold as read: words a b; brackets TOP(0,2) S(0,2) NP(0,1) VP(1,2); quotes `` at word 0
# (inside TOP, S, NP; before VP) and '' at word 1 (inside TOP, S, NP; before VP).
# Test: words " a " b; TOP(0,4) S(0,4) NP(0,2) VP(3,4); quotes NN at 0, CD at 2.
# Test NN at 0 meets gold `` at 0: `` is deleted, NN is not -> gold gets " back at 0: TOP, S, NP
# end one later, VP moves on: TOP(0,3) S(0,3) NP(0,2) VP(2,3); gold '' moves to word 2.
# Test CD at 2 meets gold '' at 2 -> gold gets " back at 2: TOP(0,4) S(0,4) NP(0,3) VP(3,4).
# Words agree; S and VP match, NP(0,3) against NP(0,2) does not: 2 of 3 each side, no crossing;
# tags `` NN '' VB against NN NN CD VB: 2 of 4. Length 4 (quotes count, only -NONE- does not).
QUOTE_GOLD = "(TOP (S (NP (`` \") (NN a) ('' \")) (VP (VB b))))"
QUOTE_TEST = "(TOP (S (NP (NN \") (NN a)) (CD \") (VP (VB b))))"


@pytest.mark.parametrize("gold, test, row, collins_message", [
    (QUOTE_GOLD, QUOTE_TEST,
     "   1    4    0   66.67  66.67     2      3    3      0      4     2    50.00", "Length unmatch (2|4)"),
    # The test deletes, the gold keeps (POS): the test gets ' back. Gold: dogs ' food barks,
    # S(0,4) NP(0,3) NP(0,2) VP(3,4). Test as read: dogs food barks, S(0,3) NP(0,1) NP(1,2)
    # VP(2,3), '' at word 1 inside TOP and S, before the second NP. Put back: S(0,4) NP(0,1)
    # NP(2,3) VP(3,4). S and VP match: 2 of 4 each side, no crossing; tags 3 of 4 (POS / '').
    ("(TOP (S (NP (NP (NNS dogs) (POS ')) (NN food)) (VP (VBZ barks))))",
     "(TOP (S (NP (NNS dogs)) ('' ') (NP (NN food)) (VP (VBZ barks))))",
     "   1    4    0   50.00  50.00     2      4    4      0      4     3    75.00", "Length unmatch (4|3)"),
    # A bracket that held only the deleted quote: gold NP(0,0) would be dropped as empty, but the
    # quote is put back first (as EVALB does, before dropping brackets), so NP(0,1) is scored and
    # matches: S(0,2) NP(0,1) VP(1,2) on both sides, 3 of 3; tags `` / NN wrong, VB right.
    ("(TOP (S (NP (`` \")) (VP (VB b))))", "(TOP (S (NP (NN \")) (VP (VB b))))",
     "   1    2    0  100.00 100.00     3      3    3      0      2     1    50.00", "Length unmatch (1|2)"),
])
def test_quote_label_repair_scores_the_sentence(gold, test, row, collins_message):
    assert _row(gold, test, QUOTE_PARAMS) == row
    # COLLINS.prm lists no QUOTE_LABEL: the same pair stays an error sentence.
    collins = score_sentence(gold, test)
    assert (collins.status, collins.message) == (1, collins_message)


@pytest.mark.parametrize("gold, test, message", [
    # PTB's `` token is not one of the words ' " / that EVALB puts back.
    ("(TOP (S (`` ``) (NP (NN a)) (VP (VB b))))", "(TOP (S (NN ``) (NP (NN a)) (VP (VB b))))",
     "Length unmatch (2|3)"),
    # JJ is not a QUOTE_LABEL, so the test's " is not paired with the gold's.
    ("(TOP (S ('' \") (NP (NN a)) (VP (VB b))))", "(TOP (S (JJ \") (NP (NN a)) (VP (VB b))))",
     "Length unmatch (2|3)"),
    # The gold's ' is put back against the test's ", then the words differ.
    ("(TOP (S (NP (NN a)) ('' ') (VP (VB b))))", "(TOP (S (NP (NN a)) (NN \") (VP (VB b))))",
     "Words unmatch ('|\")"),
    # The quote is put back (2 -> 3 gold words) but the test's "." under NN still differs; EVALB
    # reports the counts after the repair.
    ("(TOP (S (`` \") (NP (NN a)) (VP (VB b)) (. .)))", "(TOP (S (NN \") (NP (NN a)) (VP (VB b)) (NN .)))",
     "Length unmatch (3|4)"),
])
def test_quote_label_repair_that_does_not_apply_stays_an_error(gold, test, message):
    result = score_sentence(gold, test, QUOTE_PARAMS)
    assert (result.status, result.message) == (1, message)


def test_parse_quote_labels():
    assert parse_params(QUOTE_PRM) == dataclasses.replace(
        COLLINS_PARAMS, quote_labels=("``", "''", "POS", "NN", "CD", "VBZ", ":"))


def test_sample_gold_against_itself_is_100(shared_data):
    gold = shared_data / "ptb_sample" / "wsj_sample.clean.trees"
    result = evaluate_files(gold, gold)
    for block in (result.all, result.cut):
        assert block.error_sentences == block.skip_sentences == 0
        assert [line for line in block.lines() if "= 100.00" not in line and "sentence" not in line] == [
            "Average crossing          =   0.00"]
    assert (result.all.sentences, result.cut.sentences) == (3914, 3629)


def test_tree_objects_are_accepted():
    assert evaluate([parse_tree(A)], [parse_tree(A)]).f1 == 100.0


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_cli_report_layout(tmp_path, capsys):
    gold, test = _write(tmp_path, "gold", GOLD), _write(tmp_path, "test", TEST)
    assert t2t_evalb.main([gold, test]) == 0
    out, err = capsys.readouterr()
    assert err == "5 : Length unmatch (2|3)\n"
    lines = out.splitlines()
    assert lines[:3] == [
        "  Sent.                        Matched  Bracket   Cross        Correct Tag",
        " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
        "=" * 76,
    ]
    assert lines[4] == "   2    4    0  100.00 100.00     4      4    4      0      3     2    66.67"
    assert lines[9:12] == [
        "=" * 76,
        "                 84.62  84.62     11    13    13      1     12    11    91.67",
        "=== Summary ===",
    ]
    assert lines[12:26] == [
        "",
        "-- All --",
        "Number of sentence        =      6",
        "Number of Error sentence  =      1",
        "Number of Skip  sentence  =      1",
        "Number of Valid sentence  =      4",
        "Bracketing Recall         =  84.62",
        "Bracketing Precision      =  84.62",
        "Bracketing FMeasure       =  84.62",
        "Complete match            =  50.00",
        "Average crossing          =   0.25",
        "No crossing               =  75.00",
        "2 or less crossing        = 100.00",
        "Tagging accuracy          =  91.67",
    ]
    assert lines[26:28] == ["", "-- len<=40 --"] and lines[28:] == lines[14:26]


def test_cli_prm_and_cutoff_options(tmp_path, capsys):
    prm = _write(tmp_path, "x.prm", ["LABELED 0", "DELETE_LABEL TOP"])
    gold, test = _write(tmp_path, "gold", [C_GOLD]), _write(tmp_path, "test", ["(TOP (S (VP (NN a)) (NP (VB b))))"])
    assert t2t_evalb.main([gold, test, "-p", prm, "-c", "1"]) == 0
    out = capsys.readouterr().out
    assert "Bracketing FMeasure       = 100.00" in out and "-- len<=1 --" in out


def test_cli_prm_with_quote_labels_scores_the_quote_sentence(tmp_path, capsys):
    prm = _write(tmp_path, "new.prm", [QUOTE_PRM])
    gold, test = _write(tmp_path, "gold", [QUOTE_GOLD]), _write(tmp_path, "test", [QUOTE_TEST])
    assert t2t_evalb.main([gold, test, "-p", prm]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[3] == "   1    4    0   66.67  66.67     2      3    3      0      4     2    50.00"


@pytest.mark.parametrize("make_args, message", [
    (lambda d, g: [g, str(d / "missing")], "Cannot read"),
    (lambda d, g: [g, g, "-p", str(d / "missing.prm")], "cannot read parameter file"),
    (lambda d, g: [g, g, "-p", _write(d, "bad.prm", ["LABELLED 1"])], "unknown keyword 'LABELLED'"),
])
def test_cli_user_errors_are_one_line(tmp_path, capsys, make_args, message):
    gold = _write(tmp_path, "gold", [A])
    assert t2t_evalb.main(make_args(tmp_path, gold)) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("t2t-evalb: error: ") and message in err and err.count("\n") == 1


def test_cli_stops_at_max_error(tmp_path, capsys):
    gold, test = _write(tmp_path, "gold", [E_GOLD] * 3), _write(tmp_path, "test", [E_TEST] * 3)
    assert t2t_evalb.main([gold, test, "-e", "0"]) == 1
    out, err = capsys.readouterr()
    assert "=== Summary ===" not in out and "t2t-evalb: error: stopped after 2 errors" in err


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        t2t_evalb.main(["--help"])
    assert exit_info.value.code == 0
    assert "GOLD" in capsys.readouterr().out
