"""t2t-server --watch on a model directory: a newer checkpoint is served once it is
complete, loaded and warmed up; a half-written or broken one never is; a switch
under load fails no request, and each answer is its version's translation.

One server for the module watches a copy of the random-weight model with only
ckpt-1 listed (version 1); the tests write checkpoints into it as a trainer's
TensorFlow does (data file renamed into place, then the index, then the state
file rewritten atomically). The expected answers come from t2t-decoder's
library and the TF engine on each checkpoint of the original directory: ckpt-1
and ckpt-3 (weights + 1 and + 3) write the same lines but scores about 10x
apart, so the scores tell which version answered.
"""

import concurrent.futures
import logging
import os
import random
import shutil
import threading
import time

import pytest
import tensorflow as tf

from serving import (BLOCK, DECODE, MODEL_NAME, RunningServer, ScriptedEngine, decoder_lines,
                     http, metric,
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences
from t2t_lite import atomic
from t2t_lite.model_dir import ModelDir
from t2t_lite.serve.config import ServerConfig
from t2t_lite.serve.engine import TFEngine
from t2t_lite.serve.watch import Candidate, Watcher, checkpoint_source

CONFIG = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=4, batch_timeout_ms=5,
                      batch_workers=2)
POLL_S = 0.1
LINES = number_sentences(12)[1:] + ["", "zwölf Äpfel"]
DATA = ".data-00000-of-00001"


def list_checkpoints(directory: str, steps) -> None:
    """Rewrites `directory`'s state file (atomically, as TensorFlow's CheckpointManager)."""
    names = [f"ckpt-{s}" for s in steps]
    tf.compat.v1.train.update_checkpoint_state(directory, names[-1], names)


def copy_checkpoint(source: str, directory: str, step: int, as_step: int = 0) -> None:
    """Writes `source`'s ckpt-<step> files as `directory`'s ckpt-<as_step> (default: the
    same) in TensorFlow's order: the data file under a temporary name renamed into
    place, then the index; the state file is left as it is."""
    target = os.path.join(directory, f"ckpt-{as_step or step}")
    shutil.copyfile(os.path.join(source, f"ckpt-{step}{DATA}"), target + DATA + ".tmp")
    os.rename(target + DATA + ".tmp", target + DATA)
    shutil.copyfile(os.path.join(source, f"ckpt-{step}.index"), target + ".index")


def remove_checkpoint(directory: str, step: int) -> None:
    for suffix in (".index", DATA):
        path = os.path.join(directory, f"ckpt-{step}{suffix}")
        if os.path.exists(path):
            os.remove(path)


@pytest.fixture(scope="module")
def watched(model_path, tmp_path_factory) -> str:
    """A copy of `model_path` holding ckpt-1 alone (version 1)."""
    path = str(tmp_path_factory.mktemp("watch") / "model")
    shutil.copytree(model_path, path)
    remove_checkpoint(path, 3)
    list_checkpoints(path, [1])
    return path


class CountedSource:
    """`checkpoint_source` that counts its calls (each one look of the watcher)."""

    def __init__(self, newest):
        self.newest, self.calls = newest, 0

    def __call__(self):
        self.calls += 1
        return self.newest()

    def wait_looks(self, looks: int) -> None:
        """Returns once the watcher has looked `looks` more times."""
        until, deadline = self.calls + looks, time.monotonic() + 60
        while self.calls < until:
            assert time.monotonic() < deadline, "the watcher stopped looking"
            time.sleep(POLL_S / 4)


@pytest.fixture(scope="module")
def server(watched):
    def load():
        return ScriptedEngine(TFEngine.load(ModelDir.open(watched), DECODE))
    source = CountedSource(checkpoint_source(watched))
    running = RunningServer(load(), CONFIG, Watcher(source, load, MODEL_NAME, POLL_S)).start()
    running.source = source
    yield running
    running.state.engine.release.set()
    running.stop()


@pytest.fixture(scope="module")
def expected(model_path, engine):
    """{version: {line: (t2t-decoder's line, score)}} for ckpt-1 and ckpt-3."""
    lines = LINES + [BLOCK]
    by_version = {}
    first = TFEngine.load(ModelDir.open(model_path), DECODE,
                          checkpoint_path=os.path.join(model_path, "ckpt-1"))
    for version, translating in ((1, first), (3, engine)):
        assert translating.version == version
        scores = [r.scores[0] for r in translating.translate(lines)]
        by_version[version] = dict(zip(lines, zip(decoder_lines(translating, lines), scores)))
    for line in lines:  # the two versions are told apart by their scores
        if line.strip():
            assert abs(by_version[1][line][1] - by_version[3][line][1]) > 1, line
    return by_version


def translate(server, inputs):
    return http(server.url + "/v1/translate", {"inputs": inputs})


def assert_answer(expected, inputs, status, body, version=None) -> int:
    """Checks one answer against the expected translations of the version it reports."""
    assert status == 200, body
    reported = body["model"]["version"]
    assert body["model"]["name"] == MODEL_NAME
    assert version is None or reported == version
    assert body["outputs"] == [expected[reported][line][0] for line in inputs]
    assert body["scores"] == pytest.approx([expected[reported][line][1] for line in inputs],
                                           abs=1e-3)
    return reported


def served_version(server) -> str:
    return http(f"{server.url}/v1/models/{MODEL_NAME}")[2]["model_version_status"][0]["version"]


def test_a_half_written_checkpoint_is_not_loaded(server, watched, model_path, expected):
    copy_checkpoint(model_path, watched, 3)  # data and index, the state file not yet
    try:
        server.source.wait_looks(3)
        assert served_version(server) == "1"
        assert_answer(expected, LINES[:3], *translate(server, LINES[:3])[::2], version=1)
    finally:
        remove_checkpoint(watched, 3)


def test_a_version_that_fails_to_load_keeps_the_old_one(server, watched, model_path,
                                                        expected, caplog):
    copy_checkpoint(model_path, watched, 1, as_step=2)
    with open(os.path.join(watched, f"ckpt-2{DATA}"), "r+b") as f:
        f.truncate(64)  # listed, but its data cut short
    list_checkpoints(watched, [1, 2])
    try:
        with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
            server.source.wait_looks(4)
        assert served_version(server) == "1"
        assert_answer(expected, LINES[:3], *translate(server, LINES[:3])[::2], version=1)
        failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(failures) == 1, failures  # one line, and not tried again at each look
        # (restore_weights' "Checkpoint ... is damaged: Read less bytes than requested ...")
        assert failures[0].startswith(f"watch: version 2 of model '{MODEL_NAME}' failed to "
                                      "load (")
        assert failures[0].endswith("); still serving version 1")
        assert "\n" not in failures[0]
    finally:
        list_checkpoints(watched, [1])
        remove_checkpoint(watched, 2)


def test_switch_under_load_drops_no_request(server, watched, model_path, expected):
    """Clients send requests one after another while version 3 is written. Meanwhile
    both batch workers are held in batches of version 1, so a request of version 1
    (received before the switch) and one of version 3 (after it) wait in the queue
    together (with the clients'): they must not share a batch."""
    old = server.state.engine
    assert old.version == 1
    stop = threading.Event()

    def client(seed: int):
        """Sends requests one after another until `stop`: [(inputs, status, body)]."""
        rng, answers = random.Random(seed), []
        while not stop.is_set():
            inputs = rng.sample(LINES[3:], rng.randint(1, 3))
            answers.append((inputs, *translate(server, inputs)[::2]))
        return answers

    def holding(batches: int) -> bool:
        return sum(BLOCK in batch for batch in old.batches) == batches

    with concurrent.futures.ThreadPoolExecutor(7) as pool:  # 3 clients + 4 requests
        try:
            clients = [pool.submit(client, seed) for seed in range(3)]
            held = [pool.submit(translate, server, [BLOCK])]
            wait_for(lambda: holding(1))
            held.append(pool.submit(translate, server, [BLOCK, LINES[0]]))
            wait_for(lambda: holding(2))  # both workers hold a batch of version 1
            before = pool.submit(translate, server, [LINES[1]])
            wait_for(lambda: LINES[1] in queued_texts(server))
            copy_checkpoint(model_path, watched, 3)
            list_checkpoints(watched, [1, 3])
            wait_for(lambda: server.state.engine.version == 3)
            after = pool.submit(translate, server, [LINES[2]])
            wait_for(lambda: LINES[2] in queued_texts(server))
            old.release.set()
            time.sleep(1.0)  # requests of version 3 too
        finally:
            old.release.set()
            stop.set()
        answers = [c.result() for c in clients]
        assert_answer(expected, [BLOCK], *held[0].result()[::2], version=1)
        assert_answer(expected, [BLOCK, LINES[0]], *held[1].result()[::2], version=1)
        assert_answer(expected, [LINES[1]], *before.result()[::2], version=1)
        assert_answer(expected, [LINES[2]], *after.result()[::2], version=3)
    seen = set()
    for client_answers in answers:
        versions = [assert_answer(expected, *answer) for answer in client_answers]
        assert versions == sorted(versions)  # one client's later requests: never older
        seen.update(versions)
    assert seen == {1, 3}
    assert served_version(server) == "3"
    assert metric(http(server.url + "/metrics")[2],
                  f't2t_server_model_version{{model="{MODEL_NAME}"}}') == 3
    assert_answer(expected, LINES, *translate(server, LINES)[::2], version=3)


def queued_texts(server):
    """The texts waiting in the server's queue (read under the batcher's lock)."""
    batcher = server.state.batcher
    with batcher._cond:  # pylint: disable=protected-access
        return [item.text for item in batcher._pending]  # pylint: disable=protected-access


def wait_for(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_newer_best_is_seen_once_it_replaced_the_old(model_path, tmp_path):
    """A `best/` replaced as t2t-trainer replaces it (`atomic.replace_dir`): the old
    one until the new one is in place, never a mix, never nothing."""
    best = str(tmp_path / "model" / "best")
    new = str(tmp_path / "model" / ".best.tmp-best-1@host@x")
    for path, step in ((best, 1), (new, 3)):
        shutil.copytree(model_path, path, ignore=shutil.ignore_patterns("ckpt-*", "checkpoint"))
        copy_checkpoint(model_path, path, step)
        list_checkpoints(path, [step])
    newest = checkpoint_source(best)
    assert newest().version == 1
    aside = str(tmp_path / "model" / f".best.replaced-{os.getpid()}@host@x")
    os.rename(best, aside)  # replace_dir's first rename: best/ is missing meanwhile
    assert newest().version == 1
    os.rename(new, best)
    assert newest().version == 3
    assert atomic.readable_dir(best) == best


class FakeEngine:
    def __init__(self, version: int, warm_up_error: bool = False):
        self.version, self.warm_up_error = version, warm_up_error

    def warm_up(self) -> None:
        if self.warm_up_error:
            raise RuntimeError("the warm-up translation failed")


def test_a_warm_up_failure_is_logged_once_and_retried_when_the_files_change(caplog):
    offered = [Candidate(2, (("ckpt-2.index", 10, 1),))]
    loaded = []

    def load():
        loaded.append(FakeEngine(2, warm_up_error=len(loaded) == 0))
        return loaded[-1]
    watcher = Watcher(lambda: offered[0], load, "ende")
    with caplog.at_level(logging.INFO, logger="t2t_lite.serve"):
        assert watcher.check(1) is None
        assert watcher.check(1) is None  # the same files: not loaded again
        assert watcher.check(2) is None  # not newer than the served version
    assert len(loaded) == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        "watch: version 2 of model 'ende' failed to load (RuntimeError: the warm-up "
        "translation failed); still serving version 1"]
    offered[0] = Candidate(2, (("ckpt-2.index", 10, 2),))  # rewritten
    assert watcher.check(1) is loaded[1]
