"""Decoding throughput of t2t-lite beside CTranslate2, same shapes, same forced lengths.

    python bench/decode_speed.py [--hparams_sets transformer_base,transformer_small]
        [--batch_sizes 32,64] [--beam_sizes 4,1] [--source_length 25]
        [--output_length 30] [--ct2_compute_types float32,int8] [--repeats 3]

For each hparams set it builds a t2t-lite Transformer with random weights and
a CTranslate2 model of the same shape (layers, d_model, d_ff, heads, post- or
pre-norm, shared vocabulary of `--vocab_size`) built with CTranslate2's specs
API, also with random weights. Every batch holds `batch` random sources of
`source_length` tokens (EOS included) and every hypothesis is forced to
exactly `output_length` tokens: EOS is forbidden before then (t2t-lite's
`min_length`, CTranslate2's `min_decoding_length`) and the maximum length is
`output_length` (t2t-lite: input length + `extra_length`; CTranslate2:
`max_decoding_length`), so both do the same work whatever the weights say.

t2t-lite runs `Search.compiled` (encoder, cache, beam search: the compiled
function t2t-decoder uses, with the search's `jit_compile` setting); CTranslate2
runs `translate_batch` on the same number of threads. Printed per row: target
tokens/s (batch x output_length per call, best of `--repeats`), sentences/s
and the ratio t2t-lite / CTranslate2 for each CTranslate2 compute type.
CTranslate2 is optional (`pip install -e .[bench]`): without it only t2t-lite
is timed.
"""

import argparse
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

# How t2t-lite's search is compiled: (jit_compile, growing_cache).
MODES = {"plain": (False, True), "plain_preallocated": (False, False), "xla": (True, False)}


def t2t_lite_seconds(model, sources: np.ndarray, beam: int, output_length: int,
                     repeats: int, mode: str) -> float:
    params = SearchParams(beam_size=beam, alpha=0.6, extra_length=output_length - sources.shape[1],
                          min_length=output_length)
    jit_compile, growing_cache = MODES[mode]
    search = Search(model, params, jit_compile=jit_compile, growing_cache=growing_cache)
    inputs = tf.constant(sources)

    def call():
        ids, _ = search.compiled(inputs)
        ids = ids.numpy()
        assert ids.shape[-1] == output_length and (ids[:, 0] > EOS).all(), ids.shape

    return time_calls(call, repeats)


# -- CTranslate2 ----------------------------------------------------------------

def ct2_weight_shape(name: str, d: int, f: int, vocab: int):
    """The shape of a CTranslate2 Transformer weight from its scope name.

    Linear weights are [out, in]. Self-attention fuses Q, K, V (linear_0) and
    has an output projection (linear_1); cross-attention has Q (linear_0), fused
    K, V (linear_1) and the output projection (linear_2).
    """
    parts = name.split("/")
    leaf, owner = parts[-1], parts[-2]
    if leaf in ("gamma", "beta"):
        return (d,)
    if "embeddings" in owner or owner == "projection":
        return (vocab,) if leaf == "bias" else (vocab, d)
    if owner == "linear_0" and parts[-3] == "ffn":
        return (f,) if leaf == "bias" else (f, d)
    if owner == "linear_1" and parts[-3] == "ffn":
        return (d,) if leaf == "bias" else (d, f)
    if parts[-3] == "self_attention":
        out = 3 * d if owner == "linear_0" else d
    elif parts[-3] == "attention":
        out = 2 * d if owner == "linear_1" else d
    else:
        raise ValueError(f"unexpected CTranslate2 weight {name}")
    return (out,) if leaf == "bias" else (out, d)


def build_ct2_model(hp, vocab_size: int, directory: str) -> str:
    """Writes a CTranslate2 model of `hp`'s shape with random weights; returns its directory."""
    from ctranslate2 import specs
    from ctranslate2.specs import model_spec

    spec = specs.TransformerSpec.from_config(
        (hp.encoder_layers, hp.decoder_layers), hp.num_heads,
        pre_norm=hp.norm_placement == "pre")
    rng = np.random.default_rng(0)
    d, f = hp.hidden_size, hp.filter_size

    def fill(layer, name, value):
        if value is None:
            leaf = name.split("/")[-1]
            shape = ct2_weight_shape(name, d, f, vocab_size)
            array = (np.ones(shape, np.float32) if leaf == "gamma" else
                     np.zeros(shape, np.float32) if leaf in ("beta", "bias") else
                     rng.normal(0, d ** -0.5, size=shape).astype(np.float32))
            setattr(layer, leaf, array)
        elif name.endswith("ffn/linear_0/bias") or name.endswith("ffn/linear_1/bias"):
            # t2t-lite's feed-forward layers have biases; attention has none in both.
            setattr(layer, name.split("/")[-1],
                    np.zeros(ct2_weight_shape(name, d, f, vocab_size), np.float32))

    model_spec.visit_spec(spec, fill)
    tokens = ["<blank>", "</s>", "<unk>"] + [f"w{i}" for i in range(3, vocab_size)]
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.config.decoder_start_token = "<blank>"  # t2t's start symbol is PAD (id 0)
    spec.config.bos_token, spec.config.eos_token = "<blank>", "</s>"
    spec.validate()
    spec.optimize(quantization="float32")
    spec.save(directory)
    return directory


def ct2_seconds(translator, sources: np.ndarray, beam: int, output_length: int,
                repeats: int) -> float:
    batch = [[f"w{i}" for i in row[:-1]] for row in sources]  # CTranslate2 appends </s>

    def call():
        results = translator.translate_batch(
            batch, beam_size=beam, max_decoding_length=output_length,
            min_decoding_length=output_length, length_penalty=0.6, max_batch_size=len(batch))
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
    p.add_argument("--modes", default="plain,xla",
                   help="t2t-lite search compilation: plain (tf.function, growing cache), "
                        "plain_preallocated, xla (XLA, preallocated cache)")
    p.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                   help="t2t-lite's compute dtype (bfloat16: Keras mixed_bfloat16)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
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
    print(f"{args.threads} threads, sources {args.source_length} tokens, outputs forced to "
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
            ct2_dir = build_ct2_model(hp, args.vocab_size, tempfile.mkdtemp(prefix="ct2-bench-"))
            ct2 = {c: ctranslate2.Translator(ct2_dir, device="cpu", compute_type=c,
                                             intra_threads=args.threads, inter_threads=1)
                   for c in compute_types}
        print(header)
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            sources = random_sources(batch, args.source_length, args.vocab_size)
            tokens = batch * args.output_length
            for beam in [int(b) for b in args.beam_sizes.split(",")]:
                ct2_times = {c: ct2_seconds(translator, sources, beam, args.output_length,
                                            args.repeats) for c, translator in ct2.items()}
                for mode in modes:
                    seconds = t2t_lite_seconds(model, sources, beam, args.output_length,
                                               args.repeats, mode)
                    row = f"{name + ' ' + mode:<32} {batch:>5} {beam:>4} "
                    row += f"{tokens / seconds:>9.0f} ({batch / seconds:>6.1f})"
                    for c, t in ct2_times.items():
                        row += f" {tokens / t:>9.0f} ({batch / t:>6.1f}) {t / seconds:>6.2f}"
                    print(row, flush=True)


if __name__ == "__main__":
    main()
