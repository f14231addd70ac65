"""The number-word corpus of make_reference.py: English, German and French number words from
num2words, split into training and held-out numbers by a fixed seed (imported by the script, which
runs from this directory or with it as sys.path[0])."""

import random

from num2words import num2words

SEED = 1234
NUMBERS = range(1000)      # the number-word corpus: 0..999
N_HELD_OUT = 100           # never trained on: 60 for input.txt lines, 30 for pairs.tsv, 10 spare
LANG_TOKEN = {"de": ">>deu<<", "fr": ">>fra<<"}


def words(n, lang):
    return num2words(n, lang=lang)


def split_numbers():
    """Returns (train, held_out): disjoint lists of numbers, fixed by SEED."""
    numbers = list(NUMBERS)
    random.Random(SEED).shuffle(numbers)
    return sorted(numbers[N_HELD_OUT:]), numbers[:N_HELD_OUT]


def source_line(n, src, tgt, multilingual):
    text = words(n, src)
    return f"{LANG_TOKEN[tgt]} {text}" if multilingual else text
