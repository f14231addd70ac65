"""Subword regularization: training pairs written several times, each segmented by sampling.

Kudo (2018), "Subword Regularization: Improving Neural Network Translation Models
with Multiple Subword Candidates", trains on a different segmentation of each
sentence every time it is seen, drawn from the unigram language model:
P(x | sentence) proportional to P(x)^alpha over the l best segmentations x. It
helps most on small corpora. t2t-datagen does it ahead of training (as fairseq
users do with `spm_encode --output_format=sample_id`): with `copies=K` the train
split holds K copies of every pair, copy k of each side segmented by its own
draw, shuffled together; dev and test keep the single best segmentation.

Why by hand rather than SentencePiece's own sampling (`enable_sampling=True`,
also what tensorflow-text's tokenizer does with `nbest_size`): that draws from
a generator per thread that cannot be seeded per sentence, so the shards would
differ between runs, thread counts and resumed datagen runs. Here SentencePiece
gives the l best segmentations with their log probabilities (`nbest_encode`),
and the draw among them is keyed on (copy, side, text) alone: the same data,
vocabulary and settings give the same bytes, however the split is chunked,
threaded or resumed. l is Kudo's "l" (64 is one of the paper's settings);
alpha=0.1 with l=64 is another.
"""

import dataclasses
import functools
import hashlib
import math
import random
from typing import Dict, List, Optional, Sequence, Tuple

import sentencepiece as spm

from t2t_lite.data.layout import EOS_ID
from t2t_lite.data.problem import Pair
from t2t_lite.errors import T2TError


@dataclasses.dataclass(frozen=True)
class SubwordSampling:
    """K sampled copies of the train split; `copies=0` means no sampling."""
    copies: int = 0
    nbest: int = 64       # Kudo's l: segmentations sampled from
    alpha: float = 0.1    # P(x)^alpha: smaller is more uniform

    def __post_init__(self):
        if self.copies < 0 or self.copies > 1000:
            raise T2TError(f"--subword_samples must be between 0 and 1000, not {self.copies}.")
        if self.copies and (self.nbest < 2 or self.nbest > 1000):
            raise T2TError(f"--subword_nbest must be between 2 and 1000, not {self.nbest}.")
        if self.copies and not (self.alpha > 0 and math.isfinite(self.alpha)):
            raise T2TError(f"--subword_alpha must be a positive number, not {self.alpha}.")

    @property
    def enabled(self) -> bool:
        return self.copies > 0

    def as_dict(self) -> Dict:
        """What the data's metadata records (and a resumed datagen run must match)."""
        return {"copies": self.copies, "nbest": self.nbest, "alpha": self.alpha}

    @classmethod
    def from_record(cls, recorded: Optional[Dict], where: str) -> "SubwordSampling":
        """The setting `as_dict` recorded in the metadata file `where` (None: none).

        Raises:
          T2TError: the record is not such a setting (a hand-edited or damaged file).
        """
        if recorded is None:
            return cls()
        names = {f.name for f in dataclasses.fields(cls)}
        def is_number(value, types) -> bool:  # JSON's true/false are not numbers here
            return isinstance(value, types) and not isinstance(value, bool)

        if (isinstance(recorded, dict) and set(recorded) == names
                and is_number(recorded["copies"], int) and is_number(recorded["nbest"], int)
                and is_number(recorded["alpha"], (int, float))):
            try:
                return cls(**recorded)  # its own range checks, which name the flags
            except T2TError:
                pass  # out of range: said below as a damaged record, not as a flag's value
        raise T2TError(f"{where} records subword_sampling {recorded!r}, not a setting; "
                       "run t2t-datagen with --subword_samples=K (0: none) to write the "
                       "train split again.")


def from_flags(copies: Optional[int], nbest: Optional[int],
               alpha: Optional[float]) -> Optional[SubwordSampling]:
    """t2t-datagen's flags -> the setting; None (no --subword_samples): as recorded.

    Raises:
      T2TError: --subword_nbest or --subword_alpha without --subword_samples, or a bad value.
    """
    if copies is None:
        if nbest is not None or alpha is not None:
            raise T2TError("--subword_nbest and --subword_alpha need --subword_samples.")
        return None
    defaults = SubwordSampling()
    return SubwordSampling(copies, defaults.nbest if nbest is None else nbest,
                           defaults.alpha if alpha is None else alpha)


def _uniform(copy: int, side: str, text: str) -> float:
    """A number in [0, 1) fixed by (copy, side, text): the draw's only source of randomness."""
    digest = hashlib.sha256(f"{copy}\0{side}\0{text}".encode("utf-8", "surrogatepass")).digest()
    return random.Random(digest).random()


def sample_ids(processor: spm.SentencePieceProcessor, text: str, copy: int, side: str,
               sampling: SubwordSampling) -> List[int]:
    """One segmentation of `text` drawn from its `nbest` best with P ~ exp(alpha * log P),
    as ids followed by EOS; the same arguments always give the same ids."""
    nbest = processor.nbest_encode_as_proto(text, nbest_size=sampling.nbest).nbests
    if not nbest:  # empty text
        return [EOS_ID]
    scores = [sampling.alpha * candidate.score for candidate in nbest]
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    threshold, total = _uniform(copy, side, text) * sum(weights), 0.0
    chosen = nbest[-1]
    for candidate, weight in zip(nbest, weights):
        total += weight
        if threshold < total:
            chosen = candidate
            break
    return [piece.id for piece in chosen.pieces] + [EOS_ID]


@functools.lru_cache(maxsize=4)
def _processor(model_proto: bytes) -> spm.SentencePieceProcessor:
    """One SentencePiece processor per vocabulary, not one per batch."""
    return spm.SentencePieceProcessor(model_proto=model_proto)


def sampled_ids(vocab, pairs: Sequence[Pair],
                sampling: SubwordSampling) -> Tuple[List[List[int]], List[List[int]]]:
    """(source ids, target ids) of `sampling.copies` copies of each pair, pair-major
    (pair 0's copies, then pair 1's...), EOS appended (`encoding` serializes them)."""
    processor = _processor(vocab.model_proto)
    sources, targets = [], []
    for source, target in pairs:
        for copy in range(sampling.copies):
            sources.append(sample_ids(processor, source, copy, "source", sampling))
            targets.append(sample_ids(processor, target, copy, "target", sampling))
    return sources, targets
