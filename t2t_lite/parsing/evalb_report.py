"""Corpus-level EVALB: totals for all sentences and for len <= CUTOFF_LEN, and EVALB's report.

`evaluate(gold_lines, test_lines)` scores line i of the test against line i of
the gold (see `t2t_lite.parsing.evalb` for the per-sentence rules);
`format_report` prints the result in EVALB's own layout, so it can be diffed
against `evalb -p COLLINS.prm GOLD TEST`.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Sequence, Union

from t2t_lite import textio
from t2t_lite.parsing.evalb import COLLINS_PARAMS, ERROR, SKIP, EvalbParams, SentenceResult, score_sentence
from t2t_lite.parsing.trees import Tree

_RULE = "=" * 76
HEADER = (
    "  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
    " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n" + _RULE
)


@dataclasses.dataclass
class Summary:
    """One `-- All --` or `-- len<=N --` block: counts over the valid sentences."""

    sentences: int = 0
    error_sentences: int = 0
    skip_sentences: int = 0
    matched: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    complete_match_sentences: int = 0
    words: int = 0
    correct_tags: int = 0
    crossing: int = 0
    no_crossing_sentences: int = 0
    two_or_less_crossing_sentences: int = 0

    def add(self, r: SentenceResult) -> None:
        """Counts one sentence as EVALB's individual_result does."""
        self.sentences += 1
        if r.status == ERROR:
            self.error_sentences += 1
            return
        if r.status == SKIP:
            self.skip_sentences += 1
            return
        self.matched += r.matched
        self.gold_brackets += r.gold_brackets
        self.test_brackets += r.test_brackets
        self.complete_match_sentences += r.gold_brackets == r.test_brackets == r.matched
        self.words += r.words
        self.correct_tags += r.correct_tags
        self.crossing += r.crossing
        self.no_crossing_sentences += r.crossing == 0
        self.two_or_less_crossing_sentences += r.crossing <= 2

    @property
    def valid_sentences(self) -> int:
        return self.sentences - self.error_sentences - self.skip_sentences

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold_brackets if self.gold_brackets else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.test_brackets if self.test_brackets else 0.0

    @property
    def fmeasure(self) -> float:
        """2PR/(P+R) in percent; 0.0 where P + R = 0 (EVALB prints nan)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def _per_sentence(self, count: int, scale: float) -> float:
        return scale * count / self.valid_sentences if self.valid_sentences > 0 else 0.0

    @property
    def complete_match(self) -> float:
        return self._per_sentence(self.complete_match_sentences, 100.0)

    @property
    def average_crossing(self) -> float:
        return self._per_sentence(self.crossing, 1.0)

    @property
    def no_crossing(self) -> float:
        return self._per_sentence(self.no_crossing_sentences, 100.0)

    @property
    def two_or_less_crossing(self) -> float:
        return self._per_sentence(self.two_or_less_crossing_sentences, 100.0)

    @property
    def tagging_accuracy(self) -> float:
        return 100.0 * self.correct_tags / self.words if self.words else 0.0

    def lines(self) -> list[str]:
        """The block's `Name = value` lines, worded and formatted as EVALB prints them."""
        return [
            f"Number of sentence        = {self.sentences:6d}",
            f"Number of Error sentence  = {self.error_sentences:6d}",
            f"Number of Skip  sentence  = {self.skip_sentences:6d}",
            f"Number of Valid sentence  = {self.valid_sentences:6d}",
            f"Bracketing Recall         = {self.recall:6.2f}",
            f"Bracketing Precision      = {self.precision:6.2f}",
            f"Bracketing FMeasure       = {self.fmeasure:6.2f}",
            f"Complete match            = {self.complete_match:6.2f}",
            f"Average crossing          = {self.average_crossing:6.2f}",
            f"No crossing               = {self.no_crossing:6.2f}",
            f"2 or less crossing        = {self.two_or_less_crossing:6.2f}",
            f"Tagging accuracy          = {self.tagging_accuracy:6.2f}",
        ]


@dataclasses.dataclass
class EvalbResult:
    """Everything EVALB reports for a pair of files."""

    params: EvalbParams
    sentences: list[SentenceResult]
    all: Summary
    cut: Summary  # sentences with length <= params.cutoff_len
    messages: list[str]  # EVALB's stderr lines, "LINE : message", in order
    stopped: bool = False  # True when scoring stopped at MAX_ERROR

    @property
    def f1(self) -> float:
        """Bracketing FMeasure over all sentences, in percent."""
        return self.all.fmeasure


def evaluate(
    gold_lines: Sequence[Union[str, Tree]],
    test_lines: Sequence[Union[str, Tree]],
    params: EvalbParams = COLLINS_PARAMS,
    stop_at_max_error: bool = False,
) -> EvalbResult:
    """Scores test trees against gold trees, line by line, as EVALB does.

    Args:
      gold_lines: gold trees, one per line (strings or `Tree`s); a blank line
        is a sentence too (skipped when its test line is blank).
      test_lines: test trees in the same order.
      params: the `.prm` settings; COLLINS.prm's by default.
      stop_at_max_error: stop, like EVALB, once more than
        `params.max_error + 1` errors have been reported (`stopped` is set).
        Library callers such as the decoder keep the default, False.

    Returns:
      An `EvalbResult`. If the gold has more lines than the test, scoring
      stops at the first gold line without a test line; extra test lines are
      reported and ignored.
    """
    result = EvalbResult(params, [], Summary(), Summary(), [])

    def report(line: int, message: str) -> bool:
        result.messages.append(f"{line} : {message}")
        result.stopped = stop_at_max_error and len(result.messages) > params.max_error + 1
        return result.stopped

    for index, gold in enumerate(gold_lines):
        line = index + 1
        if index >= len(test_lines):
            report(line, "Number of lines unmatch (too many lines in gold file)")
            break
        sentence = score_sentence(gold, test_lines[index], params, line)
        if sentence.message and report(line, sentence.message):
            break
        result.sentences.append(sentence)
        result.all.add(sentence)
        if sentence.length <= params.cutoff_len:
            result.cut.add(sentence)
    else:
        if len(test_lines) > len(gold_lines):
            report(len(gold_lines) + 1, "Number of lines unmatch (too many lines in test file)")
    return result


def read_tree_lines(path: Union[str, pathlib.Path]) -> list[str]:
    """A file's lines, as EVALB reads them: split on "\\n" only (a final newline
    does not add a line), the line end ("\\n" or "\\r\\n") removed.

    Raises:
      T2TError: the file is missing, unreadable or not UTF-8 (`t2t_lite.textio`).
    """
    return textio.read_lines(path, strip="newline")


def evaluate_files(gold_path: Union[str, pathlib.Path], test_path: Union[str, pathlib.Path],
                   params: EvalbParams = COLLINS_PARAMS, stop_at_max_error: bool = False) -> EvalbResult:
    """`evaluate` on two files of one tree per line. Raises T2TError if one is unreadable."""
    return evaluate(read_tree_lines(gold_path), read_tree_lines(test_path), params, stop_at_max_error)


def format_report(result: EvalbResult) -> str:
    """EVALB's stdout: header, one row per sentence, totals, `=== Summary ===` blocks.

    With DEBUG >= 1 each row is followed by its words-and-brackets block. When
    `result.stopped`, EVALB exits before its totals, and so does this report.
    """
    lines = [HEADER]
    for sentence in result.sentences:
        lines.append(sentence.row())
        if sentence.debug:
            lines.append(sentence.debug)
    if result.stopped:
        return "\n".join(lines) + "\n"
    total = result.all
    lines.append(_RULE)
    brackets = ""
    if total.gold_brackets > 0 and total.test_brackets > 0:
        brackets = (f"                {total.recall:6.2f} {total.precision:6.2f} {total.matched:6d} "
                    f"{total.gold_brackets:5d} {total.test_brackets:5d}  {total.crossing:5d}")
    lines.append(brackets + f"  {total.words:5d} {total.correct_tags:5d}   {total.tagging_accuracy:6.2f}")
    lines.append("=== Summary ===")
    lines += ["", "-- All --"] + total.lines()
    lines += ["", f"-- len<={result.params.cutoff_len} --"] + result.cut.lines()
    return "\n".join(lines) + "\n"
