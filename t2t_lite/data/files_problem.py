"""A problem defined by the user's own files: any language pair, no code.

What tensor2tensor's `text2text_tmpdir`, OpenNMT-tf's data configuration and
fairseq-preprocess's `--trainpref` give their users: name the files, get a
problem. The definition is data (`ProblemDefinition`, stored as a JSON
object: `t2t_lite.data.problem_definition`), written by t2t-datagen beside
the shards (`t2t_lite.data.definitions`) and into every model directory
trained on it, so later programs rebuild the problem from there without the
files or the flags.

A corpus is named on the command line as `[NAME=]FILES` (`parse_corpus_spec`),
FILES being either one TSV file (source TAB target on each line) or two
aligned plain-text files `SOURCE,TARGET`; any of them may be gzipped
(`.gz`). NAME defaults to the first file's name without `.gz`, `.tsv` and a
language suffix (`europarl-v7.de-en.de` -> `europarl-v7.de-en`); train corpora
are what `t2t-trainer --train_mix` weighs, by these names.

Splits: train is every train corpus in order; dev is `--dev_files`, or when
none is given a held-out sample of the train pairs (`held_out_size`: 5% of
them, at most 1,000, at least 1; chosen with a fixed seed, so every run holds
out the same pairs); train then leaves out those pairs and every pair
identical to one of them, so dev never overlaps train. Test is `--test_files`,
or empty when none is given. Datagen writes dev and test as plain text too
(`text_files`: `{problem}-dev.de`, `{problem}-dev.en`), to decode and score.

The raw text policy of the built-in problems applies (`t2t_lite.data.problem`):
lines byte for byte but for the line end and a leading byte-order mark (said
in one line per file), one-line errors. A blank TSV line (empty or whitespace
only) is a blank pair, as a blank line in both aligned files is: dropped from
train, kept in dev and test. Every file is checked before anything is written
(`check_corpus`): missing or unreadable files, aligned files of different
lengths, other TSV lines without exactly one TAB, empty corpora and non-UTF-8
lines are each a one-line `T2TError` naming the file (and line).
"""

import dataclasses
import os
import random
import re
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple

from t2t_lite.data.problem import Corpus, Pair, Problem, read_parallel_text
from t2t_lite.data.problem_definition import HeldOut, ProblemDefinition, SplitFiles, TrainCorpus
from t2t_lite.errors import T2TError
from t2t_lite.textio import Note, iter_lines

HELD_OUT_SEED = 1234
HELD_OUT_FRACTION = 20      # 1/20 = 5% of the train pairs ...
HELD_OUT_MAX = 1000         # ... at most this many
DEFAULT_VOCAB_SIZE = 8000
# Problem names become file names in the data and model directories.
PROBLEM_NAME = re.compile(r"[a-z0-9_]+")


@dataclasses.dataclass(frozen=True)
class CorpusFiles:
    """One corpus: a TSV file, or two aligned files (source, target); absolute paths."""

    name: str
    files: Tuple[str, ...]

    @property
    def is_tsv(self) -> bool:
        return len(self.files) == 1

    def pairs(self, note: Note = None) -> Iterator[Pair]:
        """Its (source, target) pairs in file order (see `check_corpus` for errors);
        `note` receives a line per file whose byte-order mark was removed."""
        if not self.is_tsv:
            return read_parallel_text(*self.files, note=note)
        return _tsv_pairs(self.files[0], note)


def _tsv_pairs(path: str, note: Note = None) -> Iterator[Pair]:
    """The pairs of a TSV file; a blank line (empty or whitespace only) is a blank
    pair, as a blank line of both aligned files is."""
    for number, line in enumerate(iter_lines(path, strip="newline", note=note), start=1):
        tabs = line.count("\t")
        if tabs == 0 and not line.strip():
            yield line, ""
            continue
        if tabs != 1:
            hint = ("; a side holding a TAB cannot be told from the separator (`paste` "
                    "writes such lines): give the two sides as aligned files, SOURCE,TARGET"
                    if tabs > 1 else "")
            raise T2TError(f"{path}, line {number}: expected one TAB between source and target, "
                           f"found {tabs}{hint}.")
        source, target = line.split("\t")
        yield source, target


def _default_name(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".tsv", ".txt"):
        name = name[:-len(suffix)] if name.endswith(suffix) else name
    stem, dot, last = name.rpartition(".")
    return stem if dot and stem and len(last) <= 3 else name  # "x.de-en.de" -> "x.de-en"


def parse_corpus_spec(spec: str, flag: str) -> CorpusFiles:
    """`[NAME=]FILE.tsv[.gz]` or `[NAME=]SOURCE,TARGET` -> a `CorpusFiles` of absolute paths.

    Raises:
      T2TError: an empty spec or name, more than two files.
    """
    name, equals, files = spec.partition("=")
    if not equals or os.sep in name:  # "a/b=c" is a path containing "=", not a name
        name, files = "", spec
    paths = [p for p in files.split(",")]
    if not files or any(not p for p in paths) or len(paths) > 2:
        raise T2TError(f"{flag}={spec!r}: expected [NAME=]FILE.tsv (source TAB target) or "
                       "[NAME=]SOURCE_FILE,TARGET_FILE (plain or .gz).")
    if equals and not name:
        raise T2TError(f"{flag}={spec!r}: the corpus name before '=' is empty.")
    paths = [os.path.abspath(os.path.expanduser(p)) for p in paths]
    return CorpusFiles(name or _default_name(paths[0]), tuple(paths))


def check_corpus(corpus: CorpusFiles, role: str, note: Note = None) -> int:
    """Reads `corpus` once and returns its number of pairs; `note` receives a
    line per file whose byte-order mark was removed.

    Raises:
      T2TError: a missing or unreadable file, aligned files of different line
        counts, a TSV line without exactly one TAB, a line that is not UTF-8
        (file and line), or no pairs at all.
    """
    for path in corpus.files:
        if not os.path.isfile(path):
            why = "is a directory" if os.path.isdir(path) else "the file does not exist"
            raise T2TError(f"Cannot read {path} ({role} corpus {corpus.name!r}): {why}.")
        if not os.access(path, os.R_OK):
            raise T2TError(f"Cannot read {path} ({role} corpus {corpus.name!r}): permission "
                           "denied.")
    count = sum(1 for _ in corpus.pairs(note))
    if not count:
        raise T2TError(f"The {role} corpus {corpus.name!r} ({', '.join(corpus.files)}) is empty.")
    return count


def held_out_size(total_pairs: int) -> int:
    """How many train pairs are held out as dev when no dev files are given."""
    return max(1, min(HELD_OUT_MAX, total_pairs // HELD_OUT_FRACTION))


def held_out_indices(total_pairs: int, size: int, seed: int) -> FrozenSet[int]:
    """The indices (over the train corpora in order) of the held-out pairs."""
    return frozenset(random.Random(seed).sample(range(total_pairs), size))


class FilesProblem(Problem):
    """A problem whose splits come from files named in its definition (see module doc)."""

    def __init__(self, definition: ProblemDefinition):
        self.definition = definition
        self.name = definition.name
        self.source_language = definition.source_language
        self.target_language = definition.target_language
        self.vocab_size = definition.vocab_size
        self._train = [CorpusFiles(c.name, c.files) for c in definition.train]
        self._held_out_pairs: Optional[FrozenSet[Pair]] = None

    @property
    def _held_out(self) -> Optional[HeldOut]:
        return self.definition.held_out

    def _train_counts(self) -> List[int]:
        return [c.pairs for c in self.definition.train]

    def _indexed_train(self) -> Iterator[Tuple[int, Pair]]:
        index = 0
        for corpus in self._train:
            for pair in corpus.pairs():
                yield index, pair
                index += 1

    def held_out_pairs(self) -> FrozenSet[Pair]:
        """The distinct held-out dev pairs (empty when dev files were given)."""
        if self._held_out_pairs is None:
            chosen = self._held_out_indices()
            self._held_out_pairs = frozenset(p for i, p in self._indexed_train() if i in chosen)
        return self._held_out_pairs

    def _held_out_indices(self) -> FrozenSet[int]:
        if not self._held_out:
            return frozenset()
        return held_out_indices(sum(self._train_counts()), self._held_out.pairs,
                                self._held_out.seed)

    def train_corpora(self, tmp_dir: Optional[str]) -> List[Corpus]:
        """One corpus per --train_files, by its name; held-out pairs left out."""
        starts = [sum(self._train_counts()[:i]) for i in range(len(self._train))]
        return [(c.name, _bind(self._train_pairs, c, start))
                for c, start in zip(self._train, starts)]

    def _train_pairs(self, corpus: CorpusFiles, start: int) -> Iterator[Pair]:
        chosen = self._held_out_indices()
        held = self.held_out_pairs() if chosen else frozenset()
        for offset, pair in enumerate(corpus.pairs()):
            if start + offset not in chosen and pair not in held:
                yield pair

    def text_files(self, split: str, tmp_dir: Optional[str]) -> Dict[str, Iterable[str]]:
        """Dev and test as plain text beside the shards, to decode and score
        (`{problem}-dev.de` / `.en`: suffixes are the languages, or "source" and
        "target" when both are the same): a held-out dev set exists nowhere else."""
        if split == "train":
            return {}
        source, target = self.source_language, self.target_language
        if source == target:
            source, target = "source", "target"
        return {source: (s for s, _ in self.raw_pairs(split, tmp_dir)),
                target: (t for _, t in self.raw_pairs(split, tmp_dir))}

    def raw_files(self, split: str, tmp_dir: Optional[str]) -> List[str]:
        """The files a split reads: a held-out dev set reads the train files."""
        if split == "train" or (split == "dev" and self._held_out):
            return [p for c in self._train for p in c.files]
        return list(self.definition.split_files(split))

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        if split == "train":
            for _, read in self.train_corpora(tmp_dir):
                yield from read()
        elif split == "dev" and self._held_out:
            chosen = self._held_out_indices()
            yield from (p for i, p in self._indexed_train() if i in chosen)
        else:
            files = self.definition.split_files(split)
            if files:
                yield from CorpusFiles(split, files).pairs()


def _bind(method: Callable, corpus: CorpusFiles, start: int) -> Callable[[], Iterator[Pair]]:
    return lambda: method(corpus, start)


def _once(log: Callable[[str], None]) -> Callable[[str], None]:
    """`log`, passing each distinct line only the first time."""
    seen = set()

    def once(line: str) -> None:
        if line not in seen:
            seen.add(line)
            log(line)
    return once


def default_problem_name(source_language: str, target_language: str) -> str:
    """`translate_{source}{target}_files`, lower-cased, a '-' of a code as '_'
    (`pt-BR`, `en` -> `translate_pt_bren_files`)."""
    return f"translate_{source_language}{target_language}_files".lower().replace("-", "_")


def make_definition(name: str, source_language: str, target_language: str,
                    train: Sequence[CorpusFiles], dev: Optional[CorpusFiles],
                    test: Optional[CorpusFiles], vocab_size: int,
                    log: Callable[[str], None] = print) -> ProblemDefinition:
    """Checks every file (`check_corpus`) and returns the problem's definition.

    Raises:
      T2TError: a problem name outside [a-z0-9_]+, a bad language code or
        vocabulary size, no or duplicate train
        corpus names, too few pairs to hold out a dev set, or a bad file.
    """
    for flag, code in (("--source_lang", source_language), ("--target_lang", target_language)):
        if not code or not code.replace("-", "").isalnum():
            raise T2TError(f"{flag}={code!r}: expected a language code such as en, de or ja.")
    if not PROBLEM_NAME.fullmatch(name):
        raise T2TError(f"Problem name {name!r}: only lower-case letters, digits and '_' (it "
                       "names files in the data directory); give another --problem=NAME.")
    if source_language == target_language:  # paraphrase, post-editing: real uses
        log(f"Source and target are both {source_language!r}: dev and test are written as "
            f"text to {name}-dev.source / {name}-dev.target (and -test.*), not .{source_language}.")
    if vocab_size < 300:  # SentencePiece needs room for the 256 byte pieces and specials
        raise T2TError(f"--vocab_size={vocab_size}: at least 300 (the 256 byte pieces, the "
                       "special ids and some words).")
    if not train:
        raise T2TError("No train corpus: give --train_files=FILE.tsv or SOURCE,TARGET.")
    names = [c.name for c in train]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise T2TError(f"Two train corpora are named {repeated[0]!r}: name them with "
                       "--train_files=NAME=FILES.")
    note = _once(log)  # a file given twice (train and dev) is noted once
    counted = tuple(TrainCorpus(c.name, c.files, check_corpus(c, "train", note)) for c in train)
    total = sum(c.pairs for c in counted)
    given: Dict[str, Optional[SplitFiles]] = {}
    train_files = {p for c in train for p in c.files}
    for split, corpus in (("dev", dev), ("test", test)):
        if corpus is None:
            given[split] = None
            continue
        given[split] = SplitFiles(corpus.files, check_corpus(corpus, split, note))
        shared = sorted(train_files & set(corpus.files))
        if shared:
            log(f"Warning: {shared[0]} is both a train and a {split} file: {split} scores will "
                "be measured on training data.")
    held_out = None
    if dev is None:
        if total < 2:
            raise T2TError(f"The train corpora hold {total} pair(s): too few to hold out a dev "
                           "set; give --dev_files.")
        held_out = HeldOut(held_out_size(total), HELD_OUT_SEED)
        log(f"No --dev_files: holding out {held_out.pairs:,} of the {total:,} train pairs as "
            f"dev (seed {HELD_OUT_SEED}; they and their duplicates are left out of train).")
    return ProblemDefinition(name, source_language, target_language, vocab_size, counted,
                             held_out or given["dev"], given["test"])
