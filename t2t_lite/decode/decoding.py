"""Decoding files: one output line per input line, in input order.

Inputs are sorted by length so that batches hold sentences of similar length
(less padding, earlier stops), then the outputs are put back in input order.
Empty (or whitespace-only) input lines give empty output lines without
running the model. Inputs longer than the decode params' `max_input_length`
(default: the model's `max_length` subwords, EOS included) are truncated to it.
"""

import sys
import time
from typing import Callable, List, Optional, Sequence, TextIO

import tensorflow as tf

from t2t_lite.decode.translator import DecodeParams, Translator
from t2t_lite.errors import T2TError


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file without their line ends ("\\n" or "\\r\\n").

    `t2t_lite.textio.read_lines(path, strip="newline")`.

    Raises:
      T2TError: missing file, or bytes that are not UTF-8 (naming the line).
    """
    # A local import: this module's imports stay as they are until it moves (issue 20).
    from t2t_lite import textio
    return textio.read_lines(path, strip="newline")


def _format(hypotheses: Sequence[str], scores: Sequence[float], params: DecodeParams) -> str:
    beams = range(len(hypotheses) if params.return_beams else 1)
    if params.write_beam_scores:
        return "\t".join(f"{hypotheses[b]}\t{scores[b]:.4f}" for b in beams)
    return "\t".join(hypotheses[b] for b in beams)


def decode_lines(translator: Translator, lines: Sequence[str],
                 progress: Optional[Callable[[int, int, float], None]] = None) -> List[str]:
    """Translates `lines`; returns exactly one output string per input line.

    With `return_beams`, an output holds all beams separated by TABs (each
    followed by its score with `write_beam_scores`).
    """
    params = translator.params
    outputs = [""] * len(lines)
    todo = [i for i, line in enumerate(lines) if line.strip()]
    if not todo:
        return outputs
    encoded = translator.vocab.encode(tf.constant([lines[i] for i in todo]))  # [N, (S)]
    lengths = encoded.row_lengths().numpy()
    order = sorted(range(len(todo)), key=lambda j: -int(lengths[j]))  # positions in `todo`
    start, done = time.time(), 0
    for begin in range(0, len(order), params.batch_size):
        positions = order[begin:begin + params.batch_size]
        inputs = translator.pad(tf.gather(encoded, positions))
        hypotheses, scores = translator.nbest_ids(inputs)
        for j, hyps, sc in zip(positions, hypotheses, scores):
            outputs[todo[j]] = _format(hyps, sc, params)
        done += len(positions)
        if progress is not None:
            progress(done, len(todo), time.time() - start)
    return outputs


def stderr_progress(done: int, total: int, seconds: float, stream: TextIO = sys.stderr) -> None:
    """Prints "decoded 320/3003 sentences, 41.2 sentences/s" to stderr."""
    stream.write(f"\rdecoded {done}/{total} sentences, {done / max(seconds, 1e-9):.1f} "
                 "sentences/s" + ("\n" if done == total else ""))
    stream.flush()
