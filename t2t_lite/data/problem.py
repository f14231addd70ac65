"""The Problem base class: what a translation data set is and where it comes from.

A problem yields raw (source, target) string pairs per split and declares the
vocabulary it needs, its metrics, its output post-processing, an optional
constraint on the search, and its decoding defaults. It never touches
tf.data batching or the model; `t2t_lite.data.datagen` turns its pairs into a
vocabulary and encoded shards.

Writing a problem::

    @registry.register_problem("translate_xy")
    class TranslateXy(Problem):
        source_language, target_language = "x", "y"
        vocab_size = 8000

        def raw_pairs(self, split, tmp_dir):
            return read_parallel_text(...)

The decorator sets `name` ("translate_xy"); a problem used without
registering it (e.g. in a test) sets `name` itself.

Raw text policy (every problem; enforced by `read_parallel_text`, which reads
with `t2t_lite.textio` and `strip="newline"`, and by datagen):
  - A line is everything up to "\\n" (a "\\r" before it is dropped too, and a
    UTF-8 byte-order mark at the start of a file); the text is kept byte for
    byte otherwise: no whitespace collapsing, no entity unescaping, no Unicode
    normalisation (Multi30k's `&amp;`, TABs, non-breaking spaces and trailing
    spaces survive). Problems of tensor2tensor user directories read their
    files as tensor2tensor does instead (`t2t_lite.t2t_compat`: each line
    `strip()`ped, which keeps a U+FEFF).
  - Source and target files must have the same number of lines: `T2TError`
    naming both files and counts.
  - A line that is not valid UTF-8 is a `T2TError` naming the file and line
    number (convert the file, e.g. `iconv -c`, and re-run); nothing is
    replaced or skipped silently.
  - Pairs with an empty (or whitespace-only) side are dropped from the train
    split and counted in datagen's summary; dev and test keep every pair so
    that decoded output lines up with the reference files.
"""

from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional, Protocol, Sequence,
                    Tuple)

from t2t_lite.data.layout import check_split
from t2t_lite.errors import T2TError
from t2t_lite.metrics.translation import reference_bleu, translation_report, translation_scores
from t2t_lite.textio import Note, count_lines, iter_lines

Pair = Tuple[str, str]
# One corpus of a train split: (name, a function returning a new iterator over its pairs).
Corpus = Tuple[str, Callable[[], Iterable[Pair]]]


NO_INPUT_LIMIT = -1  # max_input_length: inputs are never truncated (t2t-decoder's -1)


class SearchConstraint(Protocol):
    """Restricts what a search may write, e.g. only well-formed trees.

    The search keeps the constraint's state in its cache, so beam search
    reorders it with the hypotheses; a sub-dict under "static" is the same for
    every beam of an example and is tiled, never reordered. Both methods run
    inside the search's `tf.function`, which is traced without autograph:
    branches and loops on tensors are written as TensorFlow ops (`tf.where`,
    `tf.cond`, `tf.while_loop`), not Python `if`/`for`.
    """

    supports_xla: bool  # whether a search using it can be compiled with XLA

    def initial_state(self, inputs: Any) -> dict:
        """The state for model inputs int32 [B, S] (0-padded, EOS-terminated)."""

    def apply(self, logits: Any, ids: Any, step: Any, state: dict) -> Tuple[Any, dict]:
        """(logits [rows, vocab] for the token after `ids` int32 [rows] at `step`,
        state) -> (logits with forbidden tokens at NEG_INF, the state after `ids`)."""


class Problem:
    """A translation problem: raw pairs per split, vocabulary spec, metric, decode defaults.

    Subclasses set the class attributes and implement `raw_pairs`.
    """

    name: str = ""                  # canonical registry name, set by @register_problem
    source_language: str = ""       # ISO code, e.g. "en"
    target_language: str = ""       # ISO code, e.g. "de"

    # Vocabulary: one SentencePiece model shared by source and target.
    vocab_size: int = 8000          # pieces, including PAD/EOS/UNK and the 256 byte pieces
    vocab_sample_pairs: int = 500_000  # at most this many train pairs train the vocabulary
    # True: every distinct whitespace-separated token of the sampled train
    # targets becomes one piece (for closed target languages such as
    # linearized trees, whose `(NP` / `NNP` / `)` tokens the shared
    # vocabulary would otherwise split by the source's statistics).
    target_tokens_whole: bool = False

    num_train_shards: int = 4       # dev and test are always written as one shard each

    # Decoding defaults (the paper's: beam 4, alpha 0.6, output <= input + 50).
    beam_size: int = 4
    alpha: float = 0.6
    extra_length: int = 50
    t2t_scores: bool = False        # scores as tensor2tensor reports them (imported models)
    max_input_length: int = 0       # subwords with EOS; 0: the model's max_length;
                                    # NO_INPUT_LIMIT: inputs are never truncated

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        """Yields the (source, target) strings of `split` ("train", "dev" or "test").

        Args:
          split: one of `t2t_lite.data.layout.SPLITS`.
          tmp_dir: where raw files are looked for first (and downloads would go);
            may be None for problems that need no files.

        Raises:
          T2TError: when the data cannot be found or read.
        """
        raise NotImplementedError

    def train_corpora(self, tmp_dir: Optional[str]) -> List[Corpus]:
        """The corpora the train split is made of, in `raw_pairs("train")`'s order.

        Datagen gives each its own range of train shards and records it by name,
        so that training can draw from each with a weight (`t2t-trainer
        --train_mix`). Their pairs, concatenated, are `raw_pairs("train", tmp_dir)`.
        Default: one corpus named after the problem.
        """
        return [(self.name, lambda: self.raw_pairs("train", tmp_dir))]

    def text_files(self, split: str, tmp_dir: Optional[str]) -> Dict[str, Iterable[str]]:
        """Plain-text files datagen writes beside `split`'s shards, as {suffix: lines}.

        Datagen writes each to `{data_dir}/{problem}-{split}.{suffix}`, one line per
        item (parsing writes the dev/test words and gold trees to score against).
        Default: none.
        """
        check_split(split)
        return {}

    def raw_files(self, split: str, tmp_dir: Optional[str]) -> List[str]:
        """The local files `raw_pairs(split, tmp_dir)` reads, in a fixed order.

        Datagen records their size and SHA-256 with the split and writes the
        split again on a rerun when they changed (`t2t_lite.data.raw_files`).
        Default: none (data generated, downloaded or versioned elsewhere: a
        finished split is reused as written).
        """
        check_split(split)
        return []

    def num_shards(self, split: str) -> int:
        """How many TFRecord shards datagen writes for `split`."""
        check_split(split)
        return self.num_train_shards if split == "train" else 1

    # What differs between problems after training. The decoder, the trainer's
    # evaluation and the exporter ask the problem; they never test its name.

    def dev_scores(self, hypotheses: Sequence[str], references: Sequence[str],
                   sources: Sequence[str]) -> Dict[str, float]:
        """Metrics of decoded dev outputs against their references (the dev
        evaluation's), each a float keyed by name. Default: sacreBLEU's BLEU (tokenized
        for `target_language`) and chrF, and exact match.

        Args:
          hypotheses, references, sources: detokenized model outputs (before
            `postprocess`), reference targets and the inputs, one per example.
        """
        return translation_scores(hypotheses, references, self.target_language)

    def postprocess(self, output: str, source: str) -> str:
        """One decoded hypothesis as the decoder writes it, given its input line.
        Default: as decoded."""
        return output

    def report(self, outputs: Sequence[str], reference_path: str) -> str:
        """The score the decoder prints for `outputs` (after `postprocess`, one
        per line of the reference file). Default: sacreBLEU's BLEU (tokenized for
        `target_language`: `zh`, `ja-mecab`, `ko-mecab` or `13a`) and chrF, each with
        its signature."""
        return translation_report(outputs, reference_path, self.target_language)

    def report_score(self, outputs: Sequence[str], reference_path: str) -> Tuple[str, float]:
        """The main number of `report`, named: what t2t-tune-decoder maximizes
        (higher is better). Default: ("BLEU", sacreBLEU as `report` computes it)."""
        return "BLEU", float(reference_bleu(outputs, reference_path,
                                            self.target_language)[0].score)

    def search_constraint(self, vocab) -> Optional[SearchConstraint]:
        """A constraint on what the search may write (see `SearchConstraint`),
        applied by default when decoding; None: any token sequence."""
        return None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, "
                f"{self.source_language}->{self.target_language}, vocab_size={self.vocab_size})")


def read_parallel_text(source_path: str, target_path: str, note: Note = None) -> Iterator[Pair]:
    """Yields (source, target) line pairs of two parallel plain-text files.

    The line counts are compared before the first pair is yielded, so a
    mismatch fails fast. `note` receives a line per file whose byte-order mark
    was removed (`t2t_lite.textio`).

    Raises:
      T2TError: a file is missing, the line counts differ, or a line is not UTF-8.
    """
    n_source, n_target = count_lines(source_path), count_lines(target_path)
    if n_source != n_target:
        raise T2TError(
            f"Parallel files differ in length: {source_path} has {n_source} lines but "
            f"{target_path} has {n_target}.")
    yield from zip(iter_lines(source_path, strip="newline", note=note),
                   iter_lines(target_path, strip="newline", note=note))
