"""The README's multi-machine commands, as a user types them, on 127.0.0.1.

t2t-datagen once, `t2t-make-tf-configs`, then the same `t2t-trainer` command on
each worker with its TF_CONFIG; then again with more steps (a resume). Both
workers must exit 0, print the same losses, continue with the losses of an
uninterrupted run, and leave one model directory (no scratch directories of
the other worker).
"""

import os
import re
import socket
import subprocess
import sys

from t2t_lite.bin import t2t_make_tf_configs

TRAIN = ["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
         "--hparams=hidden_size=32,filter_size=64,batch_size=512,tokens_per_step=0",
         "--log_every=1", "--eval_every=0", "--eval_bleu_sentences=0", "--eval_steps=1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(configs, data_dir, output_dir, steps):
    procs = []
    for config in configs:
        env = dict(os.environ, TF_CONFIG=config)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "t2t_lite.bin.t2t_trainer", *TRAIN, f"--data_dir={data_dir}",
             f"--output_dir={output_dir}", f"--train_steps={steps}", "--strategy=multi_worker"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-3000:]
    return [re.findall(r"^step (\d+)/\d+  loss (\S+)", out, re.M) for out, _ in outputs]


def test_readme_multi_worker_commands(tmp_path, capsys):
    data_dir, output_dir = str(tmp_path / "data"), str(tmp_path / "model")
    subprocess.run([sys.executable, "-m", "t2t_lite.bin.t2t_datagen",
                    "--problem=translate_ende_numbers", f"--data_dir={data_dir}",
                    f"--tmp_dir={tmp_path / 'tmp'}"], check=True, capture_output=True)
    workers = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    assert t2t_make_tf_configs.main([f"--workers={workers}", "--format=json"]) == 0
    configs = capsys.readouterr().out.splitlines()

    first = run_workers(configs, data_dir, output_dir, 3)
    assert [s for s, _ in first[0]] == ["1", "2", "3"] and first[0] == first[1]
    resumed = run_workers(configs, data_dir, output_dir, 5)  # both restore the chief's step 3
    assert [s for s, _ in resumed[0]] == ["4", "5"] and resumed[0] == resumed[1]
    # The resumed run continues from the same data position as an uninterrupted one.
    uninterrupted = run_workers(configs, data_dir, str(tmp_path / "uninterrupted"), 5)
    assert uninterrupted[0][3:] == resumed[0]
    names = sorted(os.listdir(output_dir))
    assert not [n for n in names if n.startswith("tmp_worker")], names
    assert "ckpt-5.index" in names and "ckpt-3.index" in names
