"""The batcher alone (no HTTP, no TensorFlow): which sentences share a batch, and
that every future gets its own sentence's result or its own error."""

import time

import pytest

from t2t_lite.serve.batcher import (BatchFailed, Batcher, DeadlineExceeded, QueueFull,
                                    ShuttingDown)


class Recorder:
    """translate(): records each batch (as the texts' numbers) and upper-cases them."""

    def __init__(self, fail_on=None):
        self.batches, self.fail_on = [], fail_on

    def __call__(self, texts):
        self.batches.append(list(texts))
        if self.fail_on in texts:
            raise ValueError(f"cannot translate {self.fail_on}")
        return [t.upper() for t in texts]


def run_all(lengths, max_sentences, max_tokens, fail_on=None):
    """Queues texts "s0", "s1", ... with `lengths` before the one worker starts."""
    recorder = Recorder(fail_on)
    batcher = Batcher(recorder, max_sentences, max_tokens, timeout_s=0, workers=1)
    texts = [f"s{i}" for i in range(len(lengths))]
    futures = batcher.submit(texts, lengths)
    batcher.start()
    concurrent_wait(futures)
    batcher.stop()
    return recorder.batches, futures


def concurrent_wait(futures):
    for future in futures:
        future.exception(timeout=30)


@pytest.mark.parametrize("lengths, max_sentences, max_tokens, batches", [
    # the oldest, then the nearest lengths (ties: arrival order)
    ([5, 9, 6, 20, 4, 5, 8], 3, 1000, [["s0", "s5", "s2"], ["s1", "s6", "s4"], ["s3"]]),
    # rows x longest row within max_tokens: 4 x 5 = 20 fits, 5 x 5 does not
    ([5, 5, 5, 5, 5], 8, 20, [["s0", "s1", "s2", "s3"], ["s4"]]),
    # a sentence longer than max_tokens goes alone; the short ones still fit together
    ([30, 2, 3], 8, 20, [["s0"], ["s1", "s2"]]),
    # a long one is left out of a batch it would make too big, not the others
    ([4, 12, 4, 4], 8, 16, [["s0", "s2", "s3"], ["s1"]]),
])
def test_batches(lengths, max_sentences, max_tokens, batches):
    got, futures = run_all(lengths, max_sentences, max_tokens)
    assert got == batches
    assert [f.result() for f in futures] == [f"S{i}" for i in range(len(lengths))]


def test_a_failing_sentence_fails_alone():
    got, futures = run_all([3, 3, 3], 3, 100, fail_on="s1")
    assert got == [["s0", "s1", "s2"], ["s0"], ["s1"], ["s2"]]  # the batch, then one by one
    assert [futures[0].result(), futures[2].result()] == ["S0", "S2"]
    with pytest.raises(BatchFailed, match="ValueError: cannot translate s1"):
        futures[1].result()


def test_cancelled_and_expired_sentences_are_not_translated():
    recorder = Recorder()
    batcher = Batcher(recorder, 8, 1000, timeout_s=0)
    kept = batcher.submit(["a", "b"], [1, 1])
    cancelled = batcher.submit(["c"], [1])
    expired = batcher.submit(["d"], [1], deadline=time.monotonic() - 1)
    assert batcher.cancel(cancelled) == 1 and batcher.depth() == 3
    batcher.start()
    concurrent_wait(kept + expired)
    batcher.stop()
    assert recorder.batches == [["a", "b"]]
    assert cancelled[0].cancelled()
    assert isinstance(expired[0].exception(), DeadlineExceeded)


def test_queue_limit_is_all_or_nothing_and_stop_fails_the_rest():
    batcher = Batcher(Recorder(), 8, 1000, timeout_s=0, max_queue=3)
    queued = batcher.submit(["a", "b"], [1, 1])
    with pytest.raises(QueueFull, match="the queue holds 2 sentences; 2 more would pass its 3"):
        batcher.submit(["c", "d"], [1, 1])
    assert batcher.depth() == 2
    batcher.stop()  # never started: what is queued fails
    assert all(isinstance(f.exception(), ShuttingDown) for f in queued)
    with pytest.raises(ShuttingDown):
        batcher.submit(["e"], [1])


def test_waits_for_a_fuller_batch_at_most_the_timeout():
    recorder = Recorder()
    batcher = Batcher(recorder, 2, 1000, timeout_s=0.05, workers=1)
    batcher.start()
    start = time.monotonic()
    first = batcher.submit(["a"], [1])
    first[0].result(timeout=30)
    waited = time.monotonic() - start
    full = batcher.submit(["b", "c"], [1, 1])  # a full batch goes at once
    concurrent_wait(full)
    batcher.stop()
    assert recorder.batches == [["a"], ["b", "c"]]
    assert 0.05 <= waited < 5


def test_sentences_of_different_translates_never_share_a_batch():
    """Two model versions queued at once (t2t-server --watch): each sentence goes to the
    translate it was submitted with, in batches of that translate alone."""
    old, new = Recorder(), Recorder()
    batcher = Batcher(old, 8, 1000, timeout_s=0, workers=1)
    futures = (batcher.submit(["s0", "s1"], [3, 3]) + batcher.submit(["n0"], [3], translate=new)
               + batcher.submit(["s2"], [3], translate=old) + batcher.submit(["n1"], [3], None, new))
    batcher.start()
    concurrent_wait(futures)
    batcher.stop()
    assert old.batches == [["s0", "s1", "s2"]] and new.batches == [["n0", "n1"]]
    assert [f.result() for f in futures] == ["S0", "S1", "N0", "S2", "N1"]
