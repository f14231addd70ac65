"""Keras 3's int8 quantization of a dense layer against float32, on this CPU.

    python bench/int8_dense.py [--threads=1]

Issue 25's item 7 asks whether `model.quantize("int8")` would make decoding
faster. t2t-lite's layers hold their kernels as hand-made weights (a fused
q/k/v kernel, t2t's variable layout), so `model.quantize` finds no
`keras.layers.Dense` to quantize; what it would do to them is what Keras does
to a `Dense` layer: int8 kernel with a per-column scale, each input row
quantized to int8 at call time (abs-max), an int8 x int8 -> int32 MatMul, and
a float rescale. This script times exactly that, `keras.layers.Dense` before
and after `quantize("int8")`, on the matrix products of one decoding step of
`transformer_multi30k` and `transformer_base` (rows = batch x beam; the
output projection onto a 32,000-word vocabulary included), each inside one
`tf.function` loop so launch costs are paid as in the search loop, and prints
microseconds per call, the ratio, and the largest relative error of the int8
output.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

# (model, product, in_features, out_features) of one decoder layer's step, and the logits.
PRODUCTS = [
    ("transformer_multi30k", "self-attention q/k/v", 256, 768),
    ("transformer_multi30k", "feed-forward in", 256, 1024),
    ("transformer_multi30k", "feed-forward out", 1024, 256),
    ("transformer_multi30k", "logits", 256, 32000),
    ("transformer_base", "self-attention q/k/v", 512, 1536),
    ("transformer_base", "feed-forward in", 512, 2048),
    ("transformer_base", "feed-forward out", 2048, 512),
    ("transformer_base", "logits", 512, 32000),
]
ROWS = (8, 32, 256)  # batch 8 greedy, batch 8 beam 4, batch 64 beam 4


def microseconds_per_call(layer, x, iters: int) -> float:
    @tf.function(autograph=False)
    def loop(x):
        def body(i, acc):
            return i + 1, acc + layer(x)[0, 0]
        return tf.while_loop(lambda i, acc: i < iters, body, (0, tf.zeros([])))[1]

    loop(x).numpy()  # trace
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        loop(x).numpy()
        best = min(best, time.perf_counter() - start)
    return best / iters * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="TensorFlow intra-op threads "
                   "(t2t-decoder uses 1 per batch, with one batch per core)")
    p.add_argument("--iters", type=int, default=300)
    args = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    keras.utils.set_random_seed(0)
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, {args.threads} intra-op "
          f"thread(s); microseconds per call, best of 3 loops of {args.iters}")
    print("| model | product | rows | float32 us | int8 us | int8 / float32 | max rel. error |")
    print("|---|---|---|---|---|---|---|")
    for model, product, d_in, d_out in PRODUCTS:
        for rows in ROWS:
            x = tf.random.normal([rows, d_in])
            dense = keras.layers.Dense(d_out)
            dense.build((None, d_in))
            quantized = keras.layers.Dense(d_out)
            quantized.build((None, d_in))
            quantized.set_weights(dense.get_weights())
            quantized.quantize("int8")
            exact, approx = dense(x), quantized(x)
            error = float(tf.reduce_max(tf.abs(approx - exact)) / tf.reduce_max(tf.abs(exact)))
            f32 = microseconds_per_call(dense, x, args.iters)
            i8 = microseconds_per_call(quantized, x, args.iters)
            print(f"| {model} | {product} | {rows} | {f32:,.1f} | {i8:,.1f} | {i8 / f32:.2f} "
                  f"| {error:.4f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
