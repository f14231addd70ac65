"""An EVALB-compatible bracketing scorer (own implementation of Sekine & Collins' rules).

Follows EVALB's README and its (2006 Brown) source behaviour, line by line of
the gold and test files (one tree per line):

- Words whose POS tag is a DELETE_LABEL (exact match) are removed with their
  brackets; a sentence's length counts every word except those tagged with a
  DELETE_LABEL_FOR_LENGTH (so punctuation counts, traces do not).
- Bracket labels lose everything from their first `-` or `=` (`NP-SBJ` ->
  `NP`); a bracket is dropped when its label is a DELETE_LABEL (under
  EQ_LABEL equivalence; TOP in COLLINS.prm) or it spans no word.
- Brackets match as multisets: each gold bracket takes the first unused test
  bracket with the same span and an equal label (EQ_LABEL pairs, e.g.
  ADVP = PRT, count as equal; LABELED 0 ignores labels).
- Crossing counts test brackets that cross at least one gold bracket.
- Tagging accuracy compares the POS tags of the words that remain.
- Status 2 (skip): the test line has no words. Status 1 (error): unreadable
  tree, different word counts (`Length unmatch`) or different words
  (`Words unmatch`). Error and skip sentences count in the sentence totals
  only; a gold file with more lines than the test file stops scoring there.
- Before calling different word counts an error, the QUOTE_LABEL repair
  (EVALB 2006, `_fix_quotes`) puts back a quote word `'`, `"` or `/` that one
  tree deleted and the other kept. Only parameter files that list
  QUOTE_LABELs (the release's new.prm) use it; COLLINS.prm lists none.

Known differences from EVALB's C program: no fixed limits on sentence or
label length or on QUOTE_LABEL words (EVALB: 20); an unreadable tree scores as an error row of zeros (EVALB prints
whatever it half-read, also as an error); `(NN dog )` with a space before
`)` is read normally; FMeasure is 0.00 where EVALB prints nan (P = R = 0);
and an unknown keyword in a parameter file is an error, not a warning.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Optional, Union

from t2t_lite.errors import T2TError, did_you_mean
from t2t_lite.parsing.trees import Tree, parse_trees

OK, ERROR, SKIP = 0, 1, 2
_DELETED, _UNMATCHED, _MATCHED, _UNDEF = 5, 0, 1, 9


@dataclasses.dataclass(frozen=True)
class EvalbParams:
    """The settings of an EVALB `.prm` file (EVALB's own defaults when unset)."""

    debug: int = 0  # DEBUG: 1 prints each sentence's words and brackets.
    max_error: int = 10  # MAX_ERROR: the CLI stops after more errors than this (+1, as EVALB).
    cutoff_len: int = 40  # CUTOFF_LEN: the second summary block covers len <= this.
    labeled: bool = True  # LABELED: 0 scores spans only.
    delete_labels: tuple[str, ...] = ()  # DELETE_LABEL
    delete_labels_for_length: tuple[str, ...] = ()  # DELETE_LABEL_FOR_LENGTH
    eq_labels: tuple[tuple[str, str], ...] = ()  # EQ_LABEL pairs
    eq_words: tuple[tuple[str, str], ...] = ()  # EQ_WORD pairs
    quote_labels: tuple[str, ...] = ()  # QUOTE_LABEL: tags whose quote words may be put back

    def labels_equal(self, a: str, b: str) -> bool:
        """EVALB's label_comp: equal, or an EQ_LABEL pair in either order."""
        return a == b or (a, b) in self.eq_labels or (b, a) in self.eq_labels

    def words_equal(self, a: str, b: str) -> bool:
        """EVALB's word_comp: equal, or an EQ_WORD pair in either order."""
        return a == b or (a, b) in self.eq_words or (b, a) in self.eq_words


# COLLINS.prm, the standard setting for WSJ constituency F1; t2t-evalb's default.
COLLINS_PARAMS = EvalbParams(
    delete_labels=("TOP", "-NONE-", ",", ":", "``", "''", "."),
    delete_labels_for_length=("-NONE-",),
    eq_labels=(("ADVP", "PRT"),),
)

_INT_KEYS = {"DEBUG": "debug", "MAX_ERROR": "max_error", "CUTOFF_LEN": "cutoff_len", "LABELED": "labeled"}
_LIST_KEYS = {
    "DELETE_LABEL": "delete_labels",
    "DELETE_LABEL_FOR_LENGTH": "delete_labels_for_length",
    "QUOTE_LABEL": "quote_labels",
}
_PAIR_KEYS = {"EQ_LABEL": "eq_labels", "EQ_WORD": "eq_words"}


def parse_params(text: str, source: str = "<prm>") -> EvalbParams:
    """Reads `.prm` text: `KEYWORD value` lines; `#` lines and lines under 3 characters skipped.

    Raises:
      T2TError: an unknown keyword, a missing or non-integer value, or an
        EQ_LABEL / EQ_WORD without exactly two values.
    """
    fields: dict = {"delete_labels": [], "delete_labels_for_length": [], "quote_labels": [],
                    "eq_labels": [], "eq_words": []}
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip()
        if line.startswith("#") or len(line) < 3:
            continue
        key, _, value = line.strip().partition(" ")
        value = value.strip()
        where = f"{source}:{number}"
        known = list(_INT_KEYS) + list(_LIST_KEYS) + list(_PAIR_KEYS)
        if key not in known:
            raise T2TError(f"{where}: unknown keyword {key!r} in parameter file.{did_you_mean(key, known)}")
        if not value:
            raise T2TError(f"{where}: {key} has no value")
        if key in _INT_KEYS:
            try:
                fields[_INT_KEYS[key]] = int(value.split()[0])
            except ValueError:
                raise T2TError(f"{where}: {key} needs an integer, got {value!r}") from None
        elif key in _LIST_KEYS:
            fields[_LIST_KEYS[key]].append(value)
        else:
            pair = value.split()
            if len(pair) != 2:
                raise T2TError(f"{where}: {key} requires two values, got {value!r}")
            fields[_PAIR_KEYS[key]].append((pair[0], pair[1]))
    for name, items in fields.items():
        if isinstance(items, list):
            fields[name] = tuple(items)
    fields["labeled"] = bool(fields.get("labeled", 1))
    return EvalbParams(**fields)


def read_params(path: Union[str, pathlib.Path]) -> EvalbParams:
    """Reads a `.prm` file such as `COLLINS.prm`. Raises T2TError if unreadable."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise T2TError(f"cannot read parameter file {path}: {e}") from None
    return parse_params(text, str(path))


# The only words EVALB's QUOTE_LABEL repair looks at (its is_quote_term); PTB's `` and '' are not.
_QUOTE_WORDS = ("'", '"', "/")


@dataclasses.dataclass(eq=False)
class _Quote:
    """A word under a QUOTE_LABEL tag, kept or deleted, as EVALB's read_line notes it."""

    word: str
    tag: str
    index: int  # words kept before it: where it stands, or would be put back
    first_after: int  # brackets opened before it; those from here on lie after it
    enclosing: tuple[int, ...]  # brackets open around it


@dataclasses.dataclass
class _Side:
    """One line's words after deletion, its brackets and its EVALB length."""

    words: list[str]
    tags: list[str]
    brackets: list[list]  # [start, end, label, result] in opening order
    length: int
    tag_results: list[int]
    quotes: list[_Quote] = dataclasses.field(default_factory=list)


def _read_side(line: str, params: EvalbParams) -> _Side:
    side = _Side([], [], [], 0, [])
    stack: list = []
    for tree in parse_trees(line, "tree"):
        stack.append(tree)
        while stack:
            item = stack.pop()
            if isinstance(item, int):  # closes bracket number `item`
                side.brackets[item][1] = len(side.words)
                continue
            if item.is_preterminal():
                if item.label not in params.delete_labels_for_length:
                    side.length += 1
                if item.label in params.quote_labels and item.children[0] in _QUOTE_WORDS:
                    enclosing = tuple(x for x in stack if isinstance(x, int))
                    side.quotes.append(_Quote(item.children[0], item.label, len(side.words),
                                              len(side.brackets), enclosing))
                if item.label not in params.delete_labels:
                    side.words.append(item.children[0])
                    side.tags.append(item.label)
                    side.tag_results.append(_UNDEF)
                continue
            if any(isinstance(c, str) for c in item.children):
                raise T2TError(f"More than two elements in a bracket ({item.label})")
            stack.append(len(side.brackets))
            side.brackets.append([len(side.words), -1, item.label, _UNDEF])
            stack.extend(reversed(item.children))
    return side


def _fix_quotes(gold: _Side, test: _Side, params: EvalbParams) -> None:
    """EVALB 2006's fix_quote: puts back quote words that only one tree deleted.

    Why: a parser may tag a quote word `'`, `"` or `/` as POS, NN or CD where
    the gold tree has `''` or ``` `` ``` (or the other way round). The
    DELETE_LABEL tag drops the word from one tree only, and EVALB before 2006
    rejected the sentence as a length mismatch.

    What: each test word under a QUOTE_LABEL tag, in reading order, is compared
    with every gold word under a QUOTE_LABEL tag at the same word position (the
    test word's position when its turn comes). Where the two tags differ and
    exactly one of them is a DELETE_LABEL (exact match, no EQ_LABEL), the
    deleted word goes back into its tree (`_reinsert`), and it and the later
    QUOTE_LABEL words of that tree move one position on. EVALB calls this only
    when the word counts differ, then checks the counts and words again.
    """
    for t in test.quotes:
        position = t.index
        for g in gold.quotes:
            if g.index != position or g.tag == t.tag:
                continue
            g_deleted, t_deleted = g.tag in params.delete_labels, t.tag in params.delete_labels
            if g_deleted and not t_deleted:
                _reinsert(gold, g)
            elif t_deleted and not g_deleted:
                _reinsert(test, t)


def _reinsert(side: _Side, quote: _Quote) -> None:
    """EVALB's reinsert_term: the deleted word comes back with its tag where it was read.

    Brackets opened after it move one word on; brackets open around it end one
    word later (so a bracket that held only this word spans it again).
    """
    side.words.insert(quote.index, quote.word)
    side.tags.insert(quote.index, quote.tag)
    side.tag_results.insert(quote.index, _UNDEF)
    for bracket in side.brackets[quote.first_after:]:
        bracket[0] += 1
        bracket[1] += 1
    for number in quote.enclosing:
        side.brackets[number][1] += 1
    for later in side.quotes[side.quotes.index(quote):]:
        later.index += 1


def _massage(side: _Side, params: EvalbParams) -> None:
    """EVALB's massage_data, run only on sentences that passed the length and word checks.

    A bracket spanning no word is dropped as it is (EVALB leaves its label
    whole); any other loses its function tags (`NP-SBJ=2` -> `NP`) and is
    dropped when that label is a DELETE_LABEL. Until then brackets keep the
    result 9 and their labels as read, which is what EVALB's DEBUG block shows
    for error and skip sentences.
    """
    for bracket in side.brackets:
        if bracket[0] == bracket[1]:
            bracket[3] = _DELETED
            continue
        label = bracket[2]
        for i, char in enumerate(label):
            if char in "-=":
                label = label[:i]
                break
        bracket[2] = label
        deleted = any(params.labels_equal(label, d) for d in params.delete_labels)
        bracket[3] = _DELETED if deleted else _UNMATCHED


@dataclasses.dataclass
class SentenceResult:
    """One row of EVALB's table. Figures are 0 for error and skip sentences."""

    line: int  # the gold line number, EVALB's "ID"
    length: int  # EVALB's "Len.": gold words not tagged DELETE_LABEL_FOR_LENGTH
    status: int  # 0 OK, 1 error, 2 skip
    matched: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    crossing: int = 0
    words: int = 0  # words left after deletion, scored for tags
    correct_tags: int = 0
    message: Optional[str] = None  # why status is 1 (EVALB's stderr line)
    debug: str = ""  # EVALB's DEBUG 1 block, when asked for

    def row(self) -> str:
        """The sentence's line in EVALB's table."""
        recall = 100.0 * self.matched / self.gold_brackets if self.gold_brackets else 0.0
        precision = 100.0 * self.matched / self.test_brackets if self.test_brackets else 0.0
        accuracy = 100.0 * self.correct_tags / self.words if self.words else 0.0
        return (
            f"{self.line:4d}  {self.length:3d}    {self.status:d}  "
            f"{recall:6.2f} {precision:6.2f}   {self.matched:3d}    {self.gold_brackets:3d}  "
            f"{self.test_brackets:3d}    {self.crossing:3d}"
            f"   {self.words:4d}  {self.correct_tags:4d}   {accuracy:6.2f}"
        )


def score_sentence(gold: Union[str, Tree], test: Union[str, Tree], params: EvalbParams = COLLINS_PARAMS,
                   line: int = 1) -> SentenceResult:
    """Scores one test tree against its gold tree (one line each) by EVALB's rules."""
    try:
        gold_side = _read_side(str(gold), params)
    except T2TError as e:
        return SentenceResult(line, 0, ERROR, message=f"Reading gold tree: {e}")
    result = SentenceResult(line, gold_side.length, ERROR)
    try:
        test_side = _read_side(str(test), params)
    except T2TError as e:
        result.message = f"Reading test tree: {e}"
        return result
    g_words, t_words = gold_side.words, test_side.words
    if t_words and len(g_words) != len(t_words):
        _fix_quotes(gold_side, test_side, params)
    if not t_words:
        result.status = SKIP
    elif len(g_words) != len(t_words):
        result.message = f"Length unmatch ({len(g_words)}|{len(t_words)})"
    else:
        bad = next((i for i in range(len(g_words)) if not params.words_equal(g_words[i], t_words[i])), None)
        if bad is not None:
            result.message = f"Words unmatch ({g_words[bad]}|{t_words[bad]})"
        else:
            result.status = OK
            _compare(gold_side, test_side, params, result)
    if params.debug >= 1:
        result.debug = _debug_block(gold_side, test_side)
    return result


def _compare(gold: _Side, test: _Side, params: EvalbParams, result: SentenceResult) -> None:
    _massage(gold, params)
    _massage(test, params)
    for g in gold.brackets:
        if g[3] == _DELETED:
            continue
        for t in test.brackets:
            if t[3] == _UNMATCHED and t[0] == g[0] and t[1] == g[1] and (
                    not params.labeled or params.labels_equal(g[2], t[2])):
                g[3] = t[3] = _MATCHED
                result.matched += 1
                break
    live_gold = [g for g in gold.brackets if g[3] != _DELETED]
    live_test = [t for t in test.brackets if t[3] != _DELETED]
    result.gold_brackets, result.test_brackets = len(live_gold), len(live_test)
    result.crossing = sum(
        1 for t in live_test
        if any(g[0] < t[0] < g[1] < t[1] or t[0] < g[0] < t[1] < g[1] for g in live_gold)
    )
    result.words = len(gold.words)
    for i, (g_tag, t_tag) in enumerate(zip(gold.tags, test.tags)):
        ok = params.labels_equal(g_tag, t_tag)
        gold.tag_results[i] = test.tag_results[i] = int(ok)
        result.correct_tags += ok


def _debug_block(gold: _Side, test: _Side) -> str:
    lines = [f"-<1>---(wn1={len(gold.words):3d}, bn1={len(gold.brackets):3d})-           "
             f"-<2>---(wn2={len(test.words):3d}, bn2={len(test.brackets):3d})-"]
    for i in range(max(len(gold.words), len(test.words))):
        left = (f"{i:3d} : {gold.tag_results[i]:d} : {gold.tags[i]:<6s}  {gold.words[i]:<16s}      "
                if i < len(gold.words) else " " * 40)
        right = (f"{i:3d} : {test.tag_results[i]:d} : {test.tags[i]:<6s}  {test.words[i]:<16s}"
                 if i < len(test.words) else "")
        lines.append(left + right)
    lines.append("")
    for i in range(max(len(gold.brackets), len(test.brackets))):
        left = (f"{i:3d} : {gold.brackets[i][3]:d} : {gold.brackets[i][0]:3d}  {gold.brackets[i][1]:3d}  "
                f"{gold.brackets[i][2]:<6s}      " if i < len(gold.brackets) else " " * 32)
        right = (f"{i:3d} : {test.brackets[i][3]:d} : {test.brackets[i][0]:3d}  {test.brackets[i][1]:3d}  "
                 f"{test.brackets[i][2]:<6s}" if i < len(test.brackets) else "")
        lines.append(left + right)
    return "\n".join(lines + ["", "========"])
