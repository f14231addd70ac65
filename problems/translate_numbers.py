"""English number words -> German number words, generated offline with num2words.

    "three hundred and forty-two"                         -> "dreihundertzweiundvierzig"
    "twenty-one thousand, three hundred and forty-two"    -> "einundzwanzigtausenddreihundertzweiundvierzig"

Units come before tens in German ("zweiundvierzig", forty-two) and words are
compounded into one, so the task needs reordering and a subword vocabulary.
It runs with no files and no network: the README's first command.

Splits, all drawn from the integers 0..999,999 with `random.Random(SEED)`
(SEED = 2017), disjoint by construction:
  - test: 1,000 numbers and dev: 1,000 numbers, each a third with 4, 5 and 6
    digits (334 / 333 / 333), so held-out accuracy covers every length;
  - train (100,000 numbers): every integer 0..999 (the building blocks), then
    the remaining budget split evenly over 4-, 5- and 6-digit numbers not held
    out (4-digit numbers are capped by the 8,332 left; the rest is shared by 5
    and 6 digits): 1,000 + 8,332 + 45,334 + 45,334 by default.
Each split is shuffled with the same generator; the lists are deterministic.
"""

import random
from typing import Dict, Iterator, List, Optional, Tuple

from num2words import num2words

from t2t_lite import registry
from t2t_lite.data.layout import check_split
from t2t_lite.data.problem import Pair, Problem
from t2t_lite.errors import T2TError

SEED = 2017
_HELD_OUT_DIGITS = (4, 5, 6)

# num2words is slow (~150 us a pair: 15 s for the default train split), so a
# process writes each split's words once, for every instance that asks: the
# vocabulary sample and the shards of one datagen, and any later datagen in
# the same process (a library caller, the test suite; a new t2t-datagen
# process starts afresh). About 30 MB for the default sizes (measured with
# tracemalloc). Keys: ((train, dev, test sizes), split).
_PAIRS: Dict[Tuple[Tuple[int, int, int], str], List[Pair]] = {}


def _digit_range(digits: int) -> range:
    return range(10 ** (digits - 1), 10 ** digits)


def number_splits(train_size: int = 100_000, dev_size: int = 1000, test_size: int = 1000,
                  seed: int = SEED) -> Dict[str, List[int]]:
    """The integers of each split ("train", "dev", "test"); see the module docstring.

    Raises:
      T2TError: `train_size` < 1000 (train always holds 0..999) or sizes too large.
    """
    if train_size < 1000:
        raise T2TError(f"train_size must be at least 1000 (0..999 are always in train), "
                       f"got {train_size}.")
    rng = random.Random(seed)
    held = {"test": [], "dev": []}
    held_set = set()
    for split, size in (("test", test_size), ("dev", dev_size)):
        for i, digits in enumerate(_HELD_OUT_DIGITS):
            count = size // 3 + (i < size % 3)  # 334 / 333 / 333 for 1000
            numbers = [n for n in rng.sample(_digit_range(digits), count + len(held_set))
                       if n not in held_set][:count]
            held[split] += numbers
            held_set.update(numbers)
    rest = train_size - 1000
    available = {d: len(_digit_range(d)) - sum(len(str(n)) == d for n in held_set)
                 for d in _HELD_OUT_DIGITS}
    n4 = min(rest // 3, available[4])
    counts = {4: n4, 5: (rest - n4) // 2, 6: rest - n4 - (rest - n4) // 2}
    train = list(range(1000))
    for digits in _HELD_OUT_DIGITS:
        if counts[digits] > available[digits]:
            raise T2TError(f"train_size {train_size} is too large for the held-out splits.")
        pool = rng.sample(_digit_range(digits), min(counts[digits] + len(held_set),
                                                     len(_digit_range(digits))))
        train += [n for n in pool if n not in held_set][:counts[digits]]
    splits = {"train": train, "dev": held["dev"], "test": held["test"]}
    for numbers in splits.values():
        rng.shuffle(numbers)
    return splits


def number_pair(n: int) -> Pair:
    """(English words, German words) of the integer `n`."""
    return num2words(n, lang="en"), num2words(n, lang="de")


@registry.register_problem("translate_ende_numbers")
class TranslateEndeNumbers(Problem):
    """English number words -> German number words for 0..999,999 (offline, generated)."""

    source_language = "en"
    target_language = "de"
    # 256 byte pieces + 3 specials + ~440 learned: whole German number words
    # ("einundzwanzig", "tausend", "hundertdreizehn"), 3.6 target pieces on
    # average, never spelt letter by letter (at 400 pieces, "einundzwanzig"
    # became 11 single letters).
    vocab_size = 700
    vocab_sample_pairs = 20_000  # the text is repetitive; more only slows SentencePiece
    num_train_shards = 4
    extra_length = 20   # outputs are at most ~25 pieces

    def __init__(self, train_size: int = 100_000, dev_size: int = 1000, test_size: int = 1000):
        self.sizes = (train_size, dev_size, test_size)
        self._splits: Optional[Dict[str, List[int]]] = None

    def numbers(self, split: str) -> List[int]:
        """The integers of `split`, in the order datagen writes them."""
        check_split(split)
        if self._splits is None:
            self._splits = number_splits(*self.sizes)
        return self._splits[split]

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        del tmp_dir  # generated, needs no files
        key = (self.sizes, split)
        if key not in _PAIRS:
            _PAIRS[key] = [number_pair(n) for n in self.numbers(split)]
        yield from _PAIRS[key]
