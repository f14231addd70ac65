"""Decoder output of a parsing model -> trees, and their EVALB score.

The parsing problem (`problems/parsing_wsj.py`) uses these for what it does
differently from translation after training:

  - `output_tree(output, words)` de-linearizes one decoded hypothesis over the
    words of its input line (`linearize.delinearize`, which repairs malformed
    output), so every tree written is a well-formed `(TOP ...)` tree over
    exactly the input words; an input without words gives "".
  - `evalb_report(trees, gold_path)` scores them against the gold trees with
    EVALB's rules (COLLINS.prm by default) and returns the summary to print.

Gold trees (`read_gold_trees`) may be one per line (what datagen writes as
`{problem}-{split}.trees`) or raw treebank text (`.mrg`, multi-line trees):
each tree is cleaned with `trees.clean_tree` (traces, empty constituents and
function tags removed), which leaves already-clean trees unchanged, so the
model is always scored against the trees it was trained to produce.

Pure Python: no TensorFlow.
"""

from __future__ import annotations

import pathlib
from typing import Sequence, Union

from t2t_lite.errors import T2TError
from t2t_lite.parsing.evalb import COLLINS_PARAMS, EvalbParams
from t2t_lite.parsing.evalb_report import EvalbResult, evaluate
from t2t_lite.parsing.linearize import delinearize
from t2t_lite.parsing.trees import clean_tree, parse_trees


def output_tree(output: str, words: str) -> str:
    """One model output (linearized tree) over the words of `words` -> a one-line tree.

    Never raises; returns "" for an input without words.
    """
    if not words.split():
        return ""
    return str(delinearize(output, words))


def read_gold_trees(path: Union[str, pathlib.Path]) -> list[str]:
    """The cleaned gold trees of a file, one string per tree, in file order.

    Raises:
      T2TError: the file is unreadable or its brackets do not balance.
    """
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise T2TError(f"cannot read gold trees {path}: {e}") from None
    return [str(clean_tree(tree)) for tree in parse_trees(text, source=str(path))]


def score_trees(test_trees: Sequence[str], gold_trees: Sequence[str],
                params: EvalbParams = COLLINS_PARAMS) -> EvalbResult:
    """EVALB on two lists of one-line trees (the first hypothesis of each TAB-separated line).

    Raises:
      T2TError: the lists differ in length.
    """
    if len(test_trees) != len(gold_trees):
        raise T2TError(f"{len(test_trees)} decoded trees but {len(gold_trees)} gold trees; "
                       "the reference must hold one tree per input line.")
    return evaluate(list(gold_trees), [line.split("\t")[0] for line in test_trees], params)


def summary_text(result: EvalbResult, name: str = "COLLINS.prm") -> str:
    """EVALB's `=== Summary ===` blocks (all sentences and len <= cutoff), with a title line."""
    title = (f"EVALB ({name}): bracketing F1 {result.all.fmeasure:.2f} "
             f"(len<={result.params.cutoff_len}: {result.cut.fmeasure:.2f})")
    if result.all.valid_sentences < result.all.sentences:  # EVALB leaves these out of F1
        title += (f" over {result.all.valid_sentences} of {result.all.sentences} sentences "
                  f"({result.all.error_sentences} error, {result.all.skip_sentences} skipped)")
    lines = [title,
             "=== Summary ===", "", "-- All --", *result.all.lines(), "",
             f"-- len<={result.params.cutoff_len} --", *result.cut.lines()]
    if result.messages:
        lines += ["", f"{len(result.messages)} message(s), first: {result.messages[0]}"]
    return "\n".join(lines)


def evalb_report(test_trees: Sequence[str], gold_path: Union[str, pathlib.Path],
                 params: EvalbParams = COLLINS_PARAMS) -> tuple[EvalbResult, str]:
    """Scores decoded trees against the gold file; returns the result and `summary_text`.

    Raises:
      T2TError: unreadable gold file, or a different number of trees.
    """
    result = score_trees(test_trees, read_gold_trees(gold_path), params)
    return result, summary_text(result)


def linearized_f1(hypotheses: Sequence[str], references: Sequence[str],
                  sources: Sequence[str]) -> float:
    """EVALB F1 (COLLINS.prm) of linearized hypotheses against linearized references.

    Both are de-linearized over the source words (a reference written by
    `linearize` comes back exactly); used by the trainer's dev evaluation.
    """
    test = [output_tree(h, s) for h, s in zip(hypotheses, sources)]
    gold = [output_tree(r, s) for r, s in zip(references, sources)]
    return evaluate(gold, test, COLLINS_PARAMS).f1
