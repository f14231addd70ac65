"""WMT14 English-German and English-French (the paper's two tasks).

Splits: train = WMT14 training data, dev = newstest2013, test = newstest2014
(the "full" version, 3,003 sentences, as the paper and sacreBLEU's `wmt14/full`).

Where the raw text comes from, per split (first match wins):

1. Plain parallel text files in `--tmp_dir` (nothing is downloaded). For
   `translate_ende` (`pair` = "en-de"; "de-en" is accepted too), with
   `STEM.en` / `STEM.de` side by side:

   - dev:   `dev.en-de`, then `newstest2013.en-de`
   - test:  `test.en-de`, then `newstest2014-full.en-de`, then `newstest2014.en-de`
   - train: `train.en-de`; otherwise every other stem in --tmp_dir whose name
     contains the pair and does not start with `newstest2013`/`newstest2014`,
     `dev.` or `test.`, in name order, e.g. `europarl-v7.de-en`,
     `commoncrawl.de-en`, `news-commentary-v9.de-en` or the WMT news test
     sets 2008-2012 (`newstest2012.en-de`). Each stem is a corpus of its own
     (`train_corpora`, named by the stem, e.g. `europarl-v7.de-en`), which
     `t2t-trainer --train_mix` can weigh.

   `translate_enfr` is the same with "en-fr"/"fr-en" and `.fr`. The newstest
   files of `../shared/data/wmt14` are found as dev and test; any split can be
   served by any parallel files given one of the names above (a symlink works).

2. Otherwise tensorflow-datasets `wmt14_translate/de-en` (or `fr-en`), splits
   train / validation / test, if prepared; a download is only attempted when
   the network answers (see `t2t_lite.data.tfds_source`). tfds shuffles
   examples when it prepares data, so use local files for dev/test when the
   reference order matters (BLEU against the original files).
"""

import functools
import os
from typing import Iterator, List, Optional, Tuple

from t2t_lite import registry
from t2t_lite.data.layout import check_split
from t2t_lite.data.problem import Corpus, Pair, Problem, read_parallel_text
from t2t_lite.data.tfds_source import tfds_pairs

_TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
_HELD_OUT_PREFIXES = ("newstest2013", "newstest2014", "dev.", "test.")


class TranslateWmt14(Problem):
    """Base of the WMT14 problems: local files in tmp_dir first, then tensorflow-datasets."""

    source_language = "en"
    vocab_sample_pairs = 500_000
    num_train_shards = 100
    download_host = "www.statmt.org"
    tfds_data_dir: Optional[str] = None  # None: $TFDS_DATA_DIR or ~/tensorflow_datasets

    @property
    def _pairs(self) -> Tuple[str, str]:
        s, t = self.source_language, self.target_language
        return (f"{s}-{t}", f"{t}-{s}")

    def _named_stems(self, split: str) -> List[str]:
        dev_test = {"dev": ["dev", "newstest2013"],
                    "test": ["test", "newstest2014-full", "newstest2014"],
                    "train": ["train"]}[split]
        return [f"{name}.{pair}" for name in dev_test for pair in self._pairs]

    def _has_pair(self, tmp_dir: str, stem: str) -> bool:
        return all(os.path.isfile(os.path.join(tmp_dir, f"{stem}.{lang}"))
                   for lang in (self.source_language, self.target_language))

    def local_files(self, split: str, tmp_dir: Optional[str]) -> List[Tuple[str, str]]:
        """The (source, target) file paths in `tmp_dir` that serve `split`; [] if none."""
        check_split(split)
        if not tmp_dir or not os.path.isdir(tmp_dir):
            return []
        stems = [s for s in self._named_stems(split) if self._has_pair(tmp_dir, s)][:1]
        if not stems and split == "train":
            suffix = f".{self.source_language}"
            candidates = sorted(f[:-len(suffix)] for f in os.listdir(tmp_dir) if f.endswith(suffix))
            stems = [s for s in candidates
                     if any(p in s for p in self._pairs)
                     and not s.startswith(_HELD_OUT_PREFIXES) and self._has_pair(tmp_dir, s)]
        return [(os.path.join(tmp_dir, f"{s}.{self.source_language}"),
                 os.path.join(tmp_dir, f"{s}.{self.target_language}")) for s in stems]

    def train_corpora(self, tmp_dir: Optional[str]) -> List[Corpus]:
        """One corpus per local train stem, named by it (e.g. "commoncrawl.de-en",
        "europarl-v7.de-en"); without local train files, one named after the problem."""
        files = self.local_files("train", tmp_dir)
        if not files:
            return super().train_corpora(tmp_dir)
        suffix = len(self.source_language) + 1
        return [(os.path.basename(source)[:-suffix],
                 functools.partial(read_parallel_text, source, target))
                for source, target in files]

    def raw_files(self, split: str, tmp_dir: Optional[str]) -> List[str]:
        """The local files of `split` (none when it comes from tensorflow-datasets)."""
        return [path for pair in self.local_files(split, tmp_dir) for path in pair]

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        files = self.local_files(split, tmp_dir)
        if files:
            for source_path, target_path in files:
                yield from read_parallel_text(source_path, target_path)
            return
        pair = self._pairs[0]
        hint = (f"put parallel text files in --tmp_dir (for {split}: "
                f"{' or '.join(self._named_stems(split)[::2])}"
                f"{' or any *' + pair + '*' if split == 'train' else ''}"
                f".{{{self.source_language},{self.target_language}}}; "
                f"{'looked in ' + tmp_dir if tmp_dir else 'no --tmp_dir given'})")
        builder = f"wmt14_translate/{self.target_language}-en"
        yield from tfds_pairs(builder, _TFDS_SPLITS[split], self.source_language,
                              self.target_language, self.download_host, tmp_dir, hint,
                              self.tfds_data_dir)


@registry.register_problem("translate_ende", aliases=["translate_ende_wmt32k"])
class TranslateEnde(TranslateWmt14):
    """WMT14 English->German with a shared vocabulary of about 37,000 pieces (the paper's)."""

    target_language = "de"
    vocab_size = 37000


@registry.register_problem("translate_enfr", aliases=["translate_enfr_wmt32k"])
class TranslateEnfr(TranslateWmt14):
    """WMT14 English->French with a shared vocabulary of about 32,000 pieces (the paper's)."""

    target_language = "fr"
    vocab_size = 32000
    num_train_shards = 400  # 36M pairs
