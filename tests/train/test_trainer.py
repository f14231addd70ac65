"""The training loop: resume, accumulation, NaN, model-dir conflicts, strategies."""

import os
import re

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.errors import T2TError

from toy_data import REVERSE_PROBLEM, REVERSE_VOCAB, reverse_examples, write_shards

PROBLEM, VOCAB = REVERSE_PROBLEM, REVERSE_VOCAB


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("reverse_data"))
    write_shards(path, reverse_examples(600, 0), num_shards=2, split="train", problem=PROBLEM)
    write_shards(path, reverse_examples(40, 1), num_shards=1, split="dev", problem=PROBLEM)
    return path


def tiny_hparams(overrides: str = ""):
    return registry.hparams("transformer_tiny").parse(
        "batch_size=256,max_length=16,learning_rate_warmup_steps=20,tokens_per_step=512,"
        "hidden_size=32,filter_size=64" + ("," + overrides if overrides else ""))


def train(data_dir, output_dir, steps, hp=None, **options):
    from t2t_lite.train.experiment import make_trainer
    from t2t_lite.train.trainer import TrainOptions
    opts = TrainOptions(**{**dict(train_steps=steps, eval_every=0, log_every=1000,
                                  save_checkpoints_steps=0, save_checkpoints_secs=0,
                                  eval_bleu_sentences=0), **options})
    trainer = make_trainer(hp or tiny_hparams(), PROBLEM, data_dir, str(output_dir), VOCAB, opts)
    result = trainer.train()
    return trainer, result


def weights(trainer):
    return [v.numpy() for v in trainer.model.weights]


def test_accumulation_reaches_tokens_per_step():
    from t2t_lite.train.trainer import accumulation_steps
    hp = registry.hparams("transformer_base")
    assert accumulation_steps(hp, 1) == 7   # ceil(25000 / 4096)
    assert accumulation_steps(hp, 8) == 1
    assert accumulation_steps(hp.parse("tokens_per_step=0"), 1) == 1


def test_interrupted_and_resumed_equals_uninterrupted(data_dir, tmp_path):
    full, full_result = train(data_dir, tmp_path / "full", 12)
    train(data_dir, tmp_path / "resumed", 5)
    resumed, resumed_result = train(data_dir, tmp_path / "resumed", 12)
    assert resumed.step == full.step == 12
    assert resumed_result.loss == pytest.approx(full_result.loss, rel=1e-6)
    for a, b in zip(weights(full), weights(resumed)):
        np.testing.assert_array_equal(a, b)  # bit for bit on one device
    # Checkpoints of both runs exist at the end step.
    assert os.path.exists(tmp_path / "resumed" / "ckpt-12.index")


def test_a_listed_checkpoint_is_never_rewritten(data_dir, tmp_path, monkeypatch):
    """TensorFlow rewrites ckpt-N.index in place: saving a step twice (the last
    periodic save, then the final one; or a resumed run at its end step) would
    show a reader of that listed checkpoint a half-written index."""
    import tensorflow as tf
    saved = []
    real_save = tf.train.CheckpointManager.save

    def save(manager, checkpoint_number=None, **kwargs):
        saved.append(checkpoint_number)
        return real_save(manager, checkpoint_number=checkpoint_number, **kwargs)

    monkeypatch.setattr(tf.train.CheckpointManager, "save", save)
    train(data_dir, tmp_path / "m", 4, save_checkpoints_steps=2)
    assert saved == [2, 4]
    train(data_dir, tmp_path / "m", 4, save_checkpoints_steps=2)  # resumed at its end step
    assert saved == [2, 4]


def test_dev_loss_falls_and_metrics_are_reported(data_dir, tmp_path):
    _, first = train(data_dir, tmp_path / "m", 2)
    _, later = train(data_dir, tmp_path / "m", 120)
    assert set(later.eval_metrics) == {"loss", "perplexity", "accuracy"}
    assert later.eval_metrics["loss"] < first.eval_metrics["loss"] - 0.3
    assert os.listdir(tmp_path / "m" / "eval")  # TensorBoard event files


def test_time_limit_stops_saves_and_evaluates(data_dir, tmp_path, capfd):
    trainer, result = train(data_dir, tmp_path / "m", 10_000, max_train_minutes=1e-6)
    assert result.step == 1 and not result.interrupted  # the limit is checked after each step
    assert "loss" in result.eval_metrics
    assert os.path.exists(tmp_path / "m" / "ckpt-1.index")
    out = capfd.readouterr().out
    assert "Time limit of 1e-06 minutes reached at step 1." in out
    # The final evaluation is announced and reports its progress.
    assert "Final evaluation at step 1 on the dev split." in out
    assert re.search(r"^eval: dev loss \d+ batches, \d+ s$", out, re.M), out


def test_negative_training_options_are_one_line_errors():
    from t2t_lite.train.trainer import TrainOptions
    with pytest.raises(T2TError, match="must not be negative: log_every, max_train_minutes"):
        TrainOptions(log_every=-1, max_train_minutes=-2.0)
    assert TrainOptions(keep_checkpoint_max=0).keep_checkpoint_max == 0


def test_nan_loss_stops_with_a_clear_error(data_dir, tmp_path):
    hp = tiny_hparams("learning_rate_schedule=constant,learning_rate_constant=1e25,"
                      "optimizer_adam_epsilon=1e-30")
    with pytest.raises(T2TError, match=r"Loss became (nan|inf) at step \d+; stopping"):
        train(data_dir, tmp_path / "nan", 50, hp=hp)


def test_trainer_takes_an_in_memory_dataset(tmp_path):
    """The Trainer needs no shards: any dataset function of (input_context, seed)."""
    import tensorflow as tf

    import t2t_lite
    from t2t_lite.train.schedule import make_optimizer
    from t2t_lite.train.trainer import Trainer, TrainOptions
    examples = reverse_examples(64, 2)
    width = max(len(x) for pair in examples for x in pair)
    padded = np.array([[list(x) + [0] * (width - len(x)) for x in pair] for pair in examples],
                      np.int32)  # [64, 2, width]
    seeds = []

    def dataset_fn(input_context, seed):
        seeds.append(seed)
        data = {"inputs": padded[:, 0], "targets": padded[:, 1]}
        return tf.data.Dataset.from_tensor_slices(data).shuffle(64, seed=seed).repeat().batch(16)

    hp = tiny_hparams("tokens_per_step=0")
    model = t2t_lite.build_model(hp, VOCAB)
    options = TrainOptions(train_steps=30, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0, random_seed=7)
    trainer = Trainer(hp, model, make_optimizer(hp), dataset_fn, str(tmp_path / "m"), options)
    # Its iterator runs without tf.data's autotune thread, which a deleted iterator
    # waits for (pipeline.without_autotune_thread).
    assert trainer.dataset.options().autotune.enabled is False
    first = float(trainer._train_step(trainer.iterator)[0])
    result = trainer.train()
    assert seeds == [7] and result.step == 30 and result.eval_metrics == {}
    assert result.loss < first - 0.5
    assert os.path.exists(tmp_path / "m" / "ckpt-30.index")


def test_model_dir_is_self_describing_and_conflicts_are_errors(tmp_path):
    from t2t_lite import model_dir, model_dir_writer
    vocab = tmp_path / "v.model"
    vocab.write_bytes(b"proto")
    out = str(tmp_path / "m")
    hp = tiny_hparams()

    def prepare(hparams, problem):  # as the trainer: the run the directory holds, if any
        model_dir_writer.prepare(out, hparams, problem, str(vocab), 30,
                                 model_dir_writer.existing_run(out))

    prepare(hp, PROBLEM)
    written = model_dir.ModelDir.open(out)
    assert written.hparams == hp
    assert written.info == {"problem": PROBLEM, "vocab_file": "v.model", "vocab_size": 30}
    prepare(hp, PROBLEM)  # same run: fine
    with pytest.raises(T2TError, match="was trained with other hparams.*'num_heads': \\(4, 2\\)"):
        prepare(hp.parse("num_heads=2"), PROBLEM)
    with pytest.raises(T2TError, match="was trained on"):
        prepare(hp, "other_problem")
    vocab.write_bytes(b"PROTO")  # same name and size, other pieces (learned again)
    with pytest.raises(T2TError) as refused:
        prepare(hp, PROBLEM)
    assert str(refused.value) == (
        f"{out} was trained with another vocabulary than {vocab} (t2t-datagen learns it again "
        f"when its train files change); use a new --output_dir, or encode the data with the "
        f"model's: t2t-datagen --vocab_from={out} --data_dir=<a new directory>.")
    with pytest.raises(T2TError, match="not a t2t-lite model directory"):
        model_dir.ModelDir.open(str(tmp_path))


def test_mirrored_two_replicas_equal_one_device_on_the_same_global_batch(mirrored_strategy):
    import keras
    import tensorflow as tf

    import t2t_lite
    from t2t_lite.train.schedule import make_optimizer
    from t2t_lite.train.step import apply_global_mean, replica_gradients

    hp = registry.hparams("transformer_tiny").parse("hidden_size=32,filter_size=64,"
                                                    "layer_prepostprocess_dropout=0.0")
    rng = np.random.RandomState(0)
    inputs = rng.randint(3, 30, size=(4, 6)).astype("int32")
    inputs[:, -1] = 1
    targets = rng.randint(3, 30, size=(4, 5)).astype("int32")
    targets[2:, 3:] = 0

    def run(strategy):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = t2t_lite.build_model(hp, 30)
            optimizer = make_optimizer(hp)
            optimizer.build(model.trainable_variables)

        def replica_step(batch):
            loss_sum, tokens, grads = replica_gradients(model, optimizer, hp, batch)
            apply_global_mean(model, optimizer, grads, tokens)
            return loss_sum / tf.distribute.get_replica_context().all_reduce("sum", tokens)

        n = strategy.num_replicas_in_sync

        def value_fn(ctx):
            i = ctx.replica_id_in_sync_group
            per = 4 // n
            return {"inputs": tf.constant(inputs[i * per:(i + 1) * per]),
                    "targets": tf.constant(targets[i * per:(i + 1) * per])}
        batch = strategy.experimental_distribute_values_from_function(value_fn)
        loss = strategy.reduce(
            "sum", tf.function(lambda b: strategy.run(replica_step, (b,)))(batch), axis=None)
        return float(loss), [v.numpy() for v in model.trainable_variables]

    loss1, w1 = run(tf.distribute.OneDeviceStrategy("/cpu:0"))
    loss2, w2 = run(mirrored_strategy())
    assert abs(loss1 - loss2) < 1e-5, (loss1, loss2)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(w1, w2))
    assert diff < 1e-6, diff
