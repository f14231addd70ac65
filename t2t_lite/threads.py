"""CPU cores and TensorFlow's thread pools, for programs that choose how to use them.

A decoding step of a small model is a few hundred tiny TensorFlow ops: their
launch and the hand-off between threads, not their arithmetic, bound it. On
such work one intra-op thread per op is faster than splitting each op over
every core, and the cores are better used by running several batches at once
(CTranslate2's `inter_threads` and `intra_threads` split the cores the same
way). TensorFlow fixes its pools when it starts, so a program sets them
before its first op (`use_intra_op_threads`).
"""

import os


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def use_intra_op_threads(threads: int) -> bool:
    """Asks TensorFlow for `threads` threads per op; True if it took effect.

    False, changing nothing, where TensorFlow has already started in this
    process (a library caller or a test that ran ops before): its pools are
    fixed then, and the program runs with them.
    """
    import tensorflow as tf
    from tensorflow.python.eager import context

    if context.context()._context_handle is not None:  # pylint: disable=protected-access
        return tf.config.threading.get_intra_op_parallelism_threads() == threads
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    return True
