"""A random-table model for pinning search outputs, and the script that pinned them.

    python tests/decode/search_pins.py   # rewrites tests/decode/data/search_pins.json

`RandomTableModel` is a `symbols_to_logits_fn` whose next-token logits are a
row of a seeded random table chosen by a hash of the example's prefix, kept in
the cache; each example has its own table (a per-example "static" cache entry)
and its own maximum length, so examples finish at different steps and a wrong
reordering or compaction of the cache changes the output.

The pinned file was written by this script from the search as it was before
finished sentences left the batch (commit 4db9015, where every example stayed
in the loop until the last one ended), so the test that reads it checks that
removing finished examples changed no token and no score.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

VOCAB = 12
EOS = 1
ROWS = 97  # prefix-hash buckets per example
EXAMPLES = 24
PINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "search_pins.json")
# (beam_size, alpha, length_penalty): greedy, the paper's beam, fairseq's penalty, wide beam
SETTINGS = [(1, 0.6, "gnmt"), (4, 0.6, "gnmt"), (3, 1.0, "fairseq"), (6, 0.0, "gnmt")]


class RandomTableModel:
    """Logits = tables[example, hash(prefix)]; the hash lives in the cache."""

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        logits = rng.normal(0.0, 2.0, size=(EXAMPLES, ROWS, VOCAB)).astype(np.float32)
        # EOS more or less likely per example, so some end early and some never.
        logits[:, :, EOS] += rng.uniform(-3.0, 1.5, size=(EXAMPLES, 1)).astype(np.float32)
        logits[:, :, 0] = -1e9  # PAD is never produced
        self.tables = tf.constant(logits)
        self.max_lengths = tf.constant(rng.integers(2, 14, size=EXAMPLES), tf.int32)

    def cache(self, key: str = "static"):
        """The example's index under `key`: "static" (tiled with the beam: one
        per row) or "per_example" (one per example: rows map to it by position)."""
        return {"hash": tf.zeros([EXAMPLES], tf.int32),
                key: {"example": tf.range(EXAMPLES, dtype=tf.int32)}}

    def __call__(self, ids, step, cache):
        hashed = tf.where(step > 0, (cache["hash"] * 31 + ids * 7 + 3) % ROWS, 0)  # [rows]
        if "static" in cache:
            example = cache["static"]["example"]  # [rows]
        else:  # rows = examples x beam, the beam inner
            examples = cache["per_example"]["example"]  # [examples]
            beam = tf.shape(ids)[0] // tf.shape(examples)[0]
            example = tf.repeat(examples, beam)  # [rows]
        logits = tf.gather_nd(self.tables, tf.stack([example, hashed], 1))
        return logits, {**cache, "hash": hashed}


def run(beam_size, alpha, penalty, cache_key="static", **kwargs):
    """ids int32 [EXAMPLES, beam, T] and scores [EXAMPLES, beam] of one setting."""
    from t2t_lite.decode.beam_search import beam_search
    model = RandomTableModel()
    return beam_search(model, tf.zeros([EXAMPLES], tf.int32), beam_size, model.max_lengths,
                       VOCAB, alpha, EOS, model.cache(cache_key), length_penalty=penalty,
                       **kwargs)


def main() -> None:
    pins = []
    for beam_size, alpha, penalty in SETTINGS:
        ids, scores = run(beam_size, alpha, penalty)
        pins.append({"beam_size": beam_size, "alpha": alpha, "length_penalty": penalty,
                     "ids": ids.numpy().tolist(), "scores": scores.numpy().tolist()})
    with open(PINS, "w") as f:
        json.dump(pins, f)
    print(f"wrote {PINS}", file=sys.stderr)


if __name__ == "__main__":
    main()
