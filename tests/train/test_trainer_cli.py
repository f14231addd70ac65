"""t2t-trainer as a program: user errors, and the offline default problem end to end."""

import os
import re

import pytest

from t2t_lite.bin import t2t_trainer


def run(capfd, *argv):
    code = t2t_trainer.main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def assert_one_line_error(code, err, message):
    assert code == 1, err
    assert err.startswith("t2t-trainer: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_registry_help_lists_problems_and_sets(capfd):
    code, out, _ = run(capfd, "--registry_help")
    assert code == 0
    assert "translate_ende_numbers" in out and "transformer_table3_e_learned_pos" in out
    assert "translate_ende  (also: translate_ende_wmt32k)" in out


def test_unknown_flag_is_a_usage_error(capfd):
    with pytest.raises(SystemExit) as exit_info:
        t2t_trainer.main(["--problem=x", "--hparams_set=y", "--data_dir=d", "--output_dir=o",
                          "--trian_steps=3"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --trian_steps=3" in capfd.readouterr().err


@pytest.mark.parametrize("flag, message", [
    ("--problem=translate_ened", "Unknown problem 'translate_ened'. Did you mean 'translate_ende'"),
    ("--hparams_set=transformer_tinny", "Did you mean 'transformer_tiny'"),
    ("--hparams=num_heads=3", "hidden_size of 128 has to be divisible by num_heads of 3"),
])
def test_bad_names_and_overrides_are_one_line_errors(capfd, tmp_path, flag, message):
    argv = {"--problem": "--problem=translate_ende_numbers",
            "--hparams_set": "--hparams_set=transformer_tiny", "--hparams": "--hparams="}
    argv[flag.split("=")[0]] = flag
    code, _, err = run(capfd, *argv.values(), f"--data_dir={tmp_path}/d",
                       f"--output_dir={tmp_path}/m")
    assert_one_line_error(code, err, message)


def test_missing_data_is_a_one_line_error(capfd, tmp_path):
    code, _, err = run(capfd, "--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
                       f"--data_dir={tmp_path}/nothing", f"--output_dir={tmp_path}/m")
    assert_one_line_error(code, err, "No training data for translate_ende_numbers")


def test_unwritable_output_dir_is_a_one_line_error(capfd, numbers_data):
    # /proc refuses new directories even to root (CI runs as root, so a
    # chmod-ed directory would not do).
    code, _, err = run(capfd, "--problem=translate_ende_numbers",
                       "--hparams_set=transformer_tiny", f"--data_dir={numbers_data}",
                       "--output_dir=/proc/t2t-lite-model")
    assert_one_line_error(code, err, "Cannot create output directory")


def test_output_dir_that_is_a_file_is_a_one_line_error(capfd, tmp_path, numbers_data):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    code, _, err = run(capfd, "--problem=translate_ende_numbers",
                       "--hparams_set=transformer_tiny", f"--data_dir={numbers_data}",
                       f"--output_dir={a_file}/m")
    assert_one_line_error(code, err, "Cannot create output directory")


def test_short_run_on_the_default_problem_learns_and_resumes(capfd, tmp_path, numbers_data):
    # 120 steps: the fewest in which transformer_tiny's own warm-up shows the dev loss
    # fall by more than 1 nat (a 10-step warm-up reached only 0.24 in 40 steps).
    model = str(tmp_path / "model")
    common = ["--problem=translate_ende_numbers", "--hparams_set=transformer_tiny",
              f"--data_dir={numbers_data}", f"--output_dir={model}", "--eval_every=0",
              "--log_every=20", "--eval_bleu_sentences=20"]
    code, out, err = run(capfd, *common, "--train_steps=20")
    assert code == 0, err
    first_eval = float(out.split("eval step 20:")[1].split("loss ")[1].split()[0])
    code, out, err = run(capfd, *common, "--train_steps=120")
    assert code == 0, err
    assert "Resumed from" in out and "ckpt-20" in out
    # The tokens trained on over both runs (steps 1-120), from the checkpoint.
    assert re.search(r"^Trained on: [0-9,]+ padded tokens \(batch_size's unit\), [0-9,]+ "
                     r"padded / [0-9,]+ real target tokens\.$", out, re.M), out
    later_eval = float(out.split("eval step 120:")[1].split("loss ")[1].split()[0])
    assert later_eval < first_eval - 1.0, (first_eval, later_eval)
    # The eval line names BLEU's tokenizer (the numbers problem's target is German: 13a).
    assert re.search(r"^eval step 120: accuracy [0-9.]+  bleu [0-9.]+ \(tok:13a\)  chrf [0-9.]+  "
                     r"exact_match [0-9.]+  loss [0-9.]+  perplexity [0-9.]+$", out, re.M), out
    # The best dev BLEU's weights are a model directory of their own.
    assert os.path.exists(os.path.join(model, "best", "hparams.json"))
    assert os.path.exists(os.path.join(model, "best", "best.json"))
    # A conflicting rerun in the same directory is refused.
    code, _, err = run(capfd, *common, "--train_steps=130", "--hparams=relu_dropout=0.2")
    assert_one_line_error(code, err, "was trained with other hparams")


def test_mixed_float16_trains_with_loss_scaling_and_leaves_the_policy(capfd, tmp_path,
                                                                      numbers_data):
    """--precision=mixed_float16 through the program: float32 weights and a
    dynamic loss scale saved with the checkpoint; in-process, the policy is restored."""
    import keras
    import tensorflow as tf
    model = str(tmp_path / "model")
    code, out, err = run(capfd, "--problem=translate_ende_numbers",
                         "--hparams_set=transformer_tiny", "--precision=mixed_float16",
                         "--hparams=hidden_size=32,filter_size=64", f"--data_dir={numbers_data}",
                         f"--output_dir={model}", "--train_steps=3", "--eval_every=0",
                         "--eval_bleu_sentences=0", "--eval_steps=1", "--log_every=1")
    assert code == 0, err
    assert "step 3/3" in out
    assert keras.config.dtype_policy().name == "float32"
    variables = dict(tf.train.list_variables(os.path.join(model, "ckpt-3")))
    scales = [name for name in variables if "dynamic_scale" in name]
    assert scales, sorted(variables)[:20]
    reader = tf.train.load_checkpoint(os.path.join(model, "ckpt-3"))
    assert reader.get_variable_to_dtype_map()["model/target_embedding/weights_matrix/"
                                              ".ATTRIBUTES/VARIABLE_VALUE"] == tf.float32


def test_sigterm_saves_a_checkpoint_and_the_rerun_resumes(capfd, tmp_path, numbers_data):
    import signal
    import subprocess
    import sys
    import time
    model = str(tmp_path / "model")
    argv = [sys.executable, "-m", "t2t_lite.bin.t2t_trainer", "--problem=translate_ende_numbers",
            "--hparams_set=transformer_tiny", f"--data_dir={numbers_data}",
            f"--output_dir={model}", "--eval_every=0", "--eval_bleu_sentences=0",
            "--log_every=1", "--save_checkpoints_steps=0", "--save_checkpoints_secs=0", "--train_steps=100000"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:  # wait until training runs
        if line.startswith("step 3/"):
            break
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Stopped by signal" in out and "Traceback" not in err
    import tensorflow as tf
    latest = tf.train.latest_checkpoint(model)
    step = int(latest.rsplit("-", 1)[1])
    assert step >= 3
    # The rerun needs no process of its own: it is the same program, in this one.
    code, out, err = run(capfd, *argv[3:-1], f"--train_steps={step + 2}")
    assert code == 0, err
    assert f"Resumed from {latest} at step {step}." in out
    assert f"step {step + 2}/{step + 2}" in out
