"""What a training run draws from: corpora and problems with weights (t2t-trainer --train_mix).

A mix is `NAME=WEIGHT[,NAME=WEIGHT...]`; NAME is

  - a corpus of the run's problem, as datagen recorded it (`t2t_lite.data.corpora`,
    e.g. `europarl-v7.de-en`);
  - the run's problem itself: all its corpora in their natural proportions;
  - another problem whose t2t-datagen output is in the same data directory,
    encoded with the same vocabulary (`t2t-datagen --problem=OTHER --data_dir=D
    --vocab_from=...`; the recorded `vocab_sha256` must be equal): all its
    corpora in their natural proportions.

Weights are normalised to shares of the examples drawn; a name given twice (a
corpus and its problem) adds up; corpora not named are not drawn. Without a
mix, every corpus of the problem is drawn by its share of the examples (today's
proportions, sampled at every step). Dev and test stay the run's problem's.

`train_sources` resolves a mix into `TrainSource`s, one per corpus drawn, in a
fixed order (the problem's corpora as recorded, then those of other problems by
problem and corpus name, whatever the order of the spec), so
that the same mix always builds the same sampled stream (exact resume);
`t2t_lite.data.pipeline.make_dataset(sources=...)` draws from them.
"""

import dataclasses
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from t2t_lite import registry
from t2t_lite.data.datagen import read_metadata
from t2t_lite.data.integrity import check_shards
from t2t_lite.data.layout import LAYOUT_VERSION, metadata_path, problems_with_data
from t2t_lite.errors import T2TError

_FORM = "expected NAME=WEIGHT[,NAME=WEIGHT...], e.g. europarl-v7.de-en=0.8,news-commentary-v9.de-en=0.2"


@dataclasses.dataclass(frozen=True)
class TrainSource:
    """One corpus drawn from in training."""

    problem: str             # the problem whose train shards these are
    corpus: str              # its name, as datagen recorded it
    files: Tuple[str, ...]   # the corpus's shard paths, in index order
    examples: int            # examples in them
    weight: float = 0.0      # share of the examples drawn (the sources' weights sum to 1)


def parse_mix(spec: str) -> List[Tuple[str, float]]:
    """[(name, weight)] of a mix spec, in the order given.

    Raises:
      T2TError: a malformed entry, a weight that is not a finite number >= 0, a
        name given twice, all weights zero.
    """
    entries: Dict[str, float] = {}
    for item in spec.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name or not value:
            raise T2TError(f"--train_mix={spec}: {item.strip()!r} is not NAME=WEIGHT ({_FORM}).")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not math.isfinite(weight):
            raise T2TError(f"--train_mix={spec}: the weight of {name} is not a number: {value!r}.")
        if weight < 0:
            raise T2TError(f"--train_mix={spec}: the weight of {name} is negative ({value}); "
                           "weights are shares, 0 or more.")
        if name in entries:
            raise T2TError(f"--train_mix={spec}: {name} is given twice.")
        entries[name] = weight
    if not any(entries.values()):
        raise T2TError(f"--train_mix={spec}: all weights are zero; give at least one a "
                       "positive weight.")
    return list(entries.items())


def same_mix(a: Optional[str], b: Optional[str]) -> bool:
    """Whether two specs (None: no mix) give the same shares by the same names."""
    if a is None or b is None:
        return a is b
    shares = []
    for spec in (a, b):
        entries = parse_mix(spec)
        total = sum(w for _, w in entries)
        shares.append({name: w / total for name, w in entries if w})
    return shares[0].keys() == shares[1].keys() and all(
        math.isclose(shares[0][k], shares[1][k], rel_tol=1e-9) for k in shares[0])


def _recorded_corpora(data_dir: str, problem: str, meta: Dict) -> Optional[List[TrainSource]]:
    """The train corpora datagen recorded for `problem` (weights 0), or None for
    data that records none (layout 2)."""
    train = meta.get("splits", {}).get("train")
    if not train or "corpora" not in train:
        return None
    paths = [os.path.join(data_dir, name) for name in train["shards"]]
    return [TrainSource(problem, c["name"], tuple(paths[c["shard_range"][0]:c["shard_range"][1]]),
                        c["examples"]) for c in train["corpora"]]


def _natural(sources: List[TrainSource], share: float) -> List[TrainSource]:
    """`sources` with `share` split between them by their examples."""
    total = sum(s.examples for s in sources)
    return [dataclasses.replace(s, weight=share * s.examples / total) for s in sources]


def train_sources(data_dir: str, problem: str, spec: Optional[str]) -> Optional[List[TrainSource]]:
    """The corpora a run of `problem` draws from, with their weights (module docstring).

    Returns:
      None when there is nothing to mix: no spec, and one corpus or none
      recorded (the pipeline reads every train shard of `problem`, as before
      corpora were recorded). Otherwise the sources with a positive weight.

    Raises:
      T2TError: a malformed spec (`parse_mix`); an unknown name (the known ones
        listed); a mixed problem without data, with missing or damaged shards, or
        of another vocabulary; data of an older layout that records no corpora;
        a named corpus or problem without examples.
    """
    meta = read_metadata(data_dir, problem)
    own = _recorded_corpora(data_dir, problem, meta)
    if spec is None:
        if own is None or len(own) < 2 or not sum(s.examples for s in own):
            return None
        return [s for s in _natural(own, 1.0) if s.weight]
    entries = parse_mix(spec)
    if own is None:
        raise T2TError(f"The train shards of {problem} in {data_dir} do not record their "
                       f"corpora (written by an older t2t-datagen): re-run t2t-datagen "
                       f"--problem={problem} --data_dir={data_dir} to record them, or train "
                       "without --train_mix.")
    total = sum(w for _, w in entries)
    by_corpus = {s.corpus: s for s in own}
    drawn: Dict[Tuple[str, str], TrainSource] = {}
    for name, weight in entries:
        if name in by_corpus:
            found = [dataclasses.replace(by_corpus[name], weight=weight / total)]
        else:
            other = _problem_name(name)
            sources = own if other == problem else _other_problem(data_dir, other, problem, meta)
            if not sum(s.examples for s in sources):
                raise T2TError(f"--train_mix: {other} has no train examples in {data_dir}.")
            found = _natural(sources, weight / total)
        for source in found:
            key = (source.problem, source.corpus)
            if key in drawn:
                source = dataclasses.replace(source, weight=drawn[key].weight + source.weight)
            drawn[key] = source
    for source in drawn.values():
        if source.weight and not source.examples:
            raise T2TError(f"--train_mix: corpus {source.corpus} of {source.problem} has no "
                           f"train examples in {data_dir}.")
    order = [(problem, s.corpus) for s in own] + sorted(k for k in drawn if k[0] != problem)
    return [drawn[k] for k in order if k in drawn and drawn[k].weight]


def _problem_name(name: str) -> str:
    """`name`, or the canonical name of a registered problem's alias."""
    try:
        return registry.problem_name(name)
    except T2TError:
        return name


def _other_problem(data_dir: str, name: str, problem: str, meta: Dict) -> List[TrainSource]:
    """The recorded corpora of another problem to mix in, checked against `problem`'s data.

    Raises:
      T2TError: `name` names neither a corpus of `problem` nor a problem with data
        in `data_dir`; its data records no corpora, lacks shards, or was
        encoded with another vocabulary.
    """
    if not os.path.isfile(metadata_path(data_dir, name)):
        corpora = ", ".join(c["name"] for c in meta["splits"]["train"]["corpora"])
        others = ", ".join(problems_with_data(data_dir))
        known = name in registry.list_problems()
        raise T2TError(
            f"--train_mix: {'no t2t-datagen output for ' if known else 'unknown corpus or problem '}"
            f"{name!r} in {data_dir} (corpora of {problem}: {corpora}; problems with data "
            f"there: {others})" + (f"; run t2t-datagen --problem={name} --data_dir={data_dir} "
                                   f"--vocab_from={os.path.join(data_dir, meta['vocab_file'])}"
                                   if known else "") + ".")
    other_meta = read_metadata(data_dir, name)
    rerun = f"re-run t2t-datagen --problem={name} --data_dir={data_dir}"
    if other_meta.get("vocab_sha256") != meta.get("vocab_sha256"):
        raise T2TError(f"--train_mix: {name}'s data in {data_dir} was encoded with another "
                       f"vocabulary than {problem}'s ({other_meta.get('vocab_file')} is not "
                       f"{meta.get('vocab_file')}); {rerun} "
                       f"--vocab_from={os.path.join(data_dir, meta['vocab_file'])} "
                       "(in a new --data_dir, or after deleting its files).")
    if not other_meta.get("splits", {}).get("train"):
        raise T2TError(f"--train_mix: {name} has no train split in {data_dir}; {rerun}.")
    check_shards(data_dir, name, other_meta, ["train"])  # missing or resized shards
    sources = _recorded_corpora(data_dir, name, other_meta)
    if sources is None or other_meta.get("layout_version", 1) < LAYOUT_VERSION:
        raise T2TError(f"--train_mix: the train shards of {name} in {data_dir} do not record "
                       f"their corpora (an older t2t-datagen); {rerun}.")
    return sources


def describe(sources: Optional[Sequence[TrainSource]], problem: str, data_dir: str,
             spec: Optional[str]) -> Optional[str]:
    """The start-up line of a mixed run: each source's share and the corpora of
    `problem` not drawn; None when nothing is mixed."""
    if not sources:
        return None
    drawn = {(s.problem, s.corpus) for s in sources}
    own = _recorded_corpora(data_dir, problem, read_metadata(data_dir, problem)) or []
    left = [s.corpus for s in own if (problem, s.corpus) not in drawn]

    def label(s: TrainSource) -> str:
        return s.corpus if s.problem == problem or s.corpus == s.problem else \
            f"{s.problem}/{s.corpus}"

    how = f"--train_mix={spec}" if spec else "no --train_mix: each corpus by its share"
    return (f"Training draws from {', '.join(f'{label(s)} {100 * s.weight:.1f}%' for s in sources)} "
            f"of the examples ({how})" + (f"; not drawn: {', '.join(left)}" if left else "") + ".")
