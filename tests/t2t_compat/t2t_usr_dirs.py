"""User directories written as tensor2tensor 1.15 users write them, and their raw data.

Each pattern is one module of a t2t user directory (t2t's two-space indent,
t2t's imports), written for these tests: a Text2TextProblem reading a local
file with `is_generate_per_split=False` and 9/1 shards, a TranslateProblem
listing local files in tmp_dir, a TranslateProblem reading two columns of
4-column TSV files (empty first and last columns, spaces around columns, CRLF),
and an hparams set built from `transformer_base()` by assignment and `add_hparam`.
"""

import gzip
import pathlib
import textwrap
from typing import Dict, List, Tuple

WORDS = "eins zwei drei vier fuenf sechs sieben acht neun zehn".split()

TEXT2TEXT = textwrap.dedent('''\
    """Reverse a sentence, from one local file."""
    import os

    import tensorflow as tf

    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.utils import registry


    @registry.register_problem
    class ReverseSentences(text_problems.Text2TextProblem):
      """Each line of words.txt -> its words reversed."""

      @property
      def approx_vocab_size(self):
        return 2**9

      @property
      def is_generate_per_split(self):
        # generate_data shards the one corpus into TRAIN and EVAL.
        return False

      @property
      def dataset_splits(self):
        return [{
            "split": problem.DatasetSplit.TRAIN,
            "shards": 9,
        }, {
            "split": problem.DatasetSplit.EVAL,
            "shards": 1,
        }]

      def generate_samples(self, data_dir, tmp_dir, dataset_split):
        del data_dir
        del dataset_split
        path = os.path.join(tmp_dir, "words.txt")
        tf.logging.info("Reading %s", path)
        with tf.gfile.Open(path) as f:
          for line in f:
            line = line.strip()
            yield {"inputs": line, "targets": " ".join(reversed(line.split()))}
''')

TRANSLATE = textwrap.dedent('''\
    """A toy language pair from local files: plain and gzipped pairs, a TSV for dev."""
    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.data_generators import translate
    from tensor2tensor.utils import registry

    _TRAIN_DATASETS = [
        ["http://127.0.0.1:9/toy-train.tgz", ("toy.train.xx", "toy.train.yy")],
        ["http://127.0.0.1:9/toy-extra.tgz", ("toy.extra.xx.gz", "toy.extra.yy.gz")],
    ]
    _DEV_DATASETS = [
        ["http://127.0.0.1:9/toy-dev.tgz", ("toy.dev.xx", "toy.dev.yy")],
        ["http://127.0.0.1:9/toy-tsv.tgz", ("tsv", 0, 1, "toy.more.tsv")],
    ]


    @registry.register_problem
    class TranslateXxyyToy(translate.TranslateProblem):
      """xx -> yy: the words of a sentence in reverse order."""

      @property
      def approx_vocab_size(self):
        return 2**9

      def source_data_files(self, dataset_split):
        train = dataset_split == problem.DatasetSplit.TRAIN
        return _TRAIN_DATASETS if train else _DEV_DATASETS
''')

COLUMNS = textwrap.dedent('''\
    """A toy language pair from two columns of 4-column TSV files (id, xx, yy, note)."""
    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import translate
    from tensor2tensor.utils import registry


    @registry.register_problem
    class TranslateXxyyColumns(translate.TranslateProblem):
      """xx -> yy from columns 1 and 2 (train), yy -> note from columns 2 and 3 (dev)."""

      @property
      def approx_vocab_size(self):
        return 2**9

      def source_data_files(self, dataset_split):
        if dataset_split == problem.DatasetSplit.TRAIN:
          return [["http://127.0.0.1:9/toy-columns.tgz", ("tsv", 1, 2, "toy.columns.tsv")]]
        return [["http://127.0.0.1:9/toy-columns-dev.tgz",
                 ("tsv", 2, 3, "toy.columns-dev.tsv")]]

      def vocab_data_files(self):
        # t2t's generate_lines_for_vocab reads files, not ("tsv", ...) entries: whole lines.
        return [["http://127.0.0.1:9/toy-columns.tgz", ("toy.columns.tsv",)]]
''')

HPARAMS = textwrap.dedent('''\
    """A very small Transformer, as t2t users change transformer_base."""
    from tensor2tensor.models import transformer
    from tensor2tensor.utils import registry


    @registry.register_hparams
    def transformer_toy():
      hparams = transformer.transformer_base()
      hparams.num_hidden_layers = 1
      hparams.hidden_size = 32
      hparams.filter_size = 64
      hparams.num_heads = 2
      hparams.batch_size = 256
      hparams.layer_prepostprocess_dropout = 0.2
      hparams.learning_rate_warmup_steps = 100
      hparams.add_hparam("toy_note", "kept by t2t, unused here")
      return hparams
''')


def sentences(count: int, offset: int = 0) -> List[str]:
    return [" ".join(WORDS[(i * 7 + k) % 10] for k in range(1 + i % 4))
            for i in range(offset, offset + count)]


def reversed_pairs(lines: List[str]) -> List[Tuple[str, str]]:
    return [(line, " ".join(reversed(line.split()))) for line in lines]


def write_usr_dir(parent: pathlib.Path, name: str, modules: Dict[str, str]) -> pathlib.Path:
    """A package `parent/name` whose __init__.py imports `modules` (name -> source)."""
    path = parent / name
    path.mkdir()
    (path / "__init__.py").write_text(
        "".join(f"from . import {module}\n" for module in modules))
    for module, source in modules.items():
        (path / f"{module}.py").write_text(source)
    return path


def write_raw_data(tmp_dir: pathlib.Path) -> Dict[str, List[Tuple[str, str]]]:
    """The files the problems above read; returns the pairs each split should hold."""
    tmp_dir.mkdir(exist_ok=True)
    words = sentences(200)
    (tmp_dir / "words.txt").write_text("".join(line + "\n" for line in words))
    train, extra, more, dev = (reversed_pairs(sentences(n, o))
                               for n, o in ((120, 0), (30, 500), (20, 700), (10, 900)))
    for name, pairs in (("train", train), ("dev", dev)):
        (tmp_dir / f"toy.{name}.xx").write_text("".join(s + "\n" for s, _ in pairs))
        (tmp_dir / f"toy.{name}.yy").write_text("".join(t + "\n" for _, t in pairs))
    for side, column in (("xx", 0), ("yy", 1)):
        with gzip.open(tmp_dir / f"toy.extra.{side}.gz", "wt") as f:
            f.write("".join(p[column] + "\n" for p in extra))
    (tmp_dir / "toy.more.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in more)
                                          + "a line without a tab\n")
    write_column_files(tmp_dir)
    return {"reverse_dev": [p for i, p in enumerate(reversed_pairs(words)) if i % 10 == 9],
            "reverse_train": [p for i, p in enumerate(reversed_pairs(words)) if i % 10 != 9],
            "toy_train": train + extra, "toy_dev": dev + more}


def column_rows(count: int, offset: int) -> List[str]:
    """4-column TSV lines (id, xx, yy, note) of the kinds t2t reads column by column."""
    rows = []
    for i, (xx, yy) in enumerate(reversed_pairs(sentences(count, offset))):
        kind = i % 8
        note = WORDS[i % 10]
        rows.append({
            0: f"{i}\t{xx}\t{yy}\t{note}\n",
            1: f"\t{xx}\t{yy}\t{note}\n",                # empty first column
            2: f"{i}\t{xx}\t{yy}\t\n",                     # empty last column
            3: f" {i} \t  {xx} \t {yy}  \t {note} \n",      # spaces around every column
            4: f"{i}\t{xx}\t{yy}\t{note}\r\n",             # CRLF
            5: f"{i}\t \t{yy}\t{note}\n",                  # a blank column
            6: f"{i}\t{xx}\t\t\n",                         # two empty columns at the end
            7: f"{i} {xx} {yy} {note}\n",                  # no TAB: not a row
        }[kind])
    return rows + ["\n", "\t\t\t\n"]


def write_column_files(tmp_dir: pathlib.Path) -> None:
    """The TSV files of `COLUMNS`: `toy.columns.tsv` (train), `toy.columns-dev.tsv`."""
    for name, count, offset in (("toy.columns.tsv", 48, 300), ("toy.columns-dev.tsv", 16, 400)):
        with open(tmp_dir / name, "w", encoding="utf-8", newline="") as f:
            f.write("".join(column_rows(count, offset)))
