"""Gradient accumulation: k micro-batches make the same update as one batch of their tokens."""

import keras
import numpy as np
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.train.trainer import Trainer, TrainOptions
from toy_data import REVERSE_VOCAB, reverse_examples


def _padded(examples, width):
    return np.array([[list(x) + [0] * (width - len(x)) for x in pair] for pair in examples],
                    np.int32)  # [N, 2, width]


def _one_sgd_step(tmp_path, name, tokens_per_step, batch_rows, examples):
    # batch_size=16 tokens per micro-batch in the accumulation count; dropout off.
    hp = registry.hparams("transformer_tiny").parse(
        "hidden_size=32,filter_size=64,batch_size=16,layer_prepostprocess_dropout=0.0,"
        f"attention_dropout=0.0,relu_dropout=0.0,tokens_per_step={tokens_per_step}")
    width = max(len(x) for pair in examples for x in pair)
    data = _padded(examples, width)

    def dataset_fn(input_context, seed):
        return tf.data.Dataset.from_tensor_slices(
            {"inputs": data[:, 0], "targets": data[:, 1]}).batch(batch_rows).repeat()

    keras.utils.set_random_seed(0)
    model = t2t_lite.build_model(hp, REVERSE_VOCAB)
    options = TrainOptions(train_steps=1, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0)
    trainer = Trainer(hp, model, keras.optimizers.SGD(learning_rate=0.5), dataset_fn,
                      str(tmp_path / name), options)
    result = trainer.train()
    return trainer.accumulate, result.loss, [v.numpy() for v in model.trainable_variables]


def test_two_micro_batches_equal_one_batch_of_the_same_tokens(tmp_path):
    # Rows of different lengths, so the two micro-batches hold different token counts
    # and a per-micro-batch mean (instead of the global token mean) would differ.
    examples = reverse_examples(6, 5)
    one_k, one_loss, one = _one_sgd_step(tmp_path, "one", 0, 6, examples)
    two_k, two_loss, two = _one_sgd_step(tmp_path, "two", 32, 3, examples)
    assert (one_k, two_k) == (1, 2)
    assert abs(one_loss - two_loss) < 1e-6
    moved = max(float(np.abs(a - b).max()) for a, b in zip(one, _initial(examples)))
    assert moved > 1e-3  # the step did change the weights
    for a, b in zip(one, two):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=1e-5)


def _initial(examples):
    hp = registry.hparams("transformer_tiny").parse("hidden_size=32,filter_size=64")
    keras.utils.set_random_seed(0)
    return [v.numpy() for v in t2t_lite.build_model(hp, REVERSE_VOCAB).trainable_variables]
