"""How the suite shares out over pytest-xdist workers (pytest.ini: `-n auto`).

One work unit per test module, so a module's fixtures are built on one worker,
except the modules that use the trained numbers model (`numbers_model` in
conftest.py, the suite's largest cost: 2,000 training steps): they form one
unit, so that model is trained once per run, and it goes out first, since it
is the longest.

The unit is chosen from a test's id alone, on the controller, which does not
collect tests: hence the module list below. Every collection checks it (a module
that uses the model but is not listed would train it a second time on another
worker). xdist's own `--dist loadgroup` marks cannot do this here: they rename
test ids through an attribute that pytest 9 no longer reads.
"""

import os
from typing import List, Optional

import pytest

SHARED_MODEL_FIXTURE = "numbers_model"
SHARED_MODEL_UNIT = "shared numbers_model"
SHARED_MODEL_MODULES = frozenset({
    "tests/decode/test_alignment.py",
    "tests/decode/test_decoder.py",
    "tests/decode/test_ensemble_of_different_models.py",
    "tests/decode/test_parallel_batches.py",
    "tests/export/test_ctranslate2.py",
    "tests/export/test_export.py",
    "tests/recipes/test_numbers_accuracy.py",
    "tests/serve/test_answers_match_decoder.py",
    "tests/train/test_warm_start.py",
    "tests/visualize/test_attention.py",
})


def module_of(nodeid: str) -> str:
    """'tests/x/test_y.py::test_z[p]' -> 'tests/x/test_y.py'."""
    return nodeid.split("::", 1)[0]


def work_unit(nodeid: str) -> str:
    """The unit a test goes out in: the shared model's, or its module's."""
    module = module_of(nodeid)
    return SHARED_MODEL_UNIT if module in SHARED_MODEL_MODULES else module


def check_shared_model_modules(items) -> None:
    """Fails the collection, in one line, when a module uses the shared model
    (directly or through a fixture built on it) without being listed."""
    missing = sorted({module_of(item.nodeid) for item in items
                      if SHARED_MODEL_FIXTURE in item.fixturenames}
                     - SHARED_MODEL_MODULES)
    if missing:
        raise pytest.UsageError(f"tests/worker_groups.py: add {', '.join(missing)} to "
                           f"SHARED_MODEL_MODULES (they use {SHARED_MODEL_FIXTURE})")


def shared_model_modules_first(items: List) -> None:
    """Puts the shared model's modules first (stable otherwise): with pytest.ini's
    --no-loadscope-reorder, units go out in collection order."""
    items.sort(key=lambda item: module_of(item.nodeid) not in SHARED_MODEL_MODULES)


def threads_per_op(cores: int, workers: int) -> Optional[int]:
    """TensorFlow's intra-op threads for each of `workers` worker processes sharing
    `cores`; None (TensorFlow's default: one per core) for a single process.

    Each worker's default would be one thread per core: two workers on two
    cores would then run four threads on two cores, hand each small op over
    between threads and spin waiting for it (2 workers on 2 cores: 1 thread).
    """
    if workers <= 1:
        return None
    return max(1, cores // workers)


def xdist_workers() -> int:
    """How many xdist workers this run has (1 under `-n 0`)."""
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def make_scheduler(config, log):
    """xdist's per-scope scheduling with this file's units."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModuleUnits(config, log)
