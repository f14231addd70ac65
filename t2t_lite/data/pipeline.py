"""The tf.data input pipeline: encoded TFRecord shards -> length-bucketed batches.

Reads what datagen wrote (names and ids as defined in `t2t_lite.data.layout`):
shards `{data_dir}/{problem}-{split}-{i:05d}-of-{n:05d}`, each record a
`tf.train.Example` with int64-list features "inputs" and "targets" (subword
ids, each ending with EOS=1; PAD=0), and yields dicts::

    {"inputs": int32 [B, S], "targets": int32 [B, T]}   # zero-padded

with B * S <= batch_size and B * T <= batch_size (tokens per replica, padding
included; see `t2t_lite.data.bucketing` for the bucket rule), except for the
evaluation-only case of one example longer than batch_size.

The path, in order: list the shards -> (shard by `input_context`) -> shuffle the
shard order (training) -> read shards in parallel (interleave) -> parse ->
drop examples longer than `max_length` (training) -> shuffle examples with a
seed (training) -> repeat -> group by length bucket -> padded batch -> prefetch.
Everything is a native tf.data op (no `py_function`, no `from_generator`), so
an iterator over the result is saved and restored exactly by
`tf.train.Checkpoint(iterator=it)`, shuffle buffer included.

Training on several sources (`sources`: corpora with weights,
`t2t_lite.data.mixing`): each source is a stream of its own along the path
above up to `repeat` (its shards, sharded by `input_context` by the same rule,
read, filtered, shuffled, repeated), and
`tf.data.Dataset.sample_from_datasets` draws each example from stream i with
probability weights[i] (seeded, also native and checkpointed), before
bucketing. The shuffle buffer is split in proportion to the weights (at least
2 each): stream i is drawn from weights[i] as often as one stream would be, so
its buffer of weights[i] * shuffle_buffer examples turns over in as many steps
as the whole buffer of a single stream, and the examples held stay
shuffle_buffer in all. (The train shards are shuffled when written, so a
small buffer of a rarely drawn corpus still samples the whole corpus.)

Dropped examples are not counted inside the pipeline: a counter in a `filter`
would be a stateful side effect, outside the iterator's checkpoint and
repeated every epoch. `count_lengths` counts them in one separate pass over a
split instead (the trainer logs it once).
"""

import dataclasses
import os
import math
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

import tensorflow as tf

from t2t_lite.data.bucketing import bucket_batch_sizes, bucket_boundaries, eval_bucket_boundaries
from t2t_lite.data.layout import PAD_ID, check_split, parse_shard_name, shard_glob
from t2t_lite.errors import T2TError

if TYPE_CHECKING:
    from t2t_lite.data.mixing import TrainSource

FEATURES = ("inputs", "targets")

_FEATURE_SPEC = {name: tf.io.RaggedFeature(tf.int64) for name in FEATURES}


def shard_pattern(data_dir: str, problem_name: str, split: str) -> str:
    """The glob of a split's shards, as shown to users in errors."""
    return os.path.join(data_dir, shard_glob(problem_name, split))


def shard_files(data_dir: str, problem_name: str, split: str) -> List[str]:
    """Sorted paths of all shards of a split.

    Only complete names match (datagen's temporary files do not), and all
    `n` shards of the set must be present.

    Raises:
      T2TError: unknown split, no shards, mixed shard counts or missing shards.
    """
    check_split(split)
    pattern = shard_pattern(data_dir, problem_name, split)
    matches = {}
    for path in tf.io.gfile.glob(pattern):
        found = parse_shard_name(os.path.basename(path), problem_name, split)
        if found:
            matches[path] = found  # (index, total)
    if not matches:
        raise T2TError(f"No {split} data for problem {problem_name!r} in {data_dir!r}: "
                       f"expected files {pattern} (run t2t-datagen --problem={problem_name} "
                       f"--data_dir={data_dir}).")
    totals = {n for _, n in matches.values()}
    if len(totals) > 1:
        raise T2TError(f"Mixed shard sets {sorted(totals)} for {pattern}: "
                       "remove the stale ones or re-run t2t-datagen.")
    total = totals.pop()
    present = {i for i, _ in matches.values()}
    missing = sorted(set(range(total)) - present)
    if missing or len(present) != total:
        raise T2TError(f"Incomplete data: {len(present & set(range(total)))} of {total} shards "
                       f"of {pattern} present (missing index {missing[:5]}); re-run t2t-datagen.")
    return sorted(matches)


def _parse(record: tf.Tensor) -> Dict[str, tf.Tensor]:
    """Serialized Example -> {"inputs": int32 [S], "targets": int32 [T]}."""
    parsed = tf.io.parse_single_example(record, _FEATURE_SPEC)
    return {name: tf.cast(parsed[name], tf.int32) for name in FEATURES}


def without_autotune_thread() -> tf.data.Options:
    """Options that turn off tf.data's autotuning model (`autotune.enabled`).

    With it on, every iterator runs a thread that re-tunes the pipeline at a
    period that doubles up to a minute, and deleting the iterator waits for
    that thread's next wake-up (TensorFlow 2.21: the deleting thread sits in
    RootDataset::Iterator's destructor while the model thread waits out its
    period). `make_dataset` and the Trainer (for any dataset function) set
    these. Whoever drops the last reference pays, for as long as the thread
    has left to sleep: a 1,500-step t2t-trainer run exited 18 s after "Done"
    in one of three runs (under a second in the others), and the test
    suite's garbage collections stalled from 2 s to over a minute each.
    Off, `AUTOTUNE` parallelism and prefetching take TensorFlow's untuned
    defaults; bench/pipeline_throughput.py, run with and without it one
    after the other on an Intel Xeon (2 cores, AVX-512), measured the
    pipeline no slower (Multi30k training batches 485k real tokens/s
    against 433k with the model, evaluation equal), still far ahead of what
    a CPU trainer consumes. Not reached: the per-replica iterators that
    tf.distribute's MirroredStrategy builds inside carry options of their
    own, and still run the thread (a two-replica iterator's deletion
    waited 37 s in some standalone runs).
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


def example_length(example: Dict[str, tf.Tensor]) -> tf.Tensor:
    """max(len(inputs), len(targets)) of one unbatched example: int32 scalar."""
    return tf.maximum(tf.size(example["inputs"]), tf.size(example["targets"]))


def _read(files: List[str], *, shuffle_files: bool, seed: Optional[int],
          num_parallel_reads: int) -> tf.data.Dataset:
    """Shard paths -> parsed examples, read `num_parallel_reads` files at a time."""
    file_ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_files and len(files) > 1:
        file_ds = file_ds.shuffle(len(files), seed=seed)  # reshuffled every epoch
    ds = file_ds.interleave(tf.data.TFRecordDataset,
                            cycle_length=max(1, min(len(files), num_parallel_reads)),
                            block_length=1, num_parallel_calls=tf.data.AUTOTUNE,
                            deterministic=True)
    return ds.map(_parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _bucket(ds: tf.data.Dataset, boundaries: List[int], batch_sizes: List[int],
            pad_to_bucket_boundary: bool) -> tf.data.Dataset:
    """Examples -> padded batches, one bucket per boundary plus an overflow bucket.

    The overflow bucket (index len(boundaries), only reachable in evaluation)
    holds examples longer than the last boundary, one per batch, padded to
    their own length.
    """
    bounds = tf.constant(boundaries, tf.int32)                        # [K]
    sizes = tf.constant(batch_sizes + [1], tf.int64)                  # [K + 1]
    pad_lengths = tf.constant(boundaries + [-1], tf.int64)            # [K + 1], -1: longest

    def key_fn(example):
        # Index of the first boundary >= length; K when longer than all.
        return tf.reduce_sum(tf.cast(example_length(example) > bounds, tf.int64))

    def reduce_fn(key, window):
        if pad_to_bucket_boundary:
            shape = tf.reshape(tf.gather(pad_lengths, key), [1])
            padded_shapes = {name: shape for name in FEATURES}
        else:
            padded_shapes = {name: [None] for name in FEATURES}
        return window.padded_batch(tf.gather(sizes, key), padded_shapes=padded_shapes,
                                   padding_values=PAD_ID)

    return ds.group_by_window(key_fn, reduce_fn,
                              window_size_func=lambda key: tf.gather(sizes, key))


def make_dataset(data_dir: str, problem_name: str, split: str, batch_size: int,
                 max_length: int, *, training: bool, seed: Optional[int] = None,
                 shuffle_buffer: int = 10_000, pad_to_bucket_boundary: bool = False,
                 input_context: Optional[tf.distribute.InputContext] = None,
                 repeat: Optional[bool] = None, min_length: int = 8,
                 length_bucket_step: float = 1.1,
                 num_parallel_reads: int = 4,
                 sources: Optional[Sequence["TrainSource"]] = None) -> tf.data.Dataset:
    """Length-bucketed, token-budgeted batches of one split.

    Args:
      data_dir: directory holding the shards written by t2t-datagen.
      problem_name: registered problem name, the shards' file-name prefix.
      split: "train", "dev" or "test".
      batch_size: tokens per batch per replica, padding included (hparams
        `batch_size`); applies to inputs and targets separately.
      max_length: in training, examples longer than this (max of input and
        target length, EOS included) are dropped; in evaluation they are kept.
      training: shuffle (shards and examples), drop over-long examples, repeat
        by default. Evaluation reads shards in order and keeps everything.
      seed: seeds both shuffles; the same seed gives the same batches.
      shuffle_buffer: examples in the shuffle buffer (training only).
      pad_to_bucket_boundary: pad each batch to its bucket's boundary instead
        of its longest example, so a bucket always has the same length (for
        XLA, which compiles once per shape). Costs padding. With `repeat`,
        buckets only emit full batches, so there are exactly as many shapes
        as buckets, [batch_sizes[k], boundaries[k]]; without it the last,
        partial batch of each bucket adds a shape. The dataset's static
        element_spec stays [None, None] either way.
      input_context: from `strategy.distribute_datasets_from_function`; this
        pipeline then reads only its 1/num_input_pipelines of the data (whole
        shards when there are at least as many shards as pipelines, every n-th
        example otherwise). Batches stay per replica either way.
      repeat: loop over the data forever; default: `training`.
      min_length, length_bucket_step: the bucket boundaries (see
        `t2t_lite.data.bucketing`).
      num_parallel_reads: shards read at the same time (per source).
      sources: training only: the corpora to draw from, with weights summing
        to 1 (`t2t_lite.data.mixing.train_sources`), instead of every shard of
        `problem_name`'s split; one source reads its shards as one stream.

    Returns:
      A dataset of {"inputs": int32 [B, S], "targets": int32 [B, T]}.
      Evaluation buckets continue past max_length up to batch_size; an
      example longer than batch_size comes alone in a batch of [1, length],
      the only case that exceeds the budget.

    Raises:
      T2TError: missing or incomplete shards, batch_size < max_length, bad
        lengths.
    """
    if sources and training:
        groups = [list(source.files) for source in sources]
    else:
        groups = [shard_files(data_dir, problem_name, split)]
    if training:
        boundaries = bucket_boundaries(max_length, min_length, length_bucket_step)
    else:
        boundaries = eval_bucket_boundaries(max_length, batch_size, min_length,
                                            length_bucket_step)
    batch_sizes = bucket_batch_sizes(batch_size, boundaries)
    repeat = training if repeat is None else repeat

    pipelines, index = 1, 0
    if input_context is not None:
        pipelines, index = input_context.num_input_pipelines, input_context.input_pipeline_id

    def stream(files: List[str], seed: Optional[int], buffer: int) -> tf.data.Dataset:
        """One source's examples: read, (sharded,) filtered, shuffled, repeated."""
        shard_examples = pipelines > 1 and len(files) < pipelines
        if pipelines > 1 and not shard_examples:
            files = files[index::pipelines]
        # Every pipeline must see the same example order to take disjoint shares.
        ds = _read(files, shuffle_files=training and not shard_examples,
                   seed=None if seed is None else seed + 1,
                   num_parallel_reads=num_parallel_reads)
        if shard_examples:
            ds = ds.shard(pipelines, index)
        if training:
            ds = ds.filter(lambda example: example_length(example) <= max_length)
            if buffer > 1:
                ds = ds.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
        return ds.repeat() if repeat else ds

    if len(groups) == 1:
        ds = stream(groups[0], seed, shuffle_buffer)
    else:
        weights = [source.weight for source in sources]
        streams = [stream(files, None if seed is None else seed + 2 * (i + 1),
                          max(2, math.ceil(shuffle_buffer * w)) if shuffle_buffer > 1 else 1)
                   for i, (files, w) in enumerate(zip(groups, weights))]
        ds = tf.data.Dataset.sample_from_datasets(streams, weights=weights, seed=seed,
                                                  stop_on_empty_dataset=False)
    ds = _bucket(ds, boundaries, batch_sizes, pad_to_bucket_boundary)
    return ds.prefetch(tf.data.AUTOTUNE).with_options(without_autotune_thread())


@dataclasses.dataclass(frozen=True)
class LengthCounts:
    """What the length filter does to one split (from `count_lengths`)."""

    examples: int   # records in the split
    kept: int       # length <= max_length (all of them are kept in evaluation)
    dropped: int    # length > max_length: dropped in training
    longest: int    # longest example, max(len(inputs), len(targets))


def count_lengths(data_dir: str, problem_name: str, split: str,
                  max_length: int) -> LengthCounts:
    """Counts the examples that training would drop for being too long.

    One sequential pass over all shards of the split (in graph, a second or
    so per million examples per core); it does not consume any pipeline.

    Raises:
      T2TError: as `shard_files`.
    """
    files = shard_files(data_dir, problem_name, split)
    lengths = _read(files, shuffle_files=False, seed=None, num_parallel_reads=4).map(
        example_length, num_parallel_calls=tf.data.AUTOTUNE)
    zero = tf.constant(0, tf.int64)

    def add(state, length):
        examples, dropped, longest = state
        return (examples + 1, dropped + tf.cast(length > max_length, tf.int64),
                tf.maximum(longest, tf.cast(length, tf.int64)))

    examples, dropped, longest = (int(v) for v in lengths.reduce((zero, zero, zero), add))
    return LengthCounts(examples=examples, kept=examples - dropped, dropped=dropped,
                        longest=longest)


def padding_efficiency(dataset: tf.data.Dataset, num_batches: Optional[int] = None) -> float:
    """Real tokens / padded tokens over "inputs" and "targets" of the batches.

    Real tokens are the non-zero ids (PAD is 0, every real id, EOS included,
    is >= 1). Reads `num_batches` batches (all when None: never pass None for
    a repeating dataset). Returns 0.0 for no batches.
    """
    if num_batches is not None:
        dataset = dataset.take(num_batches)
    elif dataset.cardinality() == tf.data.INFINITE_CARDINALITY:
        raise T2TError("padding_efficiency over an infinite dataset: pass num_batches.")
    zero = tf.constant(0, tf.int64)

    def add(state, batch):
        real, padded = state
        for name in FEATURES:
            real += tf.math.count_nonzero(batch[name], dtype=tf.int64)
            padded += tf.size(batch[name], out_type=tf.int64)
        return real, padded

    real, padded = dataset.reduce((zero, zero), add)
    return float(real) / float(padded) if int(padded) else 0.0
