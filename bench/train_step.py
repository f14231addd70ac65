"""Training-step throughput and model FLOP utilisation on synthetic batches.

    python bench/train_step.py [--hparams_sets transformer_base,transformer_small]
        [--tokens 4096] [--length 32] [--steps 10] [--modes float32,mixed_bfloat16]
        [--jit both|on|off] [--vocab_size 37000]

(`--tokens 4096,8192` measures each batch size.)

For each hparams set, precision and XLA setting it runs the real compiled
training step (`t2t_lite.train.step.make_train_step`: forward, label-smoothed
loss, backward, Adam) on random batches of `tokens` target tokens (and as
many source tokens), and prints steady-state target tokens/s and MFU: model
FLOPs per second over the matmul peak measured in the same process (a large
float32 or bfloat16 matmul in a `tf.function`).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import t2t_lite  # noqa: E402
from t2t_lite.train.schedule import make_optimizer  # noqa: E402
from t2t_lite.train.step import make_train_step  # noqa: E402


def matmul_peak(dtype: tf.DType, size: int = 4096, repeats: int = 10) -> float:
    """Measured GFLOP/s of a [size, size] x [size, size] matmul in `dtype`."""
    a = tf.random.normal([size, size], dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function
    def run(x):
        for _ in range(repeats):
            x = tf.matmul(x, a) * tf.cast(1e-2, dtype)
        return x

    run(a).numpy()
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        run(a).numpy()
        best = max(best, 2 * size ** 3 * repeats / (time.perf_counter() - start) / 1e9)
    return best


def training_flops(hp, batch: int, src_len: int, tgt_len: int, vocab: int) -> float:
    """Matmul FLOPs of one training step (forward x 3 for forward + backward)."""
    d, f, kc, vc = hp.hidden_size, hp.filter_size, hp.key_channels, hp.value_channels
    src, tgt = batch * src_len, batch * tgt_len
    enc = src * (2 * d * (2 * kc + vc) + 2 * vc * d + 4 * d * f + 2 * src_len * (kc + vc))
    dec = tgt * (2 * d * (2 * kc + vc) + 2 * vc * d + 2 * tgt_len * (kc + vc)  # self
                 + 2 * d * kc + 2 * vc * d + 2 * src_len * (kc + vc)  # cross
                 + 4 * d * f)
    dec += src * 2 * d * (kc + vc)  # cross-attention keys and values
    logits = tgt * 2 * d * vocab
    return 3.0 * (hp.encoder_layers * enc + hp.decoder_layers * dec + logits)


def synthetic_batch(batch: int, length: int, vocab_size: int):
    """Random source and target ids (no padding), each ending with EOS (1)."""
    def ids(seed):
        body = tf.random.uniform([batch, length - 1], 3, vocab_size, dtype=tf.int32, seed=seed)
        return tf.concat([body, tf.ones([batch, 1], tf.int32)], axis=1)
    return {"inputs": ids(1), "targets": ids(2)}


def measure(hp_name: str, policy: str, jit: bool, tokens: int, length: int, steps: int,
            vocab_size: int):
    keras.config.set_dtype_policy(policy)
    hp = t2t_lite.registry.hparams(hp_name)
    model = t2t_lite.build_model(hp, vocab_size)
    step = make_train_step(model, make_optimizer(hp), hp, jit_compile=jit)
    batch_size = tokens // length
    batch = synthetic_batch(batch_size, length, vocab_size)
    for _ in range(2):  # compile and warm up
        step(batch).numpy()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step(batch)
    loss.numpy()
    seconds = (time.perf_counter() - start) / steps
    flops = training_flops(hp, batch_size, length, length, vocab_size)
    keras.config.set_dtype_policy("float32")
    return batch_size * length / seconds, flops / seconds / 1e9


def token_counts(text: str) -> list:
    """`--tokens`: comma-separated positive integers, e.g. "4096,8192"."""
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers like 4096,8192, got {text!r}")
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hparams_sets", default="transformer_base,transformer_small")
    parser.add_argument("--tokens", type=token_counts, default="4096",
                        help="target tokens per batch, comma-separated")
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--modes", default="float32,mixed_bfloat16")
    parser.add_argument("--jit", default="both", choices=["both", "on", "off"])
    parser.add_argument("--vocab_size", type=int, default=37000, help="37000: WMT14 en-de's")
    args = parser.parse_args()

    peaks = {"float32": matmul_peak(tf.float32), "mixed_bfloat16": matmul_peak(tf.bfloat16)}
    print(f"matmul peak: float32 {peaks['float32']:.0f} GFLOP/s, "
          f"bfloat16 {peaks['mixed_bfloat16']:.0f} GFLOP/s")
    jits = {"both": [False, True], "on": [True], "off": [False]}[args.jit]
    print(f"{'hparams_set':<24} {'precision':<15} {'jit':<5} {'tokens':>6} {'tgt tok/s':>10} "
          f"{'GFLOP/s':>8} {'MFU':>6}")
    for name in args.hparams_sets.split(","):
        for mode in args.modes.split(","):
            for jit in jits:
                for tokens in args.tokens:
                    tok_s, gflops = measure(name, mode, jit, tokens, args.length, args.steps,
                                            args.vocab_size)
                    print(f"{name:<24} {mode:<15} {str(jit):<5} {tokens:>6} {tok_s:>10.0f} "
                          f"{gflops:>8.0f} {gflops / peaks[mode]:>6.1%}", flush=True)


if __name__ == "__main__":
    main()
