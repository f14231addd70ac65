"""Text pairs -> serialized `tf.train.Example` records, batches spread over threads.

Each record holds int64-list features "inputs" (source ids) and "targets"
(target ids), each ending with EOS. A batch is tokenized by the vocabulary
(tensorflow-text) and serialized (`tf.io.encode_proto`) in one graph call,
which releases the GIL, so `threads` threads encode batches side by side; the
batches come back in their input order, so the records are the same whatever
the number of threads.
"""

import collections
import concurrent.futures
import functools
from typing import Iterable, Iterator, List, Optional, Sequence

import tensorflow as tf

from t2t_lite.data.problem import Pair
from t2t_lite.data.split_writer import Encoded, Encoder
from t2t_lite.data.subword_sampling import sampled_ids
from t2t_lite.errors import T2TError
from t2t_lite.threads import usable_cores

BATCH = 2048


def _encoded(message_type: str, fields: Sequence[str], values: Sequence[tf.Tensor],
             counts: Sequence[tf.Tensor]) -> tf.Tensor:
    """[N] serialized `message_type` protos; field i of row r holds values[i][r, :counts[i][r]]."""
    sizes = tf.stack([tf.cast(c, tf.int32) for c in counts], axis=1)           # [N, fields]
    return tf.io.encode_proto(sizes=sizes, values=list(values), field_names=list(fields),
                              message_type=message_type)


def _feature_entries(key: str, ids: tf.RaggedTensor) -> tf.Tensor:
    """[N, (T)] ids -> [N] serialized `Features.FeatureEntry` {key: Feature(int64_list=ids)}."""
    rows = tf.shape(ids.row_splits)[0] - 1
    one = tf.ones([rows], tf.int32)
    lists = _encoded("tensorflow.Int64List", ["value"], [tf.cast(ids.to_tensor(), tf.int64)],
                     [ids.row_lengths()])                                       # [N]
    features = _encoded("tensorflow.Feature", ["int64_list"], [lists[:, None]], [one])
    return _encoded("tensorflow.Features.FeatureEntry", ["key", "value"],
                    [tf.fill([rows, 1], key), features[:, None]], [one, one])


def serialized_examples(inputs: tf.RaggedTensor, targets: tf.RaggedTensor) -> tf.Tensor:
    """Source ids [N, (S)] and target ids [N, (T)] -> [N] serialized `tf.train.Example`s
    with int64-list features "inputs" and "targets", in graph (`tf.io.encode_proto`, one
    op per message level for the whole batch, outside the GIL).

    The bytes are those of protobuf's deterministic serialization (a test checks
    them): the map's entries in key order, ids packed. Deterministic bytes matter:
    the default order of map entries can differ between processes, and a split
    resumed in another process must have the bytes of one written in one go.
    """
    rows = tf.shape(inputs.row_splits)[0] - 1
    entries = tf.stack([_feature_entries("inputs", inputs),
                        _feature_entries("targets", targets)], axis=1)          # [N, 2]
    features = _encoded("tensorflow.Features", ["feature"], [entries], [tf.fill([rows], 2)])
    return _encoded("tensorflow.Example", ["features"], [features[:, None]],
                    [tf.ones([rows], tf.int32)])                                # [N]


@functools.lru_cache(maxsize=8)
def _serializer(vocab):
    """`vocab`'s strings -> records function, compiled once per vocabulary."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2, autograph=False)
    def serialize(sources, targets):
        inputs, outputs = vocab.encode_sources(sources), vocab.encode(targets)  # [N, (S)], [N, (T)]
        return (serialized_examples(inputs, outputs), inputs.row_lengths(),
                outputs.row_lengths())

    return serialize


def checked_pairs(vocab, pairs: Iterable[Pair], where: str,
                  batch: int = BATCH) -> Iterator[Pair]:
    """`pairs`, their sources checked `batch` at a time by the vocabulary's `check_inputs`
    where it has language tokens (a multilingual Marian model: each line starts with one
    of them), so a refused line stops datagen in one line naming `where` and the
    pair's number (from 1) and text, never encoded as another language.

    Raises:
      T2TError: "`where`: <the vocabulary's message> Refused pair N: '...'".
    """
    if not vocab.language_tokens:  # nothing to check: the pairs as they come
        yield from pairs
        return
    part: List[Pair] = []
    first = 1
    for pair in pairs:
        part.append(pair)
        if len(part) == batch:
            _check(vocab, part, first, where)
            yield from part
            first, part = first + len(part), []
    _check(vocab, part, first, where)
    yield from part


def _check(vocab, part: Sequence[Pair], first: int, where: str) -> None:
    try:
        vocab.check_inputs([source for source, _ in part], first_line=first, unit="pair")
    except T2TError as e:
        raise T2TError(f"{where}: {e}") from None


def encode_batch(vocab, pairs: Sequence[Pair]) -> List[Encoded]:
    """Encodes `pairs` with `vocab` (a `Vocabulary`: sources by `encode_sources`, targets
    by `encode`); returns (record, source length, target length) per pair, in order:
    tokenizing and serializing run in one graph call for the batch (`serialized_examples`)."""
    records, source_lengths, target_lengths = _serializer(vocab)(
        tf.constant([s for s, _ in pairs], tf.string), tf.constant([t for _, t in pairs], tf.string))
    return list(zip(records.numpy().tolist(), source_lengths.numpy().tolist(),
                    target_lengths.numpy().tolist()))


def encode_sampled_batch(vocab, pairs: Sequence[Pair], sampling) -> List[Encoded]:
    """`encode_batch` with subword sampling: `sampling.copies` records per pair, each
    side segmented by its own draw (`subword_sampling`), pair-major."""
    sources, targets = sampled_ids(vocab, pairs, sampling)
    if not sources:
        return []
    records = serialized_examples(tf.ragged.constant(sources, dtype=tf.int64, ragged_rank=1),
                                  tf.ragged.constant(targets, dtype=tf.int64, ragged_rank=1))
    return list(zip(records.numpy().tolist(), map(len, sources), map(len, targets)))


def make_encoder(vocab, threads: Optional[int] = None, sampling=None) -> Encoder:
    """An `Encoder` that encodes batches of `BATCH` pairs on `threads` threads
    (default: one per usable core), yielding each batch's records in input order.

    With `sampling` (a `SubwordSampling` with copies > 0) each pair gives
    `sampling.copies` records (the encoder's `records_per_pair`), segmented by sampling.
    """
    threads = threads or usable_cores()
    batch = BATCH
    encode_one, records_per_pair = encode_batch, 1
    if sampling is not None and sampling.enabled:
        encode_one = functools.partial(encode_sampled_batch, sampling=sampling)
        records_per_pair = sampling.copies
        batch = max(1, BATCH // records_per_pair)

    def encode(pairs: Sequence[Pair]) -> Iterator[List[Encoded]]:
        batches = [pairs[i:i + batch] for i in range(0, len(pairs), batch)]
        if threads == 1:
            for part in batches:
                yield encode_one(vocab, part)
            return
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            pending: collections.deque = collections.deque()
            for part in batches:
                pending.append(pool.submit(encode_one, vocab, part))
                if len(pending) > 2 * threads:  # bounded: a few batches ahead
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    encode.records_per_pair = records_per_pair
    return encode
