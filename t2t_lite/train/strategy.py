"""Choosing the `tf.distribute` strategy: one device, several GPUs, several machines."""

import json
import os
import re

import tensorflow as tf

from t2t_lite.errors import T2TError

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")


def _cluster_in_tf_config() -> bool:
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        return False
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise T2TError(f"TF_CONFIG is not valid JSON: {e}") from None
    cluster = config.get("cluster", {})
    return sum(len(v) for v in cluster.values()) > 1


def make_strategy(name: str = "auto") -> tf.distribute.Strategy:
    """Returns the strategy for `name`.

    "auto": MultiWorkerMirroredStrategy when TF_CONFIG names a cluster of more
    than one task, MirroredStrategy when several GPUs are visible, otherwise
    the default one-device strategy. Call before any TensorFlow op runs
    (MultiWorkerMirroredStrategy must be created first).
    """
    if name not in STRATEGIES:
        raise T2TError(f"Unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")
    if name == "auto":
        if _cluster_in_tf_config():
            name = "multi_worker"
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            name = "mirrored"
        else:
            name = "one_device"
    if name == "multi_worker":
        if not _cluster_in_tf_config():
            raise T2TError("--strategy=multi_worker needs TF_CONFIG describing a cluster.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    # The default strategy places everything on the first device (GPU if any)
    # and, unlike OneDeviceStrategy, keeps plain checkpointable tf.data iterators.
    return tf.distribute.get_strategy()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this worker writes summaries and the real checkpoints."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0 and
        "chief" not in resolver.cluster_spec().as_dict())


# A task as TensorFlow names it in a collective's error: /job:worker/replica:0/task:1
_TASK = re.compile(r"/job:\w+/replica:\d+/task:\d+")
# What a collective raises when a peer is gone: the health check's abort
# (UnavailableError), a timed-out or cancelled collective.
LOST_PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                    tf.errors.AbortedError, tf.errors.CancelledError)


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def lost_workers(error: tf.errors.OpError) -> str:
    """The workers a collective's error names as gone, or its first line."""
    tasks = sorted(set(_TASK.findall(error.message)))
    if tasks:
        return ", ".join(tasks) + " stopped responding"
    lines = error.message.strip().splitlines()
    return lines[0] if lines else type(error).__name__
