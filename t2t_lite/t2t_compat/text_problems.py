"""tensor2tensor.data_generators.text_problems: Text2TextProblem and the txt iterators.

A `Text2TextProblem` subclass is a t2t-lite `Problem`: `raw_pairs` are its
`generate_samples` per split as t2t's `generate_data` splits them
(`samples`), its vocabulary a SentencePiece model of `approx_vocab_size`
pieces learned by t2t-datagen (said once in one line: the ids differ from t2t's
SubwordTextEncoder's; a t2t vocabulary file is used as is with
`t2t-datagen --vocab_from=FILE.subwords`). A CHARACTER or TOKEN vocab_type
is t2t's ByteTextEncoder or TokenTextEncoder (the token file read from the
data directory, as t2t does) with t2t's ids (`data.t2t_text_encoders`). Its
members t2t-lite cannot honour are refused in one line (`checks`).
"""

import os
from types import SimpleNamespace
from typing import Iterator, List, Optional

import tensorflow as tf

from t2t_lite import registry
from t2t_lite.data.problem import Corpus, Pair
from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import checks, problem, samples


class VocabType:
    """t2t's vocabulary kinds: SUBWORD is learned as SentencePiece, CHARACTER and TOKEN
    are t2t's own encoders (`t2t_lite.data.t2t_text_encoders`)."""
    CHARACTER = "character"
    SUBWORD = "subwords"
    TOKEN = "tokens"


_said = set()  # problem classes whose vocabulary line was said in this process


class Text2TextProblem(problem.Problem):
    """t2t's base of text-to-text problems, run by t2t-lite (see the module doc).

    Subclasses define `generate_samples(data_dir, tmp_dir, dataset_split)`
    yielding {"inputs": str, "targets": str} and `is_generate_per_split`, and
    optionally `dataset_splits`, `approx_vocab_size`, `max_samples_for_vocab`,
    `inputs_prefix`/`targets_prefix` and `hparams` (space ids), as in t2t.
    """

    _target_space_id: Optional[int] = None  # from the user's `hparams`, once checked

    def __init__(self, was_reversed: bool = False, was_copy: bool = False):
        if was_reversed or was_copy:
            raise T2TError(f"{type(self).__name__}: t2t's reversed (_rev) and copy (_copy) "
                           "problems are not supported by t2t-lite's compatibility layer.")
        self._check()

    def _check(self) -> None:
        """The refusals of a problem instance (`checks`); run again where the data is
        read, for a subclass whose own `__init__` does not call this one."""
        if self._target_space_id is not None:
            return
        refusal = checks.vocab_refusal(self)
        if refusal:
            raise T2TError(refusal)
        # What a user's `hparams` override reads (t2t fills it from the vocabulary).
        encoder = SimpleNamespace(vocab_size=self.vocab_size)
        self._encoders = {"inputs": encoder, "targets": encoder}
        self._target_space_id = checks.problem_hparams(self)

    @property
    def target_space_id(self) -> int:
        """t2t's target space of this problem (its `hparams`), 0 (GENERIC) by default."""
        self._check()
        return self._target_space_id

    # --- t2t's subclass interface, with t2t's defaults ---

    @property
    def dataset_splits(self):
        return [{"split": problem.DatasetSplit.TRAIN, "shards": 100},
                {"split": problem.DatasetSplit.EVAL, "shards": 1}]

    @property
    def is_generate_per_split(self) -> bool:
        raise T2TError(f"{type(self).__name__} does not define is_generate_per_split (t2t "
                       "requires it: True when generate_samples reads each split's own data).")

    def generate_samples(self, data_dir, tmp_dir, dataset_split):
        raise T2TError(f"{type(self).__name__} does not define generate_samples.")

    @property
    def vocab_type(self) -> str:
        return VocabType.SUBWORD

    @property
    def approx_vocab_size(self) -> int:
        return 2**15

    @property
    def additional_reserved_tokens(self) -> List[str]:
        return []

    @property
    def oov_token(self):
        return None

    @property
    def max_samples_for_vocab(self) -> Optional[int]:
        return None

    @property
    def inputs_prefix(self) -> str:
        return ""

    @property
    def targets_prefix(self) -> str:
        return ""

    @property
    def packed_length(self):
        return None

    @property
    def vocab_filename(self) -> str:
        """t2t's vocabulary file name (`vocab.{problem}.{approx_vocab_size}.subwords`)."""
        if self.vocab_type == VocabType.SUBWORD:
            return f"vocab.{self.dataset_filename()}.{self.approx_vocab_size}.subwords"
        return f"vocab.{self.dataset_filename()}.tokens"

    def hparams(self, defaults, model_hparams):
        defaults.stop_at_eos = True
        defaults.modality = {"inputs": "symbol", "targets": "symbol"}
        defaults.vocab_size = {"inputs": self.vocab_size, "targets": self.vocab_size}

    # --- t2t-lite's Problem, from the above ---

    @property
    def vocab_size(self) -> int:
        """SentencePiece pieces: t2t's approx_vocab_size; 258 for CHARACTER (t2t's
        ByteTextEncoder). For TOKEN the token file decides, which datagen reads."""
        if self.vocab_type == VocabType.CHARACTER:
            return 256 + 2
        return int(self.approx_vocab_size)

    @property
    def vocab_sample_pairs(self) -> int:
        """At most this many train pairs train the vocabulary (t2t's max_samples_for_vocab;
        t2t takes the first ones, t2t-lite a seeded sample)."""
        return int(self.max_samples_for_vocab or 500_000)

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        self._check()
        if self.packed_length:
            raise T2TError(f"{type(self).__name__}.packed_length: packed examples are not "
                           "supported (t2t-lite batches examples by length instead).")
        return samples.split_pairs(self, split, tmp_dir)

    def train_corpora(self, tmp_dir: Optional[str]) -> List[Corpus]:
        self._check()
        if type(self) not in _said:
            _said.add(type(self))
            if self.vocab_type == VocabType.SUBWORD:
                registry.note(
                    f"{self.name}: a vocabulary t2t-datagen learns for it is a SentencePiece "
                    f"model of approx_vocab_size={self.vocab_size} pieces, whose ids differ "
                    "from t2t's SubwordTextEncoder's (to encode with t2t's own vocabulary "
                    f"file, give t2t-datagen --vocab_from=DIR/{self.vocab_filename}).")
            unused = checks.vocab_note(self)
            if unused:
                registry.note(unused)
            if self.target_space_id:
                registry.note(
                    f"{self.name}: its target_space_id is {self.target_space_id}: train with "
                    f"t2t-trainer --hparams=target_space_id={self.target_space_id} for t2t's "
                    "target-space embedding row.")
        return super().train_corpora(tmp_dir)


class Text2textTmpdir(Text2TextProblem):
    """t2t's problem of four files in tmp_dir, for subclassing (t2t registers it as
    `text2text_tmpdir`; here a subclass registers itself): inputs.train.txt,
    targets.train.txt, inputs.eval.txt, targets.eval.txt, one example a line."""

    TRAIN_FILES = ("inputs.train.txt", "targets.train.txt")
    EVAL_FILES = ("inputs.eval.txt", "targets.eval.txt")

    @property
    def is_generate_per_split(self) -> bool:
        return True

    def generate_samples(self, data_dir, tmp_dir, dataset_split):
        files = self.TRAIN_FILES if dataset_split == problem.DatasetSplit.TRAIN \
            else self.EVAL_FILES
        return text2text_txt_iterator(*(os.path.join(tmp_dir, f) for f in files))


class QuestionAndContext2TextProblem(Text2TextProblem):
    """t2t's question+context problems: refused (`checks`)."""


class Text2SelfProblem(Text2TextProblem):
    """t2t's language-model problems: refused (`checks`)."""


class Text2ClassProblem(Text2TextProblem):
    """t2t's classification problems: refused (`checks`)."""


class Text2RealProblem(Text2TextProblem):
    """t2t's regression problems: refused (`checks`)."""


NOT_TEXT_TO_TEXT = (QuestionAndContext2TextProblem, Text2SelfProblem, Text2ClassProblem,
                    Text2RealProblem)


def txt_line_iterator(txt_path: str) -> Iterator[str]:
    """The lines of a file, each `strip()`ped as t2t does."""
    with tf.io.gfile.GFile(txt_path) as f:
        for line in f:
            yield line.strip()


def text2text_txt_iterator(source_txt_path: str, target_txt_path: str):
    """{"inputs", "targets"} of two aligned files' lines (t2t stops at the shorter one)."""
    for inputs, targets in zip(txt_line_iterator(source_txt_path),
                               txt_line_iterator(target_txt_path)):
        yield {"inputs": inputs, "targets": targets}


def text2text_txt_tab_iterator(txt_path: str):
    """{"inputs", "targets"} of the lines of a TSV file holding a TAB (others skipped);
    the target is everything after the first TAB; both sides stripped."""
    for line in txt_line_iterator(txt_path):
        if line and "\t" in line:
            inputs, targets = line.split("\t", 1)
            yield {"inputs": inputs.strip(), "targets": targets.strip()}


def text2text_txt_sharded_iterator(source_txt_pattern: str, target_txt_pattern: str):
    """`text2text_txt_iterator` over the files matching each glob, in glob order."""
    def lines(pattern):
        for path in tf.io.gfile.glob(pattern):
            yield from txt_line_iterator(path)

    for inputs, targets in zip(lines(source_txt_pattern), lines(target_txt_pattern)):
        yield {"inputs": inputs, "targets": targets}


def __getattr__(name: str):
    raise AttributeError(
        f"tensor2tensor.data_generators.text_problems.{name} is not provided by t2t-lite's "
        "compatibility layer (it provides Text2TextProblem, Text2textTmpdir, VocabType, "
        "txt_line_iterator, text2text_txt_iterator, text2text_txt_tab_iterator, "
        "text2text_txt_sharded_iterator).")


