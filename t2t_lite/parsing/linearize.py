"""Trees as sequences (Vinyals et al. 2015 style) and back, with a repair rule.

Linearization turns a cleaned tree into a (source, target) pair of strings:

    (TOP (S (NP (NNP Ms.) (NNP Haag)) (VP (VBZ plays) (NP (NNP Elianti))) (. .)))
    source: "Ms. Haag plays Elianti ."
    target: "(S (NP NNP NNP ) (VP VBZ (NP NNP ) ) . )"

The source is the words joined by single spaces. The target is the tree below
`TOP` with each opening bracket written `(LABEL`, each closing bracket `)`,
and each word replaced by one *word slot*.

POS tags are kept in the target by default (`pos_tags=True`): the word slot is
the word's tag (`NNP`, `.`), not Vinyals et al.'s normalised `XX`. Decision:
EVALB deletes punctuation by its POS tag and reports tagging accuracy, so the
de-linearized trees must carry tags, and tags predicted by the model itself
need no separate tagger. `pos_tags=False` writes `XX` for every word as
Vinyals et al. did; `delinearize` then tags each word `XX` unless `tags=` is
given (e.g. the gold or a tagger's tags).

`delinearize(target, words)` never raises and always returns a well-formed
`(TOP ...)` tree whose leaves are exactly `words`, in order. The repair rule,
applied token by token (tokens are split on whitespace):

1. `(LABEL` opens a constituent; `)` closes the innermost open one (a
   Vinyals-style `)LABEL` is read as `)`, its label ignored). A `)` with no
   open constituent is dropped.
2. Any other token is a word slot: it takes the next input word, tagged with
   the token (or `XX` / `tags[i]` under `pos_tags=False`). Slots beyond the
   last word are dropped (too many slots).
   With POS tags, slots and words are first aligned where they disagree (see
   `align_slots`): punctuation words (`,` `.` `:` quotes: the tags EVALB deletes)
   anchor the alignment, so a slot dropped or added early does not shift
   every later word under the wrong tag. A slot the alignment leaves without
   a word is dropped; a word left without a slot is inserted where its
   neighbours are, in the innermost constituent open at that point, tagged by
   its punctuation tag or `XX`. Slots keep their predicted tags (the treebank
   itself has a few words under unusual tags, e.g. `(, Wa)`).
3. Unknown tokens are dropped: a token with a bracket anywhere but in the
   positions above (`(`, `NP)`, `((S`), or a special symbol `<...>` such as
   `<unk>`, `<pad>`, `</s>`.
4. At the end, constituents still open are closed (unbalanced output).
5. Words left without a slot (too few slots, or empty output) are appended,
   in order, as preterminals to the last top-level constituent (to `TOP`
   itself when there is none); their tag is the word's fixed punctuation tag
   when it is one of `PUNCTUATION_TAGS` (so EVALB still deletes it), else `XX`.
6. Constituents that ended up with no words are removed, recursively.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence, Union

from t2t_lite.errors import T2TError
from t2t_lite.parsing.trees import ROOT_LABEL, Tree

PLACEHOLDER_TAG = "XX"
# Words whose PTB tag is unambiguous punctuation; used only for words the
# repair rule has to insert without a predicted tag.
PUNCTUATION_TAGS = {
    ",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":",
    "...": ":", "-": ":", "``": "``", "`": "``", "''": "''", "-LRB-": "-LRB-", "-RRB-": "-RRB-",
    "-LCB-": "-LRB-", "-RCB-": "-RRB-", "$": "$", "#": "#",
}


# The punctuation tags EVALB's COLLINS.prm deletes (with their words): a word
# and its tag must agree on these, or EVALB rejects the whole sentence.
DELETED_PUNCTUATION_TAGS = frozenset({",", ".", ":", "``", "''"})
# Words that are always deleted punctuation (`,` `;` `--` ...).
DELETED_PUNCTUATION_WORDS = frozenset(
    word for word, tag in PUNCTUATION_TAGS.items() if tag in DELETED_PUNCTUATION_TAGS)


# Words that are deleted punctuation under one tag and not under another
# (`'` is `POS` or `''`): quote characters only, and not in `PUNCTUATION_TAGS`.
AMBIGUOUS_PUNCTUATION_PATTERN = "['`\"]+"


def _punctuation_class(word: str) -> Optional[bool]:
    """True: the word is deleted punctuation (`,` `.` `;` ...); None: it may be
    either (`'`, see `AMBIGUOUS_PUNCTUATION_PATTERN`); False: it is not (`%`, `&`, words)."""
    if word in DELETED_PUNCTUATION_WORDS:
        return True
    return None if re.fullmatch(AMBIGUOUS_PUNCTUATION_PATTERN, word) else False


def align_slots(slot_tags: Sequence[str], words: Sequence[str]) -> list[Optional[int]]:
    """Aligns predicted word slots to the input words; returns each slot's word index or None.

    A monotonic alignment of least cost: a slot and a word agree when both or
    neither are deleted punctuation, or the word may be either (cost 0, else
    1.5 as a forced match);
    leaving out a slot or a word costs 1. Among alignments of equal cost the
    earliest slots keep their words (the same as filling slots in order when
    nothing disagrees). Words with no slot are those missing from the result.
    """
    n, m = len(slot_tags), len(words)
    slot_punct = [t in DELETED_PUNCTUATION_TAGS for t in slot_tags]
    word_punct = [_punctuation_class(w) for w in words]

    def mismatch(i: int, j: int) -> float:
        return 0.0 if word_punct[j] is None or word_punct[j] == slot_punct[i] else 1.5

    if n == m and not any(mismatch(i, i) for i in range(n)):
        return list(range(n))
    # cost[i][j]: the least cost of aligning slots i.. with words j.. (filled backwards).
    cost = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n or j == m:
                cost[i][j] = float((n - i) + (m - j))
                continue
            match = mismatch(i, j) + cost[i + 1][j + 1]
            cost[i][j] = min(match, 1.0 + cost[i + 1][j], 1.0 + cost[i][j + 1])
    result: list[Optional[int]] = []
    i = j = 0
    while i < n:
        if j < m and cost[i][j] == mismatch(i, j) + cost[i + 1][j + 1]:
            result.append(j)
            i, j = i + 1, j + 1
        elif j < m and cost[i][j] == 1.0 + cost[i][j + 1]:
            j += 1  # word j gets no slot
        else:
            result.append(None)  # slot i gets no word
            i += 1
    return result


def linearize(tree: Tree, pos_tags: bool = True) -> tuple[str, str]:
    """Returns `(source, target)` for a cleaned tree (see the module docstring).

    Args:
      tree: a tree as `clean_tree` returns it; a `TOP` root is left out of the
        target (every other root is written).
      pos_tags: write each word's POS tag as its slot (default) or `XX`.

    Returns:
      `(source, target)`: the words joined by spaces; the bracketed labels.

    Raises:
      T2TError: a word that is not under a preterminal, or a word or label
        containing whitespace or brackets (it could not be read back).
    """
    tokens: list[str] = []
    roots = tree.children if tree.label == ROOT_LABEL else [tree]
    stack: list[Union[Tree, str, None]] = list(reversed(roots))
    while stack:
        node = stack.pop()
        if node is None:
            tokens.append(")")
        elif isinstance(node, str):
            raise T2TError(f"cannot linearize: word {node!r} is not under a POS tag")
        elif node.is_preterminal():
            tokens.append(_checked(node.label) if pos_tags else PLACEHOLDER_TAG)
        else:
            tokens.append("(" + _checked(node.label))
            stack.append(None)
            stack.extend(reversed(node.children))
    words = [_checked(w) for w in tree.leaves()]
    return " ".join(words), " ".join(tokens)


def _checked(symbol: str) -> str:
    if not symbol or any(c.isspace() or c in "()" for c in symbol):
        raise T2TError(f"cannot linearize the tree symbol {symbol!r}: empty, or has a space or bracket")
    return symbol


def _is_unknown(token: str) -> bool:
    if token.startswith("<") and token.endswith(">") and len(token) > 2:
        return True
    if token.startswith("("):
        return len(token) == 1 or any(c in "()" for c in token[1:])
    if token.startswith(")"):
        return any(c in "()" for c in token[1:])
    return any(c in "()" for c in token)


def delinearize(
    target: str,
    words: Union[str, Sequence[str]],
    pos_tags: bool = True,
    tags: Optional[Sequence[str]] = None,
) -> Tree:
    """Rebuilds a `(TOP ...)` tree over exactly `words` from a (model) target.

    Never raises for any `target`: malformed output is repaired by the rule in
    the module docstring.

    Args:
      target: the bracketed label sequence, e.g. `"(S (NP DT NN ) VBD . )"`.
      words: the input words, a list or the source string (split on spaces).
      pos_tags: word slots are POS tags (default); if False, slots are
        placeholders and words are tagged from `tags` or `XX`.
      tags: tags for the words when `pos_tags` is False (ignored otherwise).

    Returns:
      A well-formed tree whose `leaves()` equal `words`.
    """
    if isinstance(words, str):
        words = words.split()
    words = list(words)
    if tags is not None and len(tags) != len(words):
        tags = None
    tokens = [t for t in target.split() if not _is_unknown(t)]
    slot_tags = [t for t in tokens if not t.startswith(("(", ")"))]
    aligned = iter(align_slots(slot_tags, words) if pos_tags else range(len(words)))
    top = Tree(ROOT_LABEL, [])
    stack = [top]
    next_word = 0
    for token in tokens:
        if token.startswith("("):
            node = Tree(token[1:], [])
            stack[-1].children.append(node)
            stack.append(node)
        elif token.startswith(")"):
            if len(stack) > 1:
                stack.pop()
        else:
            index = next(aligned, None)
            if index is None:
                continue  # a slot without a word (too many slots)
            for skipped in range(next_word, index):  # words the alignment gave no slot
                stack[-1].children.append(Tree(_fallback_tag(words[skipped]), [words[skipped]]))
            if pos_tags:
                tag = token
            else:
                tag = tags[index] if tags is not None else PLACEHOLDER_TAG
            stack[-1].children.append(Tree(tag, [words[index]]))
            next_word = index + 1
    if next_word < len(words):
        last = top.children[-1] if top.children else None
        home = last if isinstance(last, Tree) and not last.is_preterminal() else top
        for i in range(next_word, len(words)):
            tag = tags[i] if not pos_tags and tags is not None else _fallback_tag(words[i])
            home.children.append(Tree(tag, [words[i]]))
    _prune_empty(top)
    return top


def _fallback_tag(word: str) -> str:
    """The tag of a word placed without a predicted tag: its punctuation tag, else `XX`."""
    return PUNCTUATION_TAGS.get(word, PLACEHOLDER_TAG)


def _prune_empty(root: Tree) -> None:
    """Removes word-less constituents below `root`, iteratively (output can nest deeply)."""
    order: list[Tree] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(c for c in node.children if isinstance(c, Tree) and not c.is_preterminal())
    for node in reversed(order):  # children before parents
        node.children = [
            c for c in node.children if isinstance(c, Tree) and (c.is_preterminal() or c.children)
        ]
