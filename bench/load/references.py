"""The sentence set and t2t-decoder's line and score for each (the references the
answers are judged against)."""

import dataclasses
import json
import os
import random
import subprocess
from typing import Dict, List, Optional, Sequence

from .programs import BenchError, program

# Options that change a written line's shape: not benchmarked.
SHAPING = ("return_beams", "write_beam_scores", "alignments")
NUMBERS_PROBLEM = "translate_ende_numbers"


def number_sentences(count: int, seed: int) -> List[str]:
    """`count` English number words as translate_ende_numbers writes them (num2words),
    of 1 to 6 digits in equal shares, drawn with `random.Random(seed)`."""
    from num2words import num2words

    rng = random.Random(seed)
    numbers = []
    for _ in range(count):
        digits = rng.randint(1, 6)
        numbers.append(rng.randrange(0 if digits == 1 else 10 ** (digits - 1), 10 ** digits))
    return [num2words(n, lang="en") for n in numbers]


def model_problem(output_dir: str) -> str:
    """The problem name in the model directory's problem.json."""
    try:
        with open(os.path.join(output_dir, "problem.json"), encoding="utf-8") as f:
            return json.load(f)["problem"]
    except (OSError, ValueError, KeyError) as e:
        raise BenchError(f"{output_dir!r} is not a model directory ({e})") from None


def sentence_set(output_dir: str, path: Optional[str], count: int, seed: int) -> List[str]:
    """The first `count` lines of `path`, or without it number words for the numbers model."""
    if path is None:
        if model_problem(output_dir) != NUMBERS_PROBLEM:
            raise BenchError(f"give --sentences: only {NUMBERS_PROBLEM} has default sentences")
        return number_sentences(count, seed)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")[:count]
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"cannot read --sentences {path!r}: {e}") from None
    lines = [line.rstrip("\r") for line in lines if line.strip()]  # blank lines aren't searched
    if not lines:
        raise BenchError(f"--sentences {path!r} holds no non-blank line")
    return lines


@dataclasses.dataclass
class Reference:
    """t2t-decoder's line and score for each sentence, with one engine."""

    lines: List[str]
    scores: List[float]

    def __post_init__(self):
        self.owners: Dict[str, List[int]] = {}  # line -> the sentences translated into it
        for i, line in enumerate(self.lines):
            self.owners.setdefault(line, []).append(i)


def check_decode_hparams(decode_hparams: str) -> None:
    """Refuses the options that change a written line's shape (the answers are compared
    with t2t-decoder's lines, read with their scores)."""
    for item in filter(None, decode_hparams.split(",")):
        key, _, value = item.partition("=")
        if key.strip() in SHAPING and value.strip().lower() not in ("false", "0"):
            raise BenchError(f"--decode_hparams {key.strip()} is not benchmarked: the "
                             "answers are compared with t2t-decoder's plain lines")


def decoder_reference(args, engine_flags: Sequence[str], sentences: Sequence[str],
                      workdir: str) -> Reference:
    """t2t-decoder's line and score for each sentence: its own process, its default
    batching, `engine_flags` (none: TensorFlow), `write_beam_scores` added."""
    source = os.path.join(workdir, "sentences.txt")
    target = os.path.join(workdir, "decoded-" + "-".join(engine_flags).replace("=", "_") + ".txt")
    with open(source, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in sentences))
    hparams = ",".join(filter(None, [args.decode_hparams, "write_beam_scores=true"]))
    result = subprocess.run(program("t2t_decoder") + [
        f"--output_dir={args.output_dir}", f"--decode_hparams={hparams}",
        f"--checkpoint_average={args.checkpoint_average}", f"--decode_from_file={source}",
        f"--decode_to_file={target}", *engine_flags], capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError("t2t-decoder failed: " + (result.stderr.strip().splitlines() or ["?"])[-1])
    with open(target, encoding="utf-8", newline="") as f:
        rows = [line.rsplit("\t", 1) for line in f.read().split("\n")[:-1]]
    if len(rows) != len(sentences) or any(len(row) != 2 for row in rows):
        raise BenchError(f"t2t-decoder wrote {len(rows)} lines 'translation<TAB>score' for "
                         f"{len(sentences)} sentences")
    return Reference([line for line, _ in rows], [float(score) for _, score in rows])
