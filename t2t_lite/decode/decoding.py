"""The decoder program's library: decoding lines, output options and formatting.

One output line per input line, in input order. A model can emit a line
break (SentencePiece's byte pieces spell any character, "\\n" included): in
what is written, "\\n" and "\\r" inside a hypothesis become a space, so the
output keeps exactly one line per input; in the TAB-separated formats
(`return_beams`, `write_beam_scores`, `alignments`) a TAB inside a hypothesis
becomes a space too, so the columns stay where they belong.

Inputs are sorted by length so that batches hold sentences of similar length
(less padding, earlier stops), then the outputs are put back in input order.
Batches are translated several at a time (`DecodeOptions.parallel_batches`,
default: one per CPU core, or one at a time on a GPU), each on its own thread;
each batch's result does not depend on the others, so the output is the same
for any number. A small
model's decoding step is bound by the launch of its many tiny ops, not by
arithmetic, so concurrent batches use the cores better than splitting every
op over them (t2t-decoder gives each op one thread then: `t2t_lite.threads`).
Empty (or whitespace-only) input lines give empty output lines without
running the model. Inputs longer than the search's `max_input_length`
(default: the model's `max_length` subwords, EOS included; no limit for a model
imported from t2t, as t2t-decoder) are truncated to it.
"""

import concurrent.futures
import dataclasses
import sys
import time
from typing import Callable, List, Optional, Sequence, TextIO, Tuple

import tensorflow as tf

from t2t_lite.decode import alignment
from t2t_lite.decode.search import SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError, did_you_mean
from t2t_lite.hparams_lib import parse_overrides
from t2t_lite.threads import usable_cores, use_intra_op_threads


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """How t2t-decoder batches and writes its output; the rest of --decode_hparams
    is `SearchParams` (an exported model fixes those and has none of these)."""

    batch_size: int = 32              # sentences per batch
    return_beams: bool = False        # write all beams, TAB-separated
    write_beam_scores: bool = False   # append each hypothesis' score
    alignments: bool = False          # append each hypothesis' word alignment (Pharaoh)
    alignment_layer: int = -1         # the decoder layer it comes from (`decode.alignment`)
    parallel_batches: int = 0         # batches translated at once; 0: one per CPU core
                                      # (alignments: always one)

    def __post_init__(self):
        if self.batch_size < 1:
            raise T2TError(f"batch_size must be >= 1, got {self.batch_size}.")
        if self.parallel_batches < 0:
            raise T2TError(f"parallel_batches must be >= 0 (0: one per CPU core), "
                           f"got {self.parallel_batches}.")

    def concurrent_batches(self, batches: Optional[int] = None,
                           accelerator: Optional[bool] = None) -> int:
        """How many batches `decode_lines` translates at once: `parallel_batches`,
        by default one per CPU core, or one where TensorFlow sees a GPU
        (`accelerator`, default: asked of TensorFlow), at most `batches` (the
        number the input makes, when known)."""
        if self.alignments:  # eager Keras calls per batch: kept on one thread
            return 1
        if self.parallel_batches:
            wanted = self.parallel_batches
        elif accelerator if accelerator is not None else has_gpu():
            wanted = 1  # a GPU runs one batch's ops at a time anyway
        else:
            wanted = usable_cores()
        return max(1, min(wanted, batches)) if batches is not None else wanted

    def batches(self, lines: Sequence[str]) -> int:
        """How many batches `decode_lines` makes of `lines` (empty ones are not decoded)."""
        return -(-sum(1 for line in lines if line.strip()) // self.batch_size)


def has_gpu() -> bool:
    """Whether TensorFlow sees a GPU (asking does not start TensorFlow's runtime,
    so the thread pools can still be set after)."""
    return bool(tf.config.list_physical_devices("GPU"))


def parse_decode_hparams(search_defaults: SearchParams, overrides: str,
                         options: DecodeOptions = DecodeOptions()
                         ) -> Tuple[SearchParams, DecodeOptions]:
    """Splits t2t's --decode_hparams ("beam_size=4,batch_size=64") into search
    parameters (over `search_defaults`) and output options.

    Raises:
      T2TError: a malformed item, an unknown key (naming the known ones) or a bad value.
    """
    option_keys = {f.name for f in dataclasses.fields(DecodeOptions)}
    known = option_keys | {f.name for f in dataclasses.fields(SearchParams)}
    search_items, option_items = [], []
    for item in (item for item in (overrides or "").split(",") if item.strip()):
        key = item.partition("=")[0].strip()
        if key and key not in known:  # named against both sets, not only the search's
            raise T2TError(f"Unknown decode hparam {key!r}.{did_you_mean(key, known)} "
                           f"Known: {', '.join(sorted(known))}.")
        (option_items if key in option_keys else search_items).append(item)
    return (search_defaults.parse(",".join(search_items)),
            parse_overrides(options, ",".join(option_items), "decode hparam"))


def format_hypotheses(hypotheses: Sequence[str], scores: Sequence[float],
                      options: DecodeOptions,
                      alignments: Optional[Sequence[str]] = None) -> str:
    """One output line: the best hypothesis, or with `return_beams` all of them,
    TAB-separated; with `write_beam_scores` each followed by a TAB and its score,
    with `alignments` by a TAB and its word alignment ("0-0 1-2 ...")."""
    beams = range(len(hypotheses) if options.return_beams else 1)
    columns = options.return_beams or options.write_beam_scores or options.alignments
    hypotheses = [one_line(h, keep_tabs=not columns) for h in hypotheses]
    fields = []
    for b in beams:
        fields.append(hypotheses[b])
        if options.write_beam_scores:
            fields.append(f"{scores[b]:.4f}")
        if options.alignments:
            fields.append(alignments[b])
    return "\t".join(fields)


def share_cores(options: DecodeOptions, batches: Optional[int] = None) -> bool:
    """Gives each TensorFlow op the cores' share of one of the batches that
    `decode_lines` runs at once: all the cores for a single batch, one thread
    each when there are at least as many batches as cores. `batches`: the
    number the input makes (`DecodeOptions.batches`), when known. Call it
    before TensorFlow's first op; True if it took effect
    (`t2t_lite.threads.use_intra_op_threads`)."""
    return use_intra_op_threads(
        max(1, usable_cores() // options.concurrent_batches(batches)))


def one_line(text: str, keep_tabs: bool = True) -> str:
    """`text` with each "\\r\\n", "\\n" and "\\r" (and TAB unless `keep_tabs`) as a space."""
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return text if keep_tabs else text.replace("\t", " ")


def decode_lines(translator: Translator, lines: Sequence[str],
                 options: DecodeOptions = DecodeOptions(),
                 postprocess: Optional[Callable[[str, str], str]] = None,
                 progress: Optional[Callable[[int, int, float], None]] = None) -> List[str]:
    """Translates `lines`; returns exactly one output string per input line.

    Args:
      translator: the text wrapper over the search.
      lines: input lines; empty (or whitespace-only) ones give "" without decoding.
      options: batch size, batches at once and output format (`format_hypotheses`).
      postprocess: (hypothesis, input line) -> what to write, applied to every
        hypothesis (the problem's `postprocess`, e.g. trees over the input words).
      progress: called as (done, total, seconds) after each batch.

    Raises:
      T2TError: a line the vocabulary refuses (`MarianVocab.check_inputs`).
    """
    outputs = [""] * len(lines)
    todo = [i for i, line in enumerate(lines) if line.strip()]
    if not todo:
        return outputs
    translator.vocab.check_inputs(lines)  # a multilingual Marian model's: by line number
    encoded = translator.vocab.encode_inputs(tf.constant([lines[i] for i in todo]))  # [N, (S)]
    lengths = encoded.row_lengths().numpy()
    order = sorted(range(len(todo)), key=lambda j: -int(lengths[j]))  # positions in `todo`
    batches = [order[begin:begin + options.batch_size]
               for begin in range(0, len(order), options.batch_size)]

    # Only the compiled search runs on the pool's threads (TensorFlow's Python API is not
    # safe from several threads at once: t2t_lite/tf_api_lock.py); its inputs are made
    # and its outputs read here, and it is traced here once.
    search = translator.search
    search.compiled.get_concrete_function()
    inputs = [translator.pad(tf.gather(encoded, positions)) for positions in batches]  # [b, S]
    prepared = [search.prepare(batch, translator.pad_rows) for batch in inputs]

    start, done = time.time(), 0
    workers = options.concurrent_batches(len(batches))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        # map() keeps the batches' order; at most `workers` run at a time.
        results = pool.map(lambda batch: search.compiled(batch[0]), prepared)
        for positions, batch, (_, rows), result in zip(batches, inputs, prepared, results):
            hypotheses, scores, ids = translator.nbest_of(*search.finish(result, rows))
            aligned = _alignments(translator, batch, ids, [lines[todo[j]] for j in positions],
                                  options)
            for k, (j, hyps, sc) in enumerate(zip(positions, hypotheses, scores)):
                line = lines[todo[j]]
                if postprocess is not None:
                    hyps = [postprocess(h, line) for h in hyps]
                outputs[todo[j]] = format_hypotheses(hyps, sc, options,
                                                     [a[k] for a in aligned] if aligned else None)
            done += len(positions)
            if progress is not None:
                progress(done, len(todo), time.time() - start)
    return outputs


def _alignments(translator: Translator, inputs: tf.Tensor, ids, sources: Sequence[str],
                options: DecodeOptions) -> List[List[str]]:
    """With `options.alignments`: for each written beam, the batch's word alignments
    (`t2t_lite.decode.alignment`, from the first model of an ensemble); else []."""
    if not options.alignments:
        return []
    beams = ids.shape[1] if options.return_beams else 1
    return [alignment.align(translator.search.models[0], translator.vocab, inputs,
                            ids[:, b], sources, options.alignment_layer) for b in range(beams)]


def stderr_progress(done: int, total: int, seconds: float,
                    stream: Optional[TextIO] = None) -> None:
    """Prints "decoded 320/3003 sentences, 41.2 sentences/s" to `stream` (default:
    `sys.stderr` at the time of the call, which the programs replace while they run)."""
    stream = stream or sys.stderr
    stream.write(f"\rdecoded {done}/{total} sentences, {done / max(seconds, 1e-9):.1f} "
                 "sentences/s" + ("\n" if done == total else ""))
    stream.flush()
