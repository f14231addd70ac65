"""Length buckets and token-budget batch sizes, tensor2tensor-style.

Pure Python, no TensorFlow: the input pipeline (`t2t_lite.data.pipeline`)
turns these lists into `tf.data` bucketing.

The rule, written once:

* The length of an example is max(len(inputs), len(targets)), EOS included.
* A bucket is named by its *upper* boundary `b` and holds the examples whose
  length is in (previous boundary, b]; it is padded to at most `b` tokens
  (exactly `b` with `pad_to_bucket_boundary`).
* Its batch size is `batch_size_tokens // b` sentences, so that sentences *
  padded length <= batch_size_tokens, for the inputs tensor and for the
  targets tensor separately (the paper's "about 25,000 source and 25,000
  target tokens" per batch). Padding is counted in the budget.

Boundaries follow tensor2tensor's `_bucket_boundaries`: start at
`min_length` (8), multiply by `length_bucket_step` (1.1) rounding down, grow by
at least 1 each time. Unlike tensor2tensor, whose buckets are half-open
[lower, upper) and whose last bucket is open-ended, the list here ends with
`max_length` itself, so every kept example has a bucket whose boundary is
known and no batch exceeds the budget. tensor2tensor also rounds batch sizes
down to divisors of one window size, a limit of TF1's `group_by_window`
that TF2 no longer has; this module does not.
"""

from typing import List

from t2t_lite.errors import T2TError


def _grow(start: int, limit: int, step: float) -> List[int]:
    """start, then x -> max(x + 1, floor(x * step)), while x < limit."""
    values = []
    x = start
    while x < limit:
        values.append(x)
        x = max(x + 1, int(x * step))
    return values


def _check(max_length: int, min_length: int, length_bucket_step: float) -> None:
    if max_length < 1:
        raise T2TError(f"max_length must be positive, got {max_length}.")
    if min_length < 1:
        raise T2TError(f"min_length must be positive, got {min_length}.")
    if length_bucket_step <= 1.0:
        raise T2TError(f"length_bucket_step must be > 1, got {length_bucket_step}.")


def bucket_boundaries(max_length: int, min_length: int = 8,
                      length_bucket_step: float = 1.1) -> List[int]:
    """Upper boundaries (inclusive) of the length buckets for training.

    Args:
      max_length: longest example kept; the last boundary.
      min_length: first boundary: all examples of length <= min_length share
        one bucket.
      length_bucket_step: growth factor between boundaries.

    Returns:
      Increasing boundaries ending with `max_length`, e.g. for max_length=30:
      [8, 9, ..., 20, 22, 24, 26, 28, 30].

    Raises:
      T2TError: a non-positive length or a step <= 1.
    """
    _check(max_length, min_length, length_bucket_step)
    return _grow(min_length, max_length, length_bucket_step) + [max_length]


def eval_bucket_boundaries(max_length: int, batch_size_tokens: int, min_length: int = 8,
                           length_bucket_step: float = 1.1) -> List[int]:
    """Boundaries for evaluation, where over-long examples are kept.

    The training boundaries, then the same geometric growth continued from
    `max_length` up to `batch_size_tokens` (the longest example that still
    fits one batch), which ends the list. Examples longer than that are
    batched one at a time by the pipeline (and exceed the budget).

    Raises:
      T2TError: as `bucket_boundaries`, or batch_size_tokens < max_length.
    """
    train = bucket_boundaries(max_length, min_length, length_bucket_step)
    _check_budget(batch_size_tokens, max_length)
    if batch_size_tokens == max_length:
        return train
    extra = _grow(max_length, batch_size_tokens, length_bucket_step)[1:]
    return train + extra + [batch_size_tokens]


def _check_budget(batch_size_tokens: int, longest: int) -> None:
    if batch_size_tokens < longest:
        raise T2TError(
            f"batch_size of {batch_size_tokens} tokens is smaller than the longest bucket "
            f"({longest} tokens, max_length): such examples would not fit one batch. "
            "Raise batch_size or lower max_length.")


def bucket_batch_sizes(batch_size_tokens: int, boundaries: List[int]) -> List[int]:
    """Sentences per batch for each bucket: batch_size_tokens // boundary.

    Args:
      batch_size_tokens: token budget per batch (per replica), padding included.
      boundaries: inclusive upper boundaries, as from `bucket_boundaries`.

    Returns:
      One batch size per boundary, the largest n with n * boundary <=
      batch_size_tokens (so at least 1).

    Raises:
      T2TError: empty or non-increasing boundaries, or a boundary larger than
        the budget.
    """
    if not boundaries:
        raise T2TError("bucket boundaries must not be empty.")
    if any(b <= a for a, b in zip(boundaries, boundaries[1:])) or boundaries[0] < 1:
        raise T2TError(f"bucket boundaries must be positive and increasing, got {boundaries}.")
    _check_budget(batch_size_tokens, boundaries[-1])
    return [batch_size_tokens // b for b in boundaries]
