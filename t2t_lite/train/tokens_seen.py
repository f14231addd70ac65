"""What a run has trained on, counted in tokens and kept in its checkpoints.

Published results state a training budget as updates x tokens per update
(fairseq's `--max-tokens`, t2t's `batch_size`), not wall-clock time. The
trainer adds three counts per optimizer step (all replicas, all accumulated
micro-batches) to one int64 variable saved with every checkpoint, so a
resumed run keeps counting:

  padded:          rows x max(source length, target length) of each padded
                   batch: the unit `batch_size` bounds (fairseq's --max-tokens);
  padded_targets:  rows x target length of each padded batch;
  targets:         real (non-padding) target tokens, EOS included: what the
                   loss is averaged over.

A run resumed from a checkpoint written before t2t-lite counted tokens counts
from that checkpoint's step on, and keeps that step beside the counts
(`from_step`), so later checkpoints and resumes say what the counts cover.

`read(checkpoint_prefix)` gives them for any checkpoint (None for one written
before t2t-lite counted them).
"""

from typing import Dict, Optional

import tensorflow as tf

NAMES = ("padded", "padded_targets", "targets")
CHECKPOINT_KEY = "tokens_seen"
START_STEP_KEY = "tokens_seen_from_step"


def batch_counts(batch: Dict[str, tf.Tensor], real_targets: tf.Tensor) -> tf.Tensor:
    """[3] int64: the counts of one micro-batch ({"inputs": [B, S], "targets": [B, T]},
    padded with id 0), given its real target tokens (the loss' token count)."""
    rows = tf.cast(tf.shape(batch["targets"])[0], tf.int64)
    target_len = tf.cast(tf.shape(batch["targets"])[1], tf.int64)
    longest = target_len
    if "inputs" in batch:
        longest = tf.maximum(longest, tf.cast(tf.shape(batch["inputs"])[1], tf.int64))
    return tf.stack([rows * longest, rows * target_len,
                     tf.cast(tf.round(real_targets), tf.int64)])


def new_counter() -> tf.Variable:
    return tf.Variable(tf.zeros([len(NAMES)], tf.int64), trainable=False, name=CHECKPOINT_KEY)


def new_start_step() -> tf.Variable:
    return tf.Variable(tf.constant(0, tf.int64), trainable=False, name=START_STEP_KEY)


def read(checkpoint_prefix: str) -> Optional[Dict[str, int]]:
    """The counts saved in a checkpoint and the step they start at ("from_step": 0
    unless counting began on resuming an older checkpoint); None if it has none."""
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    key = f"{CHECKPOINT_KEY}/.ATTRIBUTES/VARIABLE_VALUE"
    if not reader.has_tensor(key):
        return None
    counts = dict(zip(NAMES, (int(v) for v in reader.get_tensor(key))))
    start_key = f"{START_STEP_KEY}/.ATTRIBUTES/VARIABLE_VALUE"
    counts["from_step"] = int(reader.get_tensor(start_key)) if reader.has_tensor(start_key) else 0
    return counts


def describe(counts: Dict[str, int]) -> str:
    """'65,536,000 padded tokens (batch_size's unit), 49,000,000 padded / 41,000,000 real
    target tokens' (+ ' since step N' when counting began at step N > 0)."""
    since = f" since step {counts['from_step']}" if counts.get("from_step") else ""
    return (f"{counts['padded']:,} padded tokens (batch_size's unit), "
            f"{counts['padded_targets']:,} padded / {counts['targets']:,} real target "
            f"tokens{since}")
