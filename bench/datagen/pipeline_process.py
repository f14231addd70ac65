"""The training pipeline's examples/s on datagen's train shards, in its own process
(so that its memory is not datagen's)."""

import argparse
import json
import subprocess
import sys
from typing import Dict

from .code_tree import CHECK_ORIGIN, child_env
from .corpus import PROBLEM

# The child: make_dataset with the code of the tree given as its first argument.
PIPELINE = CHECK_ORIGIN.format(modules=["t2t_lite.data.pipeline"]) + """
import json, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from t2t_lite.data.pipeline import make_dataset
data_dir, problem, batch_size, max_length, warmup, batches = sys.argv[2:8]
start = time.perf_counter()
iterator = iter(make_dataset(data_dir, problem, "train", int(batch_size), int(max_length),
                             training=True, seed=1))
for _ in range(int(warmup)):
    next(iterator)
warm = time.perf_counter()
examples = tokens = 0
for _ in range(int(batches)):
    batch = next(iterator)
    examples += int(batch["targets"].shape[0])
    tokens += int((batch["targets"].numpy() != 0).sum())
end = time.perf_counter()
print(json.dumps({"examples_per_s": examples / (end - warm), "target_tokens_per_s":
                  tokens / (end - warm), "examples": examples, "batches": int(batches),
                  "warmup_batches": int(warmup), "warmup_s": warm - start,
                  "timed_s": end - warm}))
"""


def run_pipeline(code_root: str, data_dir: str, args: argparse.Namespace) -> Dict:
    """The training pipeline's examples/s on the train shards, in its own process."""
    command = [sys.executable, "-c", PIPELINE, code_root, data_dir, PROBLEM,
               str(args.batch_size), str(args.max_length), str(args.pipeline_warmup),
               str(args.pipeline_batches)]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(code_root),
                          cwd=data_dir)
    if done.returncode:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    return json.loads(done.stdout.strip().splitlines()[-1])
