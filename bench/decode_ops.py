"""Counts the TensorFlow ops that one decoding step runs (the search loop's body).

    python bench/decode_ops.py --hparams_set=transformer_base

Traces `Search.compiled` on a model with random weights and counts the nodes
of the `tf.while_loop` body, nested functions included, leaving out Const,
Identity and NoOp (no work). Where the body holds a compacting `tf.cond`
(finished sentences leave the batch), the branch counted is the one most steps
take: nobody left. Each op costs a kernel launch on the CPU, so at small batch
sizes this number, not the FLOPs, bounds the speed (CTranslate2 runs about 70
kernels a step for a 6-layer decoder).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import t2t_lite  # noqa: E402
from t2t_lite import registry  # noqa: E402
from t2t_lite.decode.search import Search, SearchParams  # noqa: E402
from t2t_lite.decode.search_graph import loop_body_nodes  # noqa: E402

FREE_OPS = ("Const", "Identity", "NoOp")


def ops_per_step(search: Search) -> int:
    """Non-trivial ops in the search loop's body (see the module docstring)."""
    return sum(node.op not in FREE_OPS
               for _, node in loop_body_nodes(search, branches=("else_branch", "f")))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hparams_set", default="transformer_base")
    p.add_argument("--vocab_size", type=int, default=32000)
    args = p.parse_args()
    hparams = registry.hparams(args.hparams_set)
    tf.keras.utils.set_random_seed(0)
    model = t2t_lite.build_model(hparams, args.vocab_size)
    print(f"{args.hparams_set} ({hparams.decoder_layers} decoder layers): ops per decoding step")
    for beam in (1, 4):
        for compact in (False, True):
            search = Search(model, SearchParams(beam_size=beam), compact=compact)
            print(f"  beam {beam}, finished sentences {'leave' if compact else 'stay':<5}: "
                  f"{ops_per_step(search)}")


if __name__ == "__main__":
    main()
