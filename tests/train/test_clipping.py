"""clip_grad_norm clips the whole step's gradient: all replicas, all micro-batches.

Plain SGD, because Adam's update hardly depends on the gradient's scale and
would hide a wrongly scaled or wrongly clipped gradient.
"""

import keras
import numpy as np
import tensorflow as tf

import t2t_lite
from t2t_lite import registry
from t2t_lite.train.loss import smoothed_cross_entropy

VOCAB = 30
LEARNING_RATE, CLIP = 0.5, 0.05


def clipped_hparams():
    return registry.hparams("transformer_tiny").parse(
        f"hidden_size=32,filter_size=64,layer_prepostprocess_dropout=0.0,clip_grad_norm={CLIP}")


def toy_batch(rows: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    inputs = rng.randint(3, VOCAB, size=(rows, 6)).astype("int32")
    inputs[:, -1] = 1
    targets = rng.randint(3, VOCAB, size=(rows, 5)).astype("int32")
    targets[rows // 2:, 3:] = 0  # padding: micro-batches of unequal token counts
    return {"inputs": inputs, "targets": targets}


def test_one_sgd_step_moves_the_weights_by_lr_times_the_clipped_mean_gradient():
    from t2t_lite.train.step import make_train_step
    hp = clipped_hparams()
    batch = {k: tf.constant(v) for k, v in toy_batch(4).items()}
    keras.utils.set_random_seed(0)
    model = t2t_lite.build_model(hp, VOCAB)
    before = [v.numpy() for v in model.trainable_variables]
    with tf.GradientTape() as tape:  # the mean loss's gradient, computed here
        loss_sum, tokens = smoothed_cross_entropy(model(batch, training=True), batch["targets"],
                                                  hp.label_smoothing)
        mean = loss_sum / tokens
    grads = [tf.convert_to_tensor(g).numpy() for g in tape.gradient(mean, model.trainable_variables)]
    norm = np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
    assert norm > 4 * CLIP  # the limit binds

    step = make_train_step(model, keras.optimizers.SGD(LEARNING_RATE), hp)
    step(batch)
    for b, g, v in zip(before, grads, model.trainable_variables):
        np.testing.assert_allclose(v.numpy(), b - LEARNING_RATE * CLIP / norm * g,
                                   rtol=1e-4, atol=1e-7)


def test_loss_scaling_does_not_change_the_clipped_update():
    """Under a LossScaleOptimizer the gradients are still scaled when clipped."""
    from t2t_lite.train.step import make_train_step
    hp = clipped_hparams()
    batch = {k: tf.constant(v) for k, v in toy_batch(4).items()}
    results = []
    for optimizer in (keras.optimizers.SGD(LEARNING_RATE),
                      keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(LEARNING_RATE),
                                                          initial_scale=2.0 ** 10)):
        keras.utils.set_random_seed(0)
        model = t2t_lite.build_model(hp, VOCAB)
        make_train_step(model, optimizer, hp)(batch)
        results.append([v.numpy() for v in model.trainable_variables])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_micro_batches_with_clipping_update_like_one_batch_of_the_same_tokens(tmp_path):
    """Two accumulated micro-batches of 4 sentences equal one batch of the 8, step after step."""
    from t2t_lite.train.trainer import Trainer, TrainOptions
    data = toy_batch(8)

    def run(name, tokens_per_step, batch_rows):
        hp = clipped_hparams().replace(batch_size=256, tokens_per_step=tokens_per_step)
        keras.utils.set_random_seed(0)
        model = t2t_lite.build_model(hp, VOCAB)

        def dataset_fn(input_context, seed):
            return tf.data.Dataset.from_tensor_slices(data).batch(batch_rows).repeat()

        options = TrainOptions(train_steps=3, eval_every=0, save_checkpoints_steps=0,
                               save_checkpoints_secs=0)
        trainer = Trainer(hp, model, keras.optimizers.SGD(LEARNING_RATE), dataset_fn,
                          str(tmp_path / name), options)
        for _ in range(3):
            trainer._train_step(trainer.iterator)
        return trainer.accumulate, trainer.step, [v.numpy() for v in model.trainable_variables]

    accumulate, steps, accumulated = run("micro", 512, 4)
    assert (accumulate, steps) == (2, 3)
    accumulate, steps, whole = run("whole", 0, 8)
    assert (accumulate, steps) == (1, 3)
    for a, b in zip(accumulated, whole):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_two_replicas_clip_like_one_device_after_three_sgd_steps(mirrored_strategy):
    from t2t_lite.train.step import apply_global_mean, replica_gradients
    hp = registry.hparams("transformer_tiny").parse(
        "hidden_size=32,filter_size=64,layer_prepostprocess_dropout=0.0")
    data = toy_batch(4)

    def run(strategy, ours):
        # ours: clip_grad_norm in apply_global_mean; else Keras' global_clipnorm (per replica).
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = t2t_lite.build_model(hp, VOCAB)
            optimizer = keras.optimizers.SGD(LEARNING_RATE, global_clipnorm=None if ours else CLIP)
            optimizer.build(model.trainable_variables)

        def replica_step(batch):
            loss_sum, tokens, grads = replica_gradients(model, optimizer, hp, batch)
            apply_global_mean(model, optimizer, grads, tokens, CLIP if ours else 0.0)

        n = strategy.num_replicas_in_sync

        def value_fn(ctx):
            i, per = ctx.replica_id_in_sync_group, 4 // n
            return {name: tf.constant(value[i * per:(i + 1) * per])
                    for name, value in data.items()}
        batch = strategy.experimental_distribute_values_from_function(value_fn)
        step = tf.function(lambda b: strategy.run(replica_step, (b,)))
        start = [v.numpy() for v in model.trainable_variables]
        for _ in range(3):
            step(batch)
        assert int(optimizer.iterations.numpy()) == 3
        return start, [v.numpy() for v in model.trainable_variables]

    def max_diff(a, b):
        return max(float(np.abs(x - y).max()) for x, y in zip(a, b))

    one_device = tf.distribute.OneDeviceStrategy("/cpu:0")
    two = mirrored_strategy()
    start, w1 = run(one_device, True)
    _, w2 = run(two, True)
    moved = np.sqrt(sum(float(((a - b) ** 2).sum()) for a, b in zip(w1, start)))
    assert LEARNING_RATE * CLIP < moved <= 3 * LEARNING_RATE * CLIP * 1.0001, moved  # binds
    diff = max_diff(w1, w2)
    assert diff < 1e-6, diff
    # Keras' own clipping clips each replica's half before summing: it differs.
    _, k1 = run(one_device, False)
    _, k2 = run(two, False)
    keras_diff = max_diff(k1, k2)
    assert keras_diff > 100 * max(diff, 1e-8), (keras_diff, diff)
