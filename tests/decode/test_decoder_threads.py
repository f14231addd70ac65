"""t2t-decoder sets TensorFlow's threads per op from the batches its input makes:
a single batch gets every core, as many batches as cores get one thread each."""

import subprocess
import sys
import textwrap

from t2t_lite.decode import decoding

from model_dirs import make_model_dir, number_sentences

# t2t-decoder in a fresh interpreter on a machine of 16 cores (the affinity mask
# read by t2t_lite.threads, replaced), then the threads per op it configured.
DECODE_ON_16_CORES = textwrap.dedent("""
    import faulthandler, os, sys
    faulthandler.enable()  # a crash inside TensorFlow prints its Python stack to stderr
    os.sched_getaffinity = lambda pid: set(range(16))
    from t2t_lite.bin import t2t_decoder
    assert t2t_decoder.main(sys.argv[1:]) == 0
    import tensorflow as tf
    print("threads", tf.config.threading.get_intra_op_parallelism_threads(), flush=True)
""")


def test_threads_per_op_follow_the_batches_the_input_makes(tmp_path):
    model = make_model_dir(str(tmp_path / "model"))
    source = tmp_path / "source.txt"
    source.write_text("".join(line + "\n" for line in number_sentences(20)) + "\n \n")
    runs = {}
    for name, batch_size in (("one batch", 32), ("ten batches", 2)):
        argv = [f"--output_dir={model}", f"--decode_from_file={source}",
                f"--decode_to_file={tmp_path / name}",
                f"--decode_hparams=batch_size={batch_size},beam_size=1,extra_length=2"]
        runs[name] = subprocess.Popen([sys.executable, "-c", DECODE_ON_16_CORES, *argv],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    threads = {}
    for name, proc in runs.items():
        out, err = proc.communicate(timeout=300)
        # stdout too: whether the decoder finished ("threads N") before a crash.
        assert proc.returncode == 0, (f"{name}: exit {proc.returncode}\nstdout: {out[-500:]}"
                                      f"\nstderr: {err[-3000:]}")
        threads[name] = out.split()[-1]
        assert len((tmp_path / name).read_text().splitlines()) == 22
    # 20 lines in one batch: all 16 cores for each op; in 10 batches run at once,
    # 16 // 10 = 1 thread each.
    assert threads == {"one batch": "16", "ten batches": "1"}


def test_batches_at_once_are_bounded_by_the_input_and_one_on_a_gpu():
    options = decoding.DecodeOptions(batch_size=2)
    assert options.batches(["a", "", " ", "b", "c"]) == 2 and options.batches([]) == 0
    assert options.concurrent_batches(3, accelerator=False) == min(3, decoding.usable_cores())
    assert options.concurrent_batches(1, accelerator=False) == 1
    assert options.concurrent_batches(0, accelerator=False) == 1
    assert options.concurrent_batches(5, accelerator=True) == 1
    explicit = decoding.DecodeOptions(parallel_batches=3)
    assert explicit.concurrent_batches(5, accelerator=True) == 3
    assert explicit.concurrent_batches(2, accelerator=True) == 2
