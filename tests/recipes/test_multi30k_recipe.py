"""The Multi30k recipe (recipes/multi30k_ende.py) end to end on a slice of the data.

The full run takes an hour; this runs every command of the recipe (datagen,
trainer, checkpoint averaging, decoding with BLEU, the curve plot) on 1,500
training pairs for 40 steps and checks that each exits 0, that the dev loss
falls and that each output has one line per test sentence.
"""

import json
import re
import subprocess
import sys

import pytest

from paths import REPO_ROOT, recipe_module, recipe_part

SLICE = {"train": 1500, "val": 60, "test_2016_flickr": 60}


@pytest.fixture
def multi30k_slice(shared_data, tmp_path):
    directory = tmp_path / "multi30k"
    directory.mkdir()
    for stem, count in SLICE.items():
        for lang in ("en", "de"):
            with open(shared_data / "multi30k" / f"{stem}.{lang}", encoding="utf-8") as f:
                lines = [next(f) for _ in range(count)]
            (directory / f"{stem}.{lang}").write_text("".join(lines), encoding="utf-8")
    return directory


def test_recipe_commands_run_and_dev_loss_falls(multi30k_slice, tmp_path):
    work = tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "recipes" / "multi30k_ende.py"),
         f"--tmp_dir={multi30k_slice}", f"--work_dir={work}", "--train_steps=40",
         "--hparams=learning_rate_warmup_steps=20,batch_size=1024", "--eval_every=20",
         "--eval_bleu_sentences=20", "--save_steps=10", "--average=3", "--marks=0.5",
         "--select=best_dev_loss", "--tune_grid=beam_size=2;alpha=0.6,1.0",
         "--subword_samples=2", "--subword_alpha=0.5"],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    log = (work / "recipe.log").read_text(encoding="utf-8")
    sampled = ("train: 3,000 examples in 4 shard(s)", "2 sampled segmentations of each "
               "pair (from the 64 best, alpha 0.5)")
    assert all(part in log for part in sampled), log[:3000]
    dev_losses = [float(x) for x in re.findall(r"^eval step \d+: .*\bloss ([0-9.]+)", log, re.M)]
    assert len(dev_losses) == 2  # steps 20 and 40
    assert dev_losses[-1] < dev_losses[0]

    rows = json.loads((work / "results.json").read_text(encoding="utf-8"))
    final = rows[-1]
    assert final["mark"] == "final" and final["checkpoint"] == "ckpt-40"
    assert [row["step"] for row in rows] == [20, 40] and final["resumed_at"] == []
    assert 0 <= rows[0]["minutes"] <= final["minutes"] <= 15  # from this run's start
    assert final["budget"] == {"train_steps": 40, "batch_size": 1024, "train_minutes": 0}
    # Tokens trained on, from the checkpoints: batches of at most 1,024 padded tokens.
    half, whole = rows[0]["tokens"], final["tokens"]
    assert 0 < half["padded"] <= 20 * 1024 and 0 < whole["padded"] - half["padded"] <= 20 * 1024
    assert whole["targets"] <= whole["padded_targets"] <= whole["padded"]
    # --select=best_dev_loss: the 3 of lowest dev loss (t2t-avg-checkpoints wrote them all).
    losses = json.loads((work / "model" / "dev_losses.json").read_text(encoding="utf-8"))["losses"]
    assert len(final["averaged"]) == 3 and set(final["averaged"]) <= set(losses)
    others = set(losses) - set(final["averaged"])
    assert max(losses[n] for n in final["averaged"]) <= min(losses[n] for n in others)
    for row in rows:
        for key in ("single_beam1", "single_beam", "avg_beam1", "avg_beam"):
            assert 0.0 <= row[key] <= 100.0
            output = work / f"test_{row['mark']}_{key}.de"
            assert len(output.read_text(encoding="utf-8").splitlines()) == 60
        assert 0.0 <= row["avg_beam_lc_moses"] <= 100.0
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in final["signature"]
    assert 0.0 <= final["dev_avg_beam"] <= 100.0
    assert final["decode_hparams"] in ("beam_size=2,alpha=0.6", "beam_size=2,alpha=1.0")
    assert proc.stdout.splitlines()[-1].startswith("Final: test_2016_flickr sacreBLEU ")
    assert (f"40 steps of batch_size=1024: {whole['padded']:,} padded tokens"
            in proc.stdout.splitlines()[-1])

    # The same model scored another way into --score_dir: training resumes at its end
    # step (nothing to train, said in results.json), the first results stay.
    second = work / "last2"
    again = subprocess.run(
        [sys.executable, str(REPO_ROOT / "recipes" / "multi30k_ende.py"),
         f"--tmp_dir={multi30k_slice}", f"--work_dir={work}", f"--score_dir={second}",
         "--train_steps=40", "--hparams=learning_rate_warmup_steps=20,batch_size=1024",
         "--eval_every=20", "--eval_bleu_sentences=0", "--save_steps=10", "--average=2",
         "--marks=", "--decode_hparams=beam_size=2,alpha=0.6", "--patience=2"],
        capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    rescored = json.loads((second / "results.json").read_text(encoding="utf-8"))
    assert [r["mark"] for r in rescored] == ["final"] and rescored[0]["resumed_at"] == [40]
    # Saved by the first run: no minutes into this one (not a negative number).
    assert rescored[0]["minutes"] is None
    relog = (second / "recipe.log").read_text(encoding="utf-8")
    assert "Done: step 40, nothing to train (--train_steps=40 reached already)" in relog
    assert "train: reusing 3,000 examples" in relog  # no flags: the data kept its setting
    # --patience=2: every checkpoint's dev loss computed; a stop only after two in a row
    # without a lower one (early in training each is lower than the last).
    losses = json.loads((work / "model" / "dev_losses.json").read_text(encoding="utf-8"))
    by_step = [losses["losses"][f"ckpt-{step}"] for step in (10, 20, 30, 40)]
    assert by_step == sorted(by_step, reverse=True), by_step
    assert rescored[0]["patience"] == 2 and rescored[0]["stopped_at"] is None
    assert rescored[0]["averaged"] == ["ckpt-30", "ckpt-40"]
    assert rescored[0]["tokens"] == whole
    assert json.loads((work / "results.json").read_text(encoding="utf-8")) == rows

    plot = subprocess.run(
        [sys.executable, str(REPO_ROOT / "recipes" / "plot_curves.py"),
         f"--output_dir={work / 'model'}", f"--png={tmp_path / 'curves.png'}",
         f"--results={work / 'results.json'}"], capture_output=True, text=True, timeout=300)
    if "matplotlib is not installed" in plot.stderr:  # an optional extra; the table still prints
        assert plot.returncode == 1
    else:
        assert plot.returncode == 0, plot.stderr[-2000:]
        assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # The rescored results' checkpoint has no minutes into that run: left off the plot.
        replot = subprocess.run(
            [sys.executable, str(REPO_ROOT / "recipes" / "plot_curves.py"),
             f"--output_dir={work / 'model'}", f"--png={tmp_path / 'rescored.png'}",
             f"--results={second / 'results.json'}"], capture_output=True, text=True,
            timeout=300)
        assert replot.returncode == 0, replot.stderr[-2000:]
    table = [line.split() for line in plot.stdout.splitlines()[1:] if line[:1] == " "]
    assert [int(row[1]) for row in table] == [20, 40]


def load_recipe():
    return recipe_module("multi30k_ende")


@pytest.mark.parametrize("marks, message", [
    ("25,50", "fractions between 0 and 1"), ("0.5,1", "fractions between 0 and 1"),
    ("half", "fractions of the budget, e.g. 0.25,0.5")])
def test_marks_outside_the_budget_are_usage_errors(capsys, marks, message):
    recipe = load_recipe()
    with pytest.raises(SystemExit) as exit_info:
        recipe.parse_args(["--tmp_dir=t", "--work_dir=w", f"--marks={marks}"])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_a_mark_takes_the_checkpoints_saved_by_its_step_or_minute():
    recipe = load_recipe()
    # (timestamp, prefix): a checkpoint every 60 steps, 30 s apart, from t = 1000 s.
    checkpoints = [(1000.0 + 30 * i, f"m/ckpt-{60 * i}") for i in range(1, 11)]
    by_steps = recipe.parse_args(["--tmp_dir=t", "--work_dir=w", "--train_steps=600"])
    by_steps.start = 1000.0
    assert recipe.available_at(checkpoints, 0.25, by_steps)[-1][1] == "m/ckpt-120"  # <= 150
    assert recipe.available_at(checkpoints, 0.5, by_steps)[-1][1] == "m/ckpt-300"
    by_minutes = recipe.parse_args(["--tmp_dir=t", "--work_dir=w", "--train_minutes=10"])
    by_minutes.start = 1000.0
    # 0.25 of 10 minutes: 150 s after the start, the 5th checkpoint's time.
    assert recipe.available_at(checkpoints, 0.25, by_minutes)[-1][1] == "m/ckpt-300"


def test_the_budget_defaults_to_the_hparams_set_and_batch_size_is_given_once():
    recipe = load_recipe()
    args = recipe.parse_args(["--tmp_dir=t", "--work_dir=w",
                              "--hparams_set=transformer_multi30k_wu2021"])
    recipe.resolve_budget(args)
    assert (args.train_steps, args.batch_size, args.hparams) == (8000, 8192, "")
    args = recipe.parse_args(["--tmp_dir=t", "--work_dir=w", "--train_steps=100",
                              "--batch_size=2048", "--hparams=label_smoothing=0.2"])
    recipe.resolve_budget(args)
    assert (args.train_steps, args.batch_size) == (100, 2048)
    assert args.hparams == "label_smoothing=0.2,batch_size=2048"
    args = recipe.parse_args(["--tmp_dir=t", "--work_dir=w", "--batch_size=2048",
                              "--hparams=batch_size=1024"])
    with pytest.raises(SystemExit, match="batch_size given twice"):
        recipe.resolve_budget(args)


def test_early_stop_ends_at_the_patience_th_checkpoint_without_a_lower_dev_loss():
    recipe = load_recipe()
    checkpoints = [(float(i), f"m/ckpt-{76 * i}") for i in range(1, 9)]
    # Best at ckpt-228 (2.9); ckpt-304 ties it (not lower), then higher: with patience 3
    # the third checkpoint in a row without a lower loss is ckpt-456.
    losses = dict(zip([f"ckpt-{76 * i}" for i in range(1, 9)],
                      [3.5, 3.1, 2.9, 2.9, 3.0, 3.05, 2.8, 2.7]))
    kept = recipe.early_stop(checkpoints, losses, patience=3)
    assert [p for _, p in kept][-1] == "m/ckpt-456" and len(kept) == 6
    # One more of patience and the lower loss at ckpt-532 resets the count: no stop.
    assert recipe.early_stop(checkpoints, losses, patience=4) == checkpoints
    assert [p for _, p in recipe.early_stop(checkpoints, losses, patience=1)][-1] == "m/ckpt-304"


def test_negative_patience_is_a_usage_error(capsys):
    recipe = load_recipe()
    with pytest.raises(SystemExit):
        recipe.parse_args(["--tmp_dir=t", "--work_dir=w", "--patience=-1"])
    assert "--patience must be >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--subword_samples=two", "--subword_alpha=x"])
def test_subword_flags_take_t2t_datagens_types(capsys, flag):
    """The recipe declares the sampling flags with t2t-datagen's own function: a value of
    the wrong type stops the recipe at once, before any command runs."""
    recipe = load_recipe()
    with pytest.raises(SystemExit) as exit_info:
        recipe.parse_args(["--tmp_dir=t", "--work_dir=w", flag])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"argument {flag.split('=')[0]}: invalid" in err


def test_lc_norm_tok_prepares_the_text_and_a_problem_with_a_joint_bpe_vocabulary(
        shared_data, tmp_path, capsys):
    """--preprocess=lc_norm_tok's data step on a slice: the prepared files (the first
    20 lines of test_2016_flickr.de hold 276 tokens in Multi30k's tok file), one BPE
    vocabulary of the merges asked for, and t2t-datagen's problem defined by the
    prepared files (the trainer, decoder and scoring run on it as on the raw problem)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for stem, count in {"train": 300, "val": 20, "test_2016_flickr": 20}.items():
        for lang in ("en", "de"):
            with open(shared_data / "multi30k" / f"{stem}.{lang}", encoding="utf-8") as f:
                (raw / f"{stem}.{lang}").write_text("".join(next(f) for _ in range(count)),
                                                    encoding="utf-8")
    recipe = load_recipe()
    work = tmp_path / "work"
    args = recipe.parse_args([f"--tmp_dir={raw}", f"--work_dir={work}",
                              "--preprocess=lc_norm_tok", "--bpe_merges=200"])
    assert args.problem == "translate_ende_multi30k_lc_norm_tok"
    assert args.text_dir == str(work / "prepared")
    (work / "score").mkdir(parents=True)
    recipe.generate_data(args, str(work / "score" / "recipe.log"))

    prepared = (work / "prepared" / "test_2016_flickr.de").read_text(encoding="utf-8")
    assert len(prepared.split("\n")) == 21 and len(prepared.split()) == 276
    assert prepared.split("\n")[19] == ("zwei männer tun so als seien sie statuen , während "
                                        "frauen ihnen zusehen .")
    out = capsys.readouterr().out
    sizes = re.findall(r"joint BPE bpe200\.model, ([0-9]+) ids", out)
    assert len(sizes) == 1, out
    vocab = work / "data" / f"translate_ende_multi30k_lc_norm_tok.sp{sizes[0]}.model"
    assert vocab.read_bytes() == (work / "prepared" / "bpe200.model").read_bytes()
    log = (work / "score" / "recipe.log").read_text(encoding="utf-8")
    for part in ("train: 300 examples in 4 shard(s)", "dev: 20 examples", "test: 20 examples"):
        assert part in log, log


def test_lc_norm_tok_bleu_splits_on_whitespace_only(tmp_path):
    """Their protocol: the prepared reference, no tokenization of sacreBLEU's own (13a
    would split `&apos;` off a word and score the first line as a match)."""
    commands = recipe_part("multi30k.commands")
    (tmp_path / "hyp").write_text("it&apos;s\nein hund läuft .\n", encoding="utf-8")
    (tmp_path / "ref").write_text("it &apos;s\nein hund läuft .\n", encoding="utf-8")
    score, signature = commands.prepared_bleu(str(tmp_path / "hyp"), str(tmp_path / "ref"),
                                              str(tmp_path / "log"))
    # 5 hypothesis tokens against 6: 1-grams 4/5, then all of line 2's 3, 2 and 1
    # n-grams; BP = exp(1 - 6/5): 100 * exp(-0.2) * 0.8^(1/4) = 77.43
    assert (score, signature.split("|")[3]) == (77.43, "tok:none")


@pytest.mark.parametrize("flags, message", [
    (["--bpe_merges=5000"], "--bpe_merges: only with --preprocess=lc_norm_tok"),
    (["--preprocess=lc_norm_tok", "--bpe_merges=0"], "--bpe_merges must be >= 1, got 0"),
    (["--preprocess=lc_norm_tok", "--subword_samples=4"],
     "--subword_samples: the BPE vocabulary of --preprocess=lc_norm_tok has no n-best")])
def test_preprocess_flags_out_of_place_are_usage_errors(capsys, flags, message):
    recipe = load_recipe()
    with pytest.raises(SystemExit) as exit_info:
        recipe.parse_args(["--tmp_dir=t", "--work_dir=w", *flags])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
