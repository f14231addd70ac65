"""t2t-decoder translates several batches at once: the same lines, scores and work as one
at a time, and TensorFlow's per-op threads set before it starts."""

import collections
import subprocess
import sys
import threading

import pytest
import tensorflow as tf

from t2t_lite.decode import decoding
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError
from t2t_lite.threads import usable_cores, use_intra_op_threads

from model_dirs import load_model, make_model_dir, number_sentences


def test_concurrent_batches_give_the_lines_scores_and_work_of_one_at_a_time(numbers_model):
    # The README's trained model, 136 lines (blank ones among them) in 17 batches of 8
    # of different lengths, all beams with their scores: every line must land at its
    # own index, whichever batch finishes first.
    model, vocab = load_model(numbers_model.path)
    lines = number_sentences(400)[::3]
    lines[5:5] = ["", "   "]
    params = SearchParams(beam_size=3, alpha=0.6, extra_length=8)
    results = {}
    for parallel in (1, 3):
        search = Search(model, params)
        options = decoding.DecodeOptions(batch_size=8, return_beams=True,
                                         write_beam_scores=True, parallel_batches=parallel)
        progress = []
        outputs = decoding.decode_lines(Translator(search, vocab), lines, options,
                                        progress=lambda done, total, _: progress.append(
                                            (done, total)))
        results[parallel] = outputs, dict(search.work), progress
    (one, one_work, one_progress), (three, three_work, three_progress) = results[1], results[3]
    assert three == one
    assert three_work == one_work and one_work["useful"] > 0
    assert three_progress == one_progress and one_progress[-1] == (134, 134)
    assert one[5] == one[6] == ""
    assert all(line.count("\t") == 5 for n, line in enumerate(one) if n not in (5, 6))


def test_parallel_batches_option():
    assert decoding.DecodeOptions().concurrent_batches() == usable_cores()
    assert decoding.DecodeOptions(parallel_batches=3).concurrent_batches() == 3
    assert decoding.DecodeOptions(parallel_batches=3, alignments=True).concurrent_batches() == 1
    with pytest.raises(T2TError, match="parallel_batches must be >= 0"):
        decoding.DecodeOptions(parallel_batches=-1)
    _, options = decoding.parse_decode_hparams(SearchParams(), "parallel_batches=2,beam_size=2")
    assert options.parallel_batches == 2


def test_intra_op_threads_are_set_before_tensorflow_starts_and_kept_after():
    # This process has run ops: its pools are fixed, the call reports whether they match.
    current = tf.config.threading.get_intra_op_parallelism_threads()
    assert use_intra_op_threads(current)
    assert not use_intra_op_threads(current + 1)
    assert tf.config.threading.get_intra_op_parallelism_threads() == current
    # A fresh interpreter (the process boundary is the point): set before the first op.
    code = ("from t2t_lite.threads import use_intra_op_threads as use\n"
            "assert use(1)\n"
            "import tensorflow as tf\n"
            "tf.constant(1.0) + 1.0\n"
            "print(tf.config.threading.get_intra_op_parallelism_threads(), use(1), use(2))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["1", "True", "False"]


def test_only_the_compiled_search_runs_on_the_batch_threads(tmp_path):
    # TensorFlow's Python API is not safe from several threads at once (an API's
    # dispatcher keeps a call's arguments in one shared buffer: t2t-decoder crashed with
    # SIGSEGV in it). Every public API goes through dispatch.py's op_dispatch_handler:
    # the threads decode_lines starts must never call it (before: each batch's thread
    # padded its inputs and detokenized its outputs, and one traced the search).
    model, vocab = load_model(make_model_dir(str(tmp_path / "model")))
    calls = collections.Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "op_dispatch_handler":
            calls[threading.current_thread().name] += 1

    threading.setprofile(profile)  # the threads started from now on
    try:
        outputs = decoding.decode_lines(
            Translator(Search(model, SearchParams(beam_size=1, extra_length=2)), vocab),
            number_sentences(6), decoding.DecodeOptions(batch_size=2, parallel_batches=3))
    finally:
        threading.setprofile(None)
    assert len(outputs) == 6 and all(outputs)
    assert dict(calls) == {}
