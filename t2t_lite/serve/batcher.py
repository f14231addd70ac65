"""Dynamic batching: sentences of concurrent requests share batches, never results.

    batcher = Batcher(engine.translate, max_sentences=32, max_tokens=4096,
                      timeout_s=0.01, workers=2)
    batcher.start()
    futures = batcher.submit(["a sentence", ...], [5, ...], deadline)  # one Future each
    ...
    batcher.flush()  # shutting down: no more waiting for fuller batches
    batcher.stop()

Every sentence waits in one queue with its own `concurrent.futures.Future`. A
worker thread takes the oldest sentence and the queued sentences of the
nearest lengths (less padding, earlier stops), up to `max_sentences` rows and
`max_tokens` (rows x longest row), once the batch is full or the oldest has
waited `timeout_s`; then it translates them and sets each sentence's future
with that sentence's own result. A request larger than a batch simply has its
sentences in several batches; the caller reassembles its futures in order.

Sentences may be submitted with a `translate` of their own (a server that
switched to a new model version queues new requests for the new one while
the old one's queued sentences still go to the old one): sentences of
different `translate`s never share a batch.

A cancelled future (its client went away) is skipped, a sentence whose
deadline passed in the queue fails with `DeadlineExceeded`, and a batch whose
translation raises is translated again one sentence at a time, so a sentence
that cannot be translated fails alone (`BatchFailed`) and the others of its
batch still get their results. Nothing here knows HTTP or TensorFlow.
"""

import concurrent.futures
import dataclasses
import logging
import threading
import time
from typing import Any, Callable, List, Optional, Sequence

LOG = logging.getLogger("t2t_lite.serve")


class QueueFull(Exception):
    """The queue cannot take a request's sentences now."""


class ShuttingDown(Exception):
    """The batcher has stopped: it takes nothing new and dropped what was left."""


class DeadlineExceeded(Exception):
    """A sentence's deadline passed before a batch took it."""


class BatchFailed(Exception):
    """Translating a sentence raised (alone, after its batch raised)."""


@dataclasses.dataclass(eq=False)
class _Item:
    text: str
    length: int                         # subwords, EOS included (what padding costs)
    future: concurrent.futures.Future
    enqueued: float                     # time.monotonic()
    deadline: Optional[float]           # time.monotonic(), or None
    translate: Callable                 # texts -> results (equal ones may share a batch)


class Observer:
    """What a batcher reports (no-ops; `t2t_lite.serve.metrics` records them)."""

    def queue_depth(self, sentences: int) -> None: ...
    def batch(self, sentences: int, tokens: int, compute_s: float) -> None: ...
    def queue_wait(self, seconds: float) -> None: ...
    def dropped(self, reason: str, sentences: int) -> None: ...


class Batcher:
    """One queue of sentences and `workers` threads translating batches of them.

    Args:
      translate: texts -> one result per text, in order (called on a worker thread): the
        default of `submit`, an attribute a server replaces when it switches versions.
      max_sentences: rows per batch.
      max_tokens: rows x longest row per batch (a longer sentence goes alone).
      timeout_s: how long the oldest sentence waits for a fuller batch.
      workers: batches translated at once.
      max_queue: queued sentences beyond which `submit` raises `QueueFull`.
      observer: told of queue depth, batches, waits and dropped sentences.
    """

    def __init__(self, translate: Callable[[List[str]], Sequence[Any]], max_sentences: int,
                 max_tokens: int, timeout_s: float, workers: int = 1, max_queue: int = 4096,
                 observer: Optional[Observer] = None):
        self.translate = translate
        self.max_sentences = max_sentences
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_queue = max_queue
        self.observer = observer or Observer()
        self._pending: List[_Item] = []  # arrival order
        self._flushing = False            # batches go without waiting (shutting down)
        self._stopped = False             # no new sentences; the workers exit
        self._cond = threading.Condition()
        self._threads = [threading.Thread(target=self._work, name=f"t2t-batch-{i}", daemon=True)
                         for i in range(workers)]

    def start(self) -> None:
        """Starts the worker threads."""
        for thread in self._threads:
            thread.start()

    def depth(self) -> int:
        """Sentences waiting in the queue."""
        with self._cond:
            return len(self._pending)

    def submit(self, texts: Sequence[str], lengths: Sequence[int],
               deadline: Optional[float] = None,
               translate: Optional[Callable[[List[str]], Sequence[Any]]] = None,
               ) -> List[concurrent.futures.Future]:
        """Queues `texts` (all or none); returns one future per text, in order.

        Args:
          lengths: each text's length in subwords (batches are grouped by it).
          deadline: a `time.monotonic()` after which a still queued text fails
            with `DeadlineExceeded`.
          translate: what translates these texts (default: the batcher's); they
            share batches only with texts of an equal `translate`.
        Raises:
          QueueFull: the queue has no room for all of them.
          ShuttingDown: the batcher is draining or stopped.
        """
        now = time.monotonic()
        translate = translate or self.translate
        items = [_Item(t, max(1, int(n)), concurrent.futures.Future(), now, deadline, translate)
                 for t, n in zip(texts, lengths)]
        with self._cond:
            if self._stopped:
                raise ShuttingDown("the server is shutting down")
            if len(self._pending) + len(items) > self.max_queue:
                raise QueueFull(f"the queue holds {len(self._pending)} sentences; "
                                f"{len(items)} more would pass its {self.max_queue}")
            self._pending.extend(items)
            self.observer.queue_depth(len(self._pending))
            self._cond.notify_all()
        return [item.future for item in items]

    def cancel(self, futures: Sequence[concurrent.futures.Future]) -> int:
        """Cancels the still queued ones of `futures` (their client is gone);
        returns how many were removed from the queue."""
        targets = set(map(id, futures))
        with self._cond:
            gone = [i for i in self._pending if id(i.future) in targets and i.future.cancel()]
            if gone:
                removed = set(map(id, gone))
                self._pending = [i for i in self._pending if id(i) not in removed]
                self.observer.queue_depth(len(self._pending))
        if gone:
            self.observer.dropped("cancelled", len(gone))
        return len(gone)

    def flush(self) -> None:
        """From now on queued sentences go into batches at once, without waiting
        for fuller ones (a server shutting down answers what it received)."""
        with self._cond:
            self._flushing = True
            self._cond.notify_all()

    def stop(self, join_timeout_s: float = 5.0) -> None:
        """Fails what is still queued with `ShuttingDown` and stops the workers
        (a batch being translated finishes first, up to `join_timeout_s`)."""
        with self._cond:
            self._stopped = True
            left, self._pending = self._pending, []
            self.observer.queue_depth(0)
            self._cond.notify_all()
        for item in left:
            if item.future.set_running_or_notify_cancel():
                item.future.set_exception(ShuttingDown("the server stopped before translating it"))
        if left:
            self.observer.dropped("shutdown", len(left))
        for thread in self._threads:
            if thread.is_alive():
                thread.join(join_timeout_s)

    # -- The workers --------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                batch = self._next_batch()
                if batch is None:
                    return
            self._run(batch)
            # Not kept while waiting for the next one: its items hold their `translate`,
            # and so the engine of a version the server switched away from.
            del batch

    def _next_batch(self) -> Optional[List[_Item]]:
        """Waits (holding the condition) for a due batch; None once stopped."""
        while not self._stopped:
            self._expire(time.monotonic())
            if self._pending:
                batch, full = self._choose()
                wait = self._pending[0].enqueued + self.timeout_s - time.monotonic()
                if full or wait <= 0 or self._flushing:
                    chosen = set(map(id, batch))
                    self._pending = [i for i in self._pending if id(i) not in chosen]
                    self.observer.queue_depth(len(self._pending))
                    return batch
                # Not kept while waiting: another worker may take these sentences, and
                # their `translate` holds the engine of a version switched away from.
                del batch
                self._cond.wait(wait)
            else:
                self._cond.wait()
        return None

    def _choose(self):
        """(the oldest sentence and the queued ones of its `translate` nearest its
        length within the limits, whether the batch is full: no room left, or a
        sentence left out)."""
        anchor = self._pending[0]
        others = sorted((i for i in self._pending[1:] if i.translate == anchor.translate),
                        key=lambda i: abs(i.length - anchor.length))
        batch, longest, full = [anchor], anchor.length, False
        for item in others:
            if len(batch) == self.max_sentences:
                return batch, True
            if max(longest, item.length) * (len(batch) + 1) > self.max_tokens:
                full = True
                continue
            batch.append(item)
            longest = max(longest, item.length)
        return batch, full or len(batch) == self.max_sentences

    def _expire(self, now: float) -> None:
        expired = [i for i in self._pending if i.deadline is not None and i.deadline <= now]
        if not expired:
            return
        gone = set(map(id, expired))
        self._pending = [i for i in self._pending if id(i) not in gone]
        self.observer.queue_depth(len(self._pending))
        for item in expired:
            if item.future.set_running_or_notify_cancel():
                item.future.set_exception(DeadlineExceeded("the deadline passed in the queue"))
        self.observer.dropped("deadline", len(expired))

    def _run(self, batch: List[_Item]) -> None:
        """Translates `batch` (its cancelled sentences left out) and sets each future."""
        batch = [i for i in batch if i.future.set_running_or_notify_cancel()]
        if not batch:
            return
        start = time.monotonic()
        for item in batch:
            self.observer.queue_wait(start - item.enqueued)
        try:
            results = self._translate(batch[0].translate, [i.text for i in batch])
        except Exception:  # pylint: disable=broad-except
            LOG.exception("a batch of %d sentences failed; translating them one by one",
                          len(batch))
            results = None
        self.observer.batch(len(batch), len(batch) * max(i.length for i in batch),
                            time.monotonic() - start)
        if results is not None:
            for item, result in zip(batch, results):
                item.future.set_result(result)
            return
        for item in batch:  # alone, a sentence that cannot be translated fails by itself
            try:
                item.future.set_result(self._translate(item.translate, [item.text])[0])
            except Exception as e:  # pylint: disable=broad-except
                LOG.exception("translating one sentence failed")
                item.future.set_exception(BatchFailed(f"{type(e).__name__}: {e}"))
                self.observer.dropped("failed", 1)

    @staticmethod
    def _translate(translate: Callable, texts: List[str]) -> Sequence[Any]:
        results = translate(texts)
        if len(results) != len(texts):
            raise RuntimeError(f"translate returned {len(results)} results for "
                               f"{len(texts)} texts")
        return results
