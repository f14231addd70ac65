"""The compiled training step: forward, label-smoothed loss, backward, Adam update."""

from typing import Callable, Dict

import keras
import tensorflow as tf

from t2t_lite.hparams_lib import HParams
from t2t_lite.train.loss import smoothed_cross_entropy


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, hp: HParams,
                    jit_compile: bool = False) -> Callable[[Dict[str, tf.Tensor]], tf.Tensor]:
    """Returns `step(batch) -> mean loss per real target token`, a `tf.function`.

    Args:
      model: a built Transformer.
      optimizer: e.g. from `t2t_lite.train.schedule.make_optimizer`.
      hp: its hparams (label smoothing).
      jit_compile: compile the whole step with XLA.
    """
    if not optimizer.built:
        optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def step(batch):
        with tf.GradientTape() as tape:
            logits = model(batch, training=True)  # [B, T, V] float32
            loss_sum, num_tokens = smoothed_cross_entropy(logits, batch["targets"],
                                                          hp.label_smoothing)
            loss = loss_sum / tf.maximum(num_tokens, 1.0)
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return step
