"""t2t-server's TensorFlow engine is called from several threads at once (the batch workers
translate, the request threads count tokens): every TensorFlow API call they make holds
`TF_API_LOCK`, only the compiled search runs without it.

TensorFlow's op dispatcher keeps one argument buffer per op for every thread; two threads in
it at once can read each other's freed arguments (t2t-decoder died with SIGSEGV there). Every
public op goes through dispatch.py's `op_dispatch_handler`: the threads below must call it
only while holding the lock."""

import collections
import concurrent.futures
import threading

from t2t_lite.model_dir import ModelDir
from t2t_lite.serve.engine import TFEngine
from t2t_lite.tf_api_lock import TF_API_LOCK

from model_dirs import make_model_dir, number_sentences


def test_translating_threads_call_tensorflow_only_under_the_lock(tmp_path):
    engine = TFEngine.load(ModelDir.open(make_model_dir(str(tmp_path / "model"))),
                           "beam_size=2,extra_length=2")
    engine.warm_up()  # traced on this thread, as t2t-server does before it is ready
    unlocked, locked = collections.Counter(), collections.Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "op_dispatch_handler":
            held = TF_API_LOCK._is_owned()  # this thread holds it
            (locked if held else unlocked)[threading.current_thread().name] += 1

    sentences = number_sentences(24)
    batches = [sentences[i:i + 3] for i in range(0, 24, 3)]
    threading.setprofile(profile)  # the threads started from now on
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            lengths = list(pool.map(engine.token_lengths, batches))
            translated = list(pool.map(engine.translate, batches))
    finally:
        threading.setprofile(None)
    assert [len(x) for x in lengths] == [3] * 8 and all(n > 1 for x in lengths for n in x)
    assert [len(x) for x in translated] == [3] * 8
    assert dict(unlocked) == {}
    assert sum(locked.values()) > 0  # the profile saw TensorFlow's API being called
