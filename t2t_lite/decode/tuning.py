"""Choosing decode options on a dev set: every combination of a grid, decoded and scored.

    combinations = parse_grid("beam_size=4,5;alpha=0.0,0.6", fixed="batch_size=64")
    results = tune(model, problem, vocab, dev_sources, "val.de", "batch_size=64",
                   combinations)
    best = ranked(results)[0]  # the highest score; a tie goes to the first in grid order

The grid names decode hparams (`t2t_lite.decode.decoding.parse_decode_hparams`)
and their values; the combinations are their product, in grid order (the last
key varies fastest). Each is decoded with `--decode_hparams` semantics (the
problem's defaults, then the fixed options, then the combination) and scored
with the problem's main metric as its decoder report computes it
(`Problem.report_score`: sacreBLEU for translation, EVALB F1 for parsing).

The model is loaded once by the caller. Combinations that differ only in
alpha share one traced search: alpha is a variable the graph reads
(`Search(runtime_alpha=True)`), so the search is traced once per distinct
setting of the other search parameters (beam size, ...).
"""

import dataclasses
import itertools
import time
from typing import Callable, List, Optional, Sequence, Tuple

from t2t_lite.decode import decoding
from t2t_lite.decode.search import Search, SearchParams, search_for_problem
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError

# One combination: (decode hparam, value as written in the grid) pairs, in grid order.
Combination = Tuple[Tuple[str, str], ...]

# Options that change what is written beside the translation: its score would be wrong.
_NOT_TUNABLE = ("return_beams", "write_beam_scores", "alignments")


@dataclasses.dataclass(frozen=True)
class Result:
    """One decoded combination and its score."""

    options: Combination   # the grid's values for this combination
    metric: str            # the problem's metric name ("BLEU", "F1")
    score: float           # higher is better
    seconds: float         # decoding and scoring (tracing a new search included)

    @property
    def decode_hparams(self) -> str:
        """The combination as --decode_hparams ("beam_size=4,alpha=0.6")."""
        return _hparams(self.options)


def join_hparams(*parts: str) -> str:
    """Comma-joined --decode_hparams parts, empty ones left out."""
    return ",".join(part.strip(", ") for part in parts if part.strip(", "))


def _keys(hparams: str) -> List[str]:
    """The keys of a "a=1,b=2" string, in order."""
    return [item.partition("=")[0].strip() for item in hparams.split(",") if item.strip()]


def parse_grid(grid: str, fixed: str = "") -> List[Combination]:
    """The combinations of a grid "key=v1,v2;key2=v3,...", in grid order.

    Args:
      grid: decode hparams and their candidate values, ';' between keys.
      fixed: the --decode_hparams every combination shares.

    Raises:
      T2TError: an empty grid, a malformed item, a key without values, an
        empty value, a key given twice or also in `fixed`, an unknown key or a
        bad value (as `parse_decode_hparams` tells them), or an option that
        writes more than the translation (return_beams, write_beam_scores,
        alignments).
    """
    axes = []
    for item in (item for item in (grid or "").split(";") if item.strip()):
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise T2TError(f"Malformed grid item {item.strip()!r}: expected key=value1,value2,...")
        candidates = [value.strip() for value in values.split(",")]
        if not any(candidates):
            raise T2TError(f"Grid key {key!r} has no values: expected {key}=value1,value2,...")
        if not all(candidates):
            raise T2TError(f"Grid key {key!r} has an empty value in {item.strip()!r}.")
        if key in (k for k, _ in axes):
            raise T2TError(f"Grid key {key!r} is given twice; list all its values once.")
        if key in _keys(fixed):
            raise T2TError(f"{key!r} is both in --grid and in --decode_hparams; give it in one "
                           "of them.")
        for value in candidates:  # an unknown key or a bad value, named alone
            decoding.parse_decode_hparams(SearchParams(), f"{key}={value}")
        axes.append((key, candidates))
    if not axes:
        raise T2TError("The grid is empty: give --grid=\"key=value1,value2;key2=...\" "
                       "(e.g. \"beam_size=4,5;alpha=0.0,0.6,1.0\").")
    combinations = [tuple(zip([key for key, _ in axes], values))
                    for values in itertools.product(*(values for _, values in axes))]
    for combination in combinations:
        _, options = decoding.parse_decode_hparams(SearchParams(),
                                                   join_hparams(fixed, _hparams(combination)))
        written = [name for name in _NOT_TUNABLE if getattr(options, name)]
        if written:
            raise T2TError(f"{', '.join(written)} write more than the translation, which "
                           "would be scored; leave them out to tune.")
    return combinations


def _hparams(combination: Combination) -> str:
    """A combination as --decode_hparams ("beam_size=4,alpha=0.6")."""
    return join_hparams(*(f"{key}={value}" for key, value in combination))


def tune(models, problem, vocab, lines: Sequence[str], reference_path: str, fixed: str,
         combinations: Sequence[Combination], jit_compile: bool = False,
         on_result: Optional[Callable[[Result], None]] = None) -> List[Result]:
    """Decodes `lines` under each combination and scores the outputs.

    Args:
      models: the loaded model (or an ensemble's models).
      problem: the model's problem (decoding defaults, postprocess, metric).
      vocab: the model's vocabulary.
      lines: dev source lines.
      reference_path: the dev references (one line per source line).
      fixed: --decode_hparams shared by every combination.
      combinations: from `parse_grid`.
      jit_compile: compile each search with XLA.
      on_result: called with each result as soon as it is scored.

    Returns:
      One `Result` per combination, in the order given.
    """
    searches = {}  # the search parameters but alpha -> their traced Search
    results = []
    for combination in combinations:
        start = time.time()
        params, options = decoding.parse_decode_hparams(
            SearchParams.for_problem(problem), join_hparams(fixed, _hparams(combination)))
        search = _search(searches, models, problem, vocab, params, jit_compile)
        outputs = decoding.decode_lines(Translator(search, vocab, pad_rows=options.batch_size),
                                        lines, options, postprocess=problem.postprocess)
        metric, score = problem.report_score(outputs, reference_path)
        result = Result(combination, metric, float(score), time.time() - start)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _search(searches: dict, models, problem, vocab, params: SearchParams,
            jit_compile: bool) -> Search:
    """The search of `params` from `searches`, built there once per setting but alpha."""
    key = dataclasses.replace(params, alpha=0.0)
    if key not in searches:
        searches[key] = search_for_problem(models, problem, vocab, params,
                                           jit_compile=jit_compile, runtime_alpha=True)
    searches[key].set_alpha(params.alpha)
    return searches[key]


def ranked(results: Sequence[Result]) -> List[Result]:
    """`results` best first; equal scores keep their grid order (the first wins)."""
    return sorted(results, key=lambda result: -result.score)
