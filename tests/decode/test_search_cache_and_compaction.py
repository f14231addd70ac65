"""The search's cache mechanics and finished examples leaving the batch.

How `tile_cache`, `gather_cache` and `compact_cache` treat the cache's kinds of
entries (per row, "static", "per_example"), and the pinned outputs of many
examples decoded with and without compaction (tests/decode/search_pins.py).
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decode.search_common import compact_cache, gather_cache, tile_cache

from search_pins import PINS, run


def test_per_example_cache_is_neither_tiled_nor_gathered_and_compacts_by_example():
    cache = {"k": tf.constant([[1.0], [2.0]]),
             "per_example": {"memory": tf.constant([[5.0], [6.0]])}}
    tiled = tile_cache(cache, 3)
    np.testing.assert_array_equal(tiled["k"][:, 0], [1, 1, 1, 2, 2, 2])
    assert tiled["per_example"] is cache["per_example"]
    gathered = gather_cache(tiled, tf.constant([2, 2, 0, 5, 3, 3]))
    assert gathered["per_example"] is cache["per_example"]
    # Example 0 leaves: its rows 0-2 and its memory go.
    kept = compact_cache(gathered, tf.constant([5, 3, 3]), tf.constant([3, 4, 5]),
                         tf.constant([1]))
    np.testing.assert_array_equal(kept["k"][:, 0], [2, 2, 2])
    np.testing.assert_array_equal(kept["per_example"]["memory"], [[6.0]])


def test_static_cache_is_tiled_but_not_gathered():
    cache = {"k": tf.constant([[1.0], [2.0]]), "static": {"memory": tf.constant([[5.0], [6.0]])}}
    tiled = tile_cache(cache, 3)
    np.testing.assert_array_equal(tiled["k"][:, 0], [1, 1, 1, 2, 2, 2])
    np.testing.assert_array_equal(tiled["static"]["memory"][:, 0], [5, 5, 5, 6, 6, 6])
    gathered = gather_cache(tiled, tf.constant([2, 2, 0, 5, 3, 3]))
    np.testing.assert_array_equal(gathered["k"][:, 0], [1, 1, 1, 2, 2, 2])
    assert gathered["static"] is tiled["static"]


@pytest.mark.parametrize("cache_key", ["static", "per_example"])
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("setting", range(4))
def test_pinned_outputs_of_many_examples_ending_at_different_steps(setting, compact, cache_key):
    # Pins recorded from the search before finished examples left the batch
    # (tests/decode/search_pins.py says how); every token and score must stay,
    # whether finished examples stay in the loop or leave it, whether the
    # example's constants are tiled per row or kept once per example, in eager
    # mode and in a graph whose batch size is unknown while tracing.
    with open(PINS) as f:
        pin = json.load(f)[setting]
    eager = run(pin["beam_size"], pin["alpha"], pin["length_penalty"], cache_key,
                compact=compact, return_row_steps=True)
    graph = tf.function(lambda: run(pin["beam_size"], pin["alpha"], pin["length_penalty"],
                                    cache_key, compact=compact, return_row_steps=True))()
    for ids, scores, _ in (eager, graph):
        np.testing.assert_array_equal(ids, pin["ids"])
        np.testing.assert_allclose(scores, pin["scores"], rtol=1e-5)
    assert int(eager[2]) == int(graph[2])
    # The rows computed: without `compact`, one row per example at the first step
    # (computed before the beam is expanded), then every beam of every example at
    # each further step of the longest; with it, each example only until it
    # stopped, which is never less than its output (every beam of every step
    # until its best ended).
    steps = np.array(pin["ids"]).shape[2]
    lengths = np.count_nonzero(np.array(pin["ids"])[:, 0], axis=1)
    if compact:
        assert int(eager[2]) < 24 * pin["beam_size"] * steps
        assert int(eager[2]) >= pin["beam_size"] * lengths.sum()
    else:
        assert int(eager[2]) == 24 + 24 * pin["beam_size"] * (steps - 1)
