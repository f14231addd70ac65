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

from typing import Optional, Sequence, Union

from t2t_lite.errors import T2TError
from t2t_lite.parsing.trees import ROOT_LABEL, Tree

PLACEHOLDER_TAG = "XX"
# Words whose PTB tag is unambiguous punctuation; used only for words the
# repair rule has to insert without a predicted tag.
PUNCTUATION_TAGS = {
    ",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":",
    "...": ":", "``": "``", "''": "''", "-LRB-": "-LRB-", "-RRB-": "-RRB-",
    "-LCB-": "-LRB-", "-RCB-": "-RRB-", "$": "$", "#": "#",
}


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
    top = Tree(ROOT_LABEL, [])
    stack = [top]
    next_word = 0
    for token in target.split():
        if _is_unknown(token):
            continue
        if token.startswith("("):
            node = Tree(token[1:], [])
            stack[-1].children.append(node)
            stack.append(node)
        elif token.startswith(")"):
            if len(stack) > 1:
                stack.pop()
        elif next_word < len(words):
            if pos_tags:
                tag = token
            else:
                tag = tags[next_word] if tags is not None else PLACEHOLDER_TAG
            stack[-1].children.append(Tree(tag, [words[next_word]]))
            next_word += 1
    if next_word < len(words):
        last = top.children[-1] if top.children else None
        home = last if isinstance(last, Tree) and not last.is_preterminal() else top
        for i in range(next_word, len(words)):
            if not pos_tags and tags is not None:
                tag = tags[i]
            else:
                tag = PUNCTUATION_TAGS.get(words[i], PLACEHOLDER_TAG)
            home.children.append(Tree(tag, [words[i]]))
    _prune_empty(top)
    return top


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
