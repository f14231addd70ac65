"""tests/worker_groups.py: which tests share an xdist worker, and the check of its list."""

import types

import pytest
import tensorflow as tf

from t2t_lite.threads import usable_cores
from worker_groups import (SHARED_MODEL_UNIT, check_shared_model_modules,
                           shared_model_modules_first, threads_per_op, work_unit, xdist_workers)


def fake_item(nodeid, *fixtures):
    return types.SimpleNamespace(nodeid=nodeid, fixturenames=["tmp_path", *fixtures])


def test_listed_modules_share_one_unit_and_others_go_by_module():
    assert work_unit("tests/decode/test_decoder.py::test_x[a-b]") == SHARED_MODEL_UNIT
    assert work_unit("tests/export/test_export.py::test_y") == SHARED_MODEL_UNIT
    assert work_unit("tests/data/test_vocab.py::test_z") == "tests/data/test_vocab.py"
    assert work_unit("tests/data/test_vocab.py::Class::test_w") == "tests/data/test_vocab.py"


def test_an_unlisted_module_using_the_model_stops_the_collection_in_one_line():
    items = [fake_item("tests/decode/test_decoder.py::test_a", "numbers_model"),
             fake_item("tests/new/test_b.py::test_b", "numbers_model"),
             fake_item("tests/new/test_c.py::test_c")]
    with pytest.raises(pytest.UsageError) as error:
        check_shared_model_modules(items)
    assert str(error.value) == ("tests/worker_groups.py: add tests/new/test_b.py to "
                                "SHARED_MODEL_MODULES (they use numbers_model)")
    check_shared_model_modules([items[0], items[2]])  # listed, or not using it: fine


def test_the_shared_models_modules_go_first_in_their_order():
    items = [fake_item("tests/a/test_1.py::t"), fake_item("tests/export/test_export.py::t"),
             fake_item("tests/a/test_2.py::t"), fake_item("tests/decode/test_decoder.py::t")]
    shared_model_modules_first(items)
    assert [item.nodeid for item in items] == [
        "tests/export/test_export.py::t", "tests/decode/test_decoder.py::t",
        "tests/a/test_1.py::t", "tests/a/test_2.py::t"]


def test_workers_share_the_cores_for_threads_per_op():
    assert [threads_per_op(2, workers) for workers in (1, 2, 3)] == [None, 1, 1]
    assert [threads_per_op(8, workers) for workers in (2, 3, 8)] == [4, 2, 1]


def test_each_worker_runs_tensorflow_with_its_share_of_the_cores():
    """Under several workers (pytest.ini's -n auto, as CI runs) this worker's ops run
    on its share; one process (-n 0) keeps TensorFlow's default."""
    threads = threads_per_op(usable_cores(), xdist_workers())
    assert (threads is None) == (xdist_workers() == 1)
    if threads is not None:
        assert tf.config.threading.get_intra_op_parallelism_threads() == threads
