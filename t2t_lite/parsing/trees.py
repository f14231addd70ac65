"""Penn Treebank trees: a small Tree type, reading `.mrg` files, cleaning, WSJ splits.

Pure Python (no TensorFlow), so `t2t-evalb` and the tests import it quickly.

Reading accepts any bracketed text: the LDC layout (`wsj/SS/wsj_SSNN.mrg`,
several multi-line trees per file, each wrapped in an unlabeled `( ... )`) and
one-tree-per-line files (`(TOP (S ...))`) parse the same way, because trees
are read as balanced s-expressions regardless of line breaks.

Cleaning (`clean_tree`) gives the training targets parsers use:

- `-NONE-` preterminals (traces, empty elements) are removed, then every
  constituent left without words is removed, recursively;
- function tags and indices are stripped from labels: everything from the
  first `-` or `=` that is not the label's first character
  (`NP-SBJ-1` -> `NP`, `PP-LOC=2` -> `PP`); labels that start with `-`
  (`-LRB-`, `-RRB-`, `-NONE-`) are kept whole, and labels such as `PRP$`,
  `WP$` or the treebank's rare `ADVP|PRT` are not touched;
- the root is `TOP`: the treebank's unlabeled outer bracket (or a `ROOT`
  root) is relabeled `TOP`; any other root is wrapped in `(TOP ...)`.

This matches `../shared/data/ptb_sample/wsj_sample.clean.trees` tree for tree.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Iterator, Union

from t2t_lite.data.layout import SPLITS
from t2t_lite.errors import T2TError

ROOT_LABEL = "TOP"
TRACE_LABEL = "-NONE-"

# The standard WSJ split (Collins 1997 onward): sections 02-21 / 22 / 23.
WSJ_SECTIONS = {
    "train": tuple(f"{s:02d}" for s in range(2, 22)),
    "dev": ("22",),
    "test": ("23",),
}
# The NLTK 10% sample holds wsj_0001 ... wsj_0199 (sections 00-01); it is split
# by file number, as ../shared/data/README.md suggests (3,396 / 273 / 245 trees).
SAMPLE_FILE_RANGES = {
    "train": (1, 159),
    "dev": (160, 179),
    "test": (180, 199),
}

_MRG_NAME = re.compile(r"^wsj_(\d{4})\.mrg$")
_TOKEN = re.compile(r"\(([^\s()]*)|\)|[^\s()]+")


@dataclasses.dataclass(slots=True, eq=False, repr=False)
class Tree:
    """A constituency tree node.

    Attributes:
      label: the node's label (`S`, `NP-SBJ`, `NN`; `""` for the treebank's
        unlabeled outer bracket).
      children: subtrees and words. A preterminal has exactly one child, its
        word (a `str`); other nodes hold `Tree` children only.
    """

    label: str
    children: list[Union["Tree", str]] = dataclasses.field(default_factory=list)

    def is_preterminal(self) -> bool:
        """True for a POS node `(TAG word)`."""
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def preterminals(self) -> Iterator["Tree"]:
        """Yields the `(TAG word)` nodes left to right."""
        stack: list[Tree] = [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal():
                yield node
            else:
                stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))

    def leaves(self) -> list[str]:
        """The words, left to right."""
        return [p.children[0] for p in self.preterminals()]  # type: ignore[misc]

    def tags(self) -> list[str]:
        """The POS tags, left to right."""
        return [p.label for p in self.preterminals()]

    def __eq__(self, other: object) -> bool:
        """Same labels, words and shape; iterative, so deep trees compare too."""
        if not isinstance(other, Tree):
            return NotImplemented
        pairs: list[tuple[Tree, Tree]] = [(self, other)]
        while pairs:
            a, b = pairs.pop()
            if a.label != b.label or len(a.children) != len(b.children):
                return False
            for x, y in zip(a.children, b.children):
                if isinstance(x, Tree) and isinstance(y, Tree):
                    pairs.append((x, y))
                elif isinstance(x, Tree) or isinstance(y, Tree) or x != y:
                    return False
        return True

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"<Tree {self}>"

    def __str__(self) -> str:
        """One-line bracketed form, e.g. `(TOP (S (NP (DT the) (NN dog)) (VP (VBD ran))))`."""
        parts: list[str] = []
        stack: list[Union[Tree, str, None]] = [self]
        while stack:  # iterative: repaired model output can nest deeply
            item = stack.pop()
            if item is None:
                parts.append(")")
            elif isinstance(item, str):
                parts.append(" " + item)
            else:
                parts.append((" (" if parts else "(") + item.label)
                stack.append(None)
                stack.extend(reversed(item.children))
        return "".join(parts)


def parse_trees(text: str, source: str = "<string>") -> list[Tree]:
    """Parses every bracketed tree in `text`, whatever its line breaks.

    Args:
      text: one or more trees, e.g. the contents of a `.mrg` file.
      source: a name for error messages (a file path).

    Returns:
      The trees in order. `(NN dog)` becomes `Tree("NN", ["dog"])`; the
      treebank's `( (S ...) )` becomes a root with label `""`.

    Raises:
      T2TError: unbalanced brackets or a word outside any bracket.
    """
    trees: list[Tree] = []
    stack: list[Tree] = []
    for match in _TOKEN.finditer(text):
        open_label, token = match.group(1), match.group()
        if open_label is not None:
            # The label is whatever follows "(" directly; "( (S" has none.
            stack.append(Tree(open_label, []))
        elif token == ")":
            if not stack:
                line = text.count("\n", 0, match.start()) + 1
                raise T2TError(f"{source}:{line}: unbalanced ')' with no open bracket")
            node = stack.pop()
            (stack[-1].children if stack else trees).append(node)
        elif not stack:
            line = text.count("\n", 0, match.start()) + 1
            raise T2TError(f"{source}:{line}: text {token!r} outside any bracket")
        else:
            stack[-1].children.append(token)
    if stack:
        raise T2TError(f"{source}: unbalanced brackets: {len(stack)} '(' never closed")
    return trees


def parse_tree(text: str, source: str = "<string>") -> Tree:
    """Parses exactly one tree.

    Raises:
      T2TError: malformed text, or not exactly one tree.
    """
    trees = parse_trees(text, source)
    if len(trees) != 1:
        raise T2TError(f"{source}: expected one tree, found {len(trees)}")
    return trees[0]


def _tree_files(path: pathlib.Path) -> list[pathlib.Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.mrg") if p.is_file())
        if not files:
            raise T2TError(f"no .mrg files under {path}")
        return files
    if not path.is_file():
        raise T2TError(f"treebank path {path} does not exist")
    return [path]


def read_trees(path_or_dir: Union[str, pathlib.Path]) -> list[Tree]:
    """Reads raw (uncleaned) trees from a file, a list of files or a directory.

    Args:
      path_or_dir: a tree file (`.mrg` or one tree per line), or a directory
        searched recursively for `*.mrg` files, read in sorted path order.

    Returns:
      The trees as written (traces, function tags, unlabeled roots kept).

    Raises:
      T2TError: the path is missing, holds no `.mrg` files, or a file is
        unreadable or malformed.
    """
    trees: list[Tree] = []
    for path in _tree_files(pathlib.Path(path_or_dir)):
        trees.extend(read_tree_file(path))
    return trees


def read_tree_file(path: Union[str, pathlib.Path]) -> list[Tree]:
    """Reads every tree in one file (see `parse_trees`)."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise T2TError(f"cannot read tree file {path}: {e}") from None
    return parse_trees(text, str(path))


def strip_function_tags(label: str) -> str:
    """`NP-SBJ-1` -> `NP`, `PP-LOC=2` -> `PP`; `-LRB-`, `-NONE-`, `PRP$` unchanged."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0]


def clean_tree(tree: Tree) -> Tree:
    """Returns a cleaned copy: no traces, no function tags, no empty nodes, root `TOP`.

    See the module docstring for the rules. A tree made only of traces comes
    back as `Tree("TOP", [])` (callers skip it); the input is not modified.
    """
    if tree.label in ("", ROOT_LABEL, "ROOT"):
        children = [_clean(c) for c in tree.children]
    else:
        children = [_clean(tree)]
    return Tree(ROOT_LABEL, [c for c in children if c is not None])


def _clean(node: Union[Tree, str]) -> Union[Tree, str, None]:
    if isinstance(node, str):
        return node
    if node.label == TRACE_LABEL:
        return None
    if node.is_preterminal():
        return Tree(strip_function_tags(node.label), list(node.children))
    children = [c for c in (_clean(c) for c in node.children) if c is not None]
    if not children:
        return None
    return Tree(strip_function_tags(node.label), children)


def wsj_split_files(root: Union[str, pathlib.Path]) -> dict[str, list[pathlib.Path]]:
    """The `.mrg` files of each split: `{"train": [...], "dev": [...], "test": [...]}`.

    Two layouts are recognised:

    - the full treebank: `root` (or `root/wsj`, or `root/parsed/mrg/wsj`,
      or `root/combined/wsj`) holds section folders `00` ... `24` of
      `wsj_SSNN.mrg` files: sections 02-21 train, 22 dev, 23 test;
    - the NLTK sample: `root` (or `root/combined`) holds `wsj_0001.mrg` ...
      `wsj_0199.mrg` directly: files 0001-0159 train, 0160-0179 dev,
      0180-0199 test (`SAMPLE_FILE_RANGES`).

    Raises:
      T2TError: neither layout is found, or a split would be empty.
    """
    root = pathlib.Path(root)
    if not root.is_dir():
        raise T2TError(f"treebank directory {root} does not exist")
    for base in (root, root / "wsj", root / "parsed" / "mrg" / "wsj", root / "combined" / "wsj"):
        if base.is_dir() and any((base / s).is_dir() for s in WSJ_SECTIONS["test"]):
            return {
                split: sorted(f for s in sections for f in (base / s).glob("wsj_*.mrg"))
                for split, sections in WSJ_SECTIONS.items()
            }
    for base in (root, root / "combined"):
        numbered = _numbered_mrg_files(base)
        if numbered:
            splits = {
                split: [f for n, f in numbered if lo <= n <= hi]
                for split, (lo, hi) in SAMPLE_FILE_RANGES.items()
            }
            empty = [s for s, files in splits.items() if not files]
            if empty:
                raise T2TError(
                    f"{base} holds wsj_NNNN.mrg files but none for the {', '.join(empty)} "
                    "split (the sample split needs files wsj_0001-wsj_0199)"
                )
            return splits
    raise T2TError(
        f"no treebank found at {root}: expected section folders 02-23 of wsj_SSNN.mrg "
        "files (the LDC layout) or wsj_0001.mrg ... wsj_0199.mrg (the NLTK sample)"
    )


def _numbered_mrg_files(base: pathlib.Path) -> list[tuple[int, pathlib.Path]]:
    if not base.is_dir():
        return []
    found = []
    for path in sorted(base.iterdir()):
        match = _MRG_NAME.match(path.name)
        if match and path.is_file():
            found.append((int(match.group(1)), path))
    return found


def read_wsj_split(root: Union[str, pathlib.Path], split: str) -> list[Tree]:
    """Reads and cleans the trees of one split (`train`, `dev` or `test`).

    Trees that clean to nothing (only traces) are dropped.

    Raises:
      T2TError: unknown split name, or see `wsj_split_files`.
    """
    if split not in SPLITS:
        raise T2TError(f"unknown treebank split {split!r}; expected one of {', '.join(SPLITS)}")
    trees = []
    for path in wsj_split_files(root)[split]:
        for tree in read_tree_file(path):
            cleaned = clean_tree(tree)
            if cleaned.children:
                trees.append(cleaned)
    return trees
