"""--precision=mixed_float16 on the CPU (float16 arithmetic works there, slowly):
dynamic loss scaling skips overflowing steps, grows back, and survives a resume."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.train.experiment import make_trainer
from t2t_lite.train.trainer import Trainer, TrainOptions
from toy_data import REVERSE_PROBLEM, REVERSE_VOCAB, reverse_examples, write_shards

HPARAMS = "hidden_size=32,filter_size=64,batch_size=256,max_length=16,tokens_per_step=0"


@pytest.fixture
def mixed_float16():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    yield
    keras.config.set_dtype_policy(previous)


def _trainer(output_dir, optimizer, train_steps=10):
    hp = registry.hparams("transformer_tiny").parse(HPARAMS)
    examples = reverse_examples(64, 3)
    data = np.array([[list(x) + [0] * (11 - len(x)) for x in pair] for pair in examples],
                    np.int32)

    def dataset_fn(input_context, seed):
        return tf.data.Dataset.from_tensor_slices(
            {"inputs": data[:, 0], "targets": data[:, 1]}).repeat().batch(16)

    keras.utils.set_random_seed(0)
    model = t2t_lite.build_model(hp, REVERSE_VOCAB)
    options = TrainOptions(train_steps=train_steps, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0)
    return Trainer(hp, model, optimizer, dataset_fn, str(output_dir), options)


def _weights(trainer):
    return [v.numpy() for v in trainer.model.trainable_variables]


def test_overflow_is_skipped_then_the_scale_grows_back_and_is_restored(mixed_float16, tmp_path):
    optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.1), initial_scale=2.0 ** 60, dynamic_growth_steps=2)
    trainer = _trainer(tmp_path / "m", optimizer)
    assert trainer.model.decoder_layers[0].feed_forward.compute_dtype == "float16"
    before = _weights(trainer)

    # 2^60 times the loss overflows float16 in the backward pass: no update, scale halved.
    trainer._train_step(trainer.iterator)
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** 59
    assert trainer.step == 0
    for a, b in zip(before, _weights(trainer)):
        np.testing.assert_array_equal(a, b)

    # From a scale that fits, every step applies; after dynamic_growth_steps = 2 good
    # steps in a row the scale doubles.
    optimizer.dynamic_scale.assign(2.0 ** 8)
    trainer._train_step(trainer.iterator)
    assert (trainer.step, float(optimizer.dynamic_scale.numpy())) == (1, 2.0 ** 8)
    trainer._train_step(trainer.iterator)
    assert (trainer.step, float(optimizer.dynamic_scale.numpy())) == (2, 2.0 ** 9)
    trainer._train_step(trainer.iterator)
    assert (trainer.step, int(optimizer.step_counter.numpy())) == (3, 1)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(before, _weights(trainer)))
    trainer._save()

    # A resumed run restores the scale and the count of good steps.
    resumed_optimizer = keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.1), initial_scale=2.0 ** 3, dynamic_growth_steps=2)
    resumed = _trainer(tmp_path / "m", resumed_optimizer, train_steps=3)
    resumed.train()  # restores step 3; nothing left to train
    assert resumed.step == 3
    assert float(resumed_optimizer.dynamic_scale.numpy()) == 2.0 ** 9
    assert int(resumed_optimizer.step_counter.numpy()) == 1
    for a, b in zip(_weights(trainer), _weights(resumed)):
        np.testing.assert_array_equal(a, b)


def test_a_tiny_model_learns_in_mixed_float16(mixed_float16, tmp_path):
    """Why it trains 300 steps: its point is that float16 arithmetic with dynamic loss
    scaling still learns (the dev loss falls by more than 1 nat), which takes a few
    hundred steps of the reversal task; no shared model is float16."""
    data_dir = str(tmp_path / "data")
    write_shards(data_dir, reverse_examples(600, 0), num_shards=2, split="train",
                 problem=REVERSE_PROBLEM)
    write_shards(data_dir, reverse_examples(40, 1), num_shards=1, split="dev",
                 problem=REVERSE_PROBLEM)
    hp = registry.hparams("transformer_tiny").parse(HPARAMS + ",learning_rate_warmup_steps=50")
    options = TrainOptions(train_steps=300, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0,
                           eval_bleu_sentences=0)
    trainer = make_trainer(hp, REVERSE_PROBLEM, data_dir, str(tmp_path / "m"), REVERSE_VOCAB,
                           options)
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    first = trainer.evaluate()["loss"]
    result = trainer.train()
    assert result.step == 300 and np.isfinite(result.loss)
    assert result.eval_metrics["loss"] < first - 1.0, (first, result.eval_metrics)
