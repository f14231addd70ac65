"""Decoding throughput of t2t-lite beside CTranslate2, same shapes, same forced lengths.

    python bench/decode_speed.py [--hparams_sets transformer_base,transformer_small]
        [--batch_sizes 32,64] [--beam_sizes 4,1] [--source_length 25]
        [--output_length 30] [--ct2_compute_types float32,int8] [--repeats 3]
        [--modes default,xla] [--parallel_batches 0]

For each hparams set it builds a t2t-lite Transformer with random weights
(shared vocabulary of `--vocab_size`) and converts that same model to
CTranslate2 with t2t-exporter's converter (`ctranslate2_spec.transformer_spec`,
float32 weights; CTranslate2 quantizes at load time for its int8 rows). Every batch holds `batch` random sources of
`source_length` tokens (EOS included) and every hypothesis is forced to
exactly `output_length` tokens: EOS is forbidden before then (t2t-lite's
`min_length`, CTranslate2's `min_decoding_length`) and the maximum length is
`output_length` (t2t-lite: input length + `extra_length`; CTranslate2:
`max_decoding_length`), so both do the same work whatever the weights say.

t2t-lite runs `Search.compiled` (encoder, cache, beam search: the compiled
function t2t-decoder uses, with the search's `jit_compile` setting) on
`--parallel_batches` batches at once, each on its own thread with each op on
its share of `--threads` (t2t-decoder's default: one batch per core, one
thread per op); CTranslate2 runs `translate_batch` over as many batches with
as many `inter_threads`, each with the same share as `intra_threads`. Printed
per row: target tokens/s (parallel_batches x batch x output_length per call,
best of `--repeats`), sentences/s and the ratio t2t-lite / CTranslate2 for
each CTranslate2 compute type.
CTranslate2 is optional (`pip install -e '.[bench]'`): without it only t2t-lite
is timed.
"""

import argparse
import concurrent.futures
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import t2t_lite  # noqa: E402,F401  (registers the hparams sets)
from t2t_lite import registry  # noqa: E402
from t2t_lite.decode.search import Search, SearchParams  # noqa: E402
from t2t_lite.model.transformer import build  # noqa: E402
from t2t_lite.threads import usable_cores  # noqa: E402

EOS = 1


def random_sources(batch: int, length: int, vocab_size: int, seed: int = 0) -> np.ndarray:
    """int32 [batch, length]: random ids in [3, vocab) then EOS."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab_size, size=(batch, length), dtype=np.int32)
    ids[:, -1] = EOS
    return ids


def time_calls(fn, repeats: int) -> float:
    """Best wall time of `repeats` calls after one warm-up (tracing, compiling) call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# -- t2t-lite -------------------------------------------------------------------

# How t2t-lite's search is compiled: (jit_compile, growing_cache); "default" is
# exactly what t2t-decoder runs without flags (Search's own defaults).
MODES = {"default": (False, None), "plain": (False, True), "plain_preallocated": (False, False),
         "xla": (True, False)}


def t2t_lite_seconds(model, batches, beam: int, output_length: int,
                     repeats: int, mode: str) -> float:
    """Best seconds to search all `batches` (int32 [batch, S] each), all at once."""
    params = SearchParams(beam_size=beam, alpha=0.6,
                          extra_length=output_length - batches[0].shape[1],
                          min_length=output_length)
    jit_compile, growing_cache = MODES[mode]
    search = Search(model, params, jit_compile=jit_compile, growing_cache=growing_cache)
    inputs = [tf.constant(sources) for sources in batches]

    def search_one(batch):
        ids, _, _ = search.compiled(batch)
        ids = ids.numpy()
        assert ids.shape[-1] == output_length and (ids[:, 0] > EOS).all(), ids.shape

    with concurrent.futures.ThreadPoolExecutor(len(inputs)) as pool:
        return time_calls(lambda: list(pool.map(search_one, inputs)), repeats)


# -- CTranslate2 ----------------------------------------------------------------

def build_ct2_model(model, vocab_size: int, directory: str) -> str:
    """Converts `model` (the t2t-lite model being timed, random weights) with
    t2t-exporter's converter into a float32 CTranslate2 model; returns its directory."""
    from t2t_lite.export.ctranslate2_spec import transformer_spec

    pieces = ["<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(3, vocab_size)]
    spec = transformer_spec(model, pieces)
    spec.optimize(quantization="float32")
    spec.save(directory)
    return directory


def ct2_seconds(translator, batches, beam: int, output_length: int,
                repeats: int) -> float:
    """Best seconds to translate all `batches` in one call (batches of their size, as many
    at once as the translator's `inter_threads`)."""
    sources = [[f"w{i}" for i in row[:-1]] for rows in batches for row in rows]  # + </s>

    def call():
        results = translator.translate_batch(
            sources, beam_size=beam, max_decoding_length=output_length,
            min_decoding_length=output_length, length_penalty=0.6,
            max_batch_size=len(batches[0]))
        assert len(results[0].hypotheses[0]) == output_length

    return time_calls(call, repeats)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hparams_sets", default="transformer_base,transformer_small")
    p.add_argument("--batch_sizes", default="32,64")
    p.add_argument("--beam_sizes", default="4,1")
    p.add_argument("--source_length", type=int, default=25)
    p.add_argument("--output_length", type=int, default=30)
    p.add_argument("--vocab_size", type=int, default=32000)
    p.add_argument("--ct2_compute_types", default="float32,int8",
                   help="empty: do not time CTranslate2")
    p.add_argument("--modes", default="default,xla",
                   help="t2t-lite search compilation: default (what t2t-decoder runs "
                        "without flags), plain (tf.function, growing cache), "
                        "plain_preallocated, xla (XLA, preallocated cache)")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                   help="t2t-lite's compute dtype (bfloat16: Keras mixed_bfloat16)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=usable_cores())
    p.add_argument("--parallel_batches", type=int, default=0,
                   help="batches at once, each op on threads / parallel_batches threads "
                        "(0: one per thread, t2t-decoder's default)")
    args = p.parse_args()
    parallel = args.parallel_batches or args.threads
    per_batch_threads = max(1, args.threads // parallel)
    tf.config.threading.set_intra_op_parallelism_threads(per_batch_threads)
    if args.output_length < args.source_length:
        p.error("--output_length must be at least --source_length (extra_length >= 0)")
    compute_types = [c for c in args.ct2_compute_types.split(",") if c]
    if compute_types:
        try:
            import ctranslate2  # noqa: F401
        except ImportError:
            print("ctranslate2 is not installed (pip install -e .[bench]): t2t-lite only.")
            compute_types = []
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        p.error(f"unknown --modes {unknown}; choose from {sorted(MODES)}")
    keras.config.set_dtype_policy("mixed_bfloat16" if args.precision == "bfloat16" else "float32")
    print(f"{args.threads} threads, {parallel} batches at once with {per_batch_threads} "
          f"thread(s) per op, sources {args.source_length} tokens, outputs forced to "
          f"{args.output_length} tokens, vocabulary {args.vocab_size}; target tokens/s "
          "(sentences/s), best of", args.repeats)
    header = f"{'model, t2t-lite mode':<32} {'batch':>5} {'beam':>4} {'t2t-lite':>18}"
    header += "".join(f" {'ct2 ' + c:>18} {'ratio':>6}" for c in compute_types)
    for name in args.hparams_sets.split(","):
        hp = registry.hparams(name)
        model = build(hp, args.vocab_size)
        ct2 = {}
        if compute_types:
            import ctranslate2
            ct2_dir = build_ct2_model(model, args.vocab_size, tempfile.mkdtemp(prefix="ct2-bench-"))
            ct2 = {c: ctranslate2.Translator(ct2_dir, device="cpu", compute_type=c,
                                             intra_threads=per_batch_threads,
                                             inter_threads=parallel)
                   for c in compute_types}
        print(header)
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            batches = [random_sources(batch, args.source_length, args.vocab_size, seed)
                       for seed in range(parallel)]
            tokens = parallel * batch * args.output_length
            sentences = parallel * batch
            for beam in [int(b) for b in args.beam_sizes.split(",")]:
                ct2_times = {c: ct2_seconds(translator, batches, beam, args.output_length,
                                            args.repeats) for c, translator in ct2.items()}
                for mode in modes:
                    seconds = t2t_lite_seconds(model, batches, beam, args.output_length,
                                               args.repeats, mode)
                    row = f"{name + ' ' + mode:<32} {batch:>5} {beam:>4} "
                    row += f"{tokens / seconds:>9.0f} ({sentences / seconds:>6.1f})"
                    for c, t in ct2_times.items():
                        row += (f" {tokens / t:>9.0f} ({sentences / t:>6.1f}) "
                                f"{t / seconds:>6.2f}")
                    print(row, flush=True)


if __name__ == "__main__":
    main()
