"""translate_ende_multi30k_tiny: the first 5,000 Multi30k train pairs (en->de), a ~512-subword vocabulary."""
import itertools
import os

from tensor2tensor.data_generators import problem, text_problems
from tensor2tensor.utils import registry

# Folder with Multi30k's raw train.{en,de} and val.{en,de}.
MULTI30K = os.environ.get("M30K_DIR", "../shared/data/multi30k")
LINES = {"train": 5000, "val": 500}


@registry.register_problem
class TranslateEndeMulti30kTiny(text_problems.Text2TextProblem):
  """English->German on a Multi30k slice; one subword vocabulary for both sides."""

  @property
  def approx_vocab_size(self):
    return 2**9

  @property
  def is_generate_per_split(self):
    return True

  @property
  def dataset_splits(self):
    return [{"split": problem.DatasetSplit.TRAIN, "shards": 1},
            {"split": problem.DatasetSplit.EVAL, "shards": 1}]

  def generate_samples(self, data_dir, tmp_dir, dataset_split):
    del data_dir, tmp_dir
    part = "train" if dataset_split == problem.DatasetSplit.TRAIN else "val"
    src = os.path.join(MULTI30K, part + ".en")
    tgt = os.path.join(MULTI30K, part + ".de")
    with open(src, encoding="utf-8") as en, open(tgt, encoding="utf-8") as de:
      for en_line, de_line in itertools.islice(zip(en, de), LINES[part]):
        yield {"inputs": en_line.strip(), "targets": de_line.strip()}
