"""The learning-rate schedule and optimizer of section 5.3."""

import keras
import tensorflow as tf

from t2t_lite.hparams_lib import HParams


@keras.saving.register_keras_serializable(package="t2t_lite")
class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """lrate = multiplier * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5).

    `step` counts optimizer updates from 1: Keras passes the number of updates
    already applied (0 for the first), so the schedule evaluates at that + 1,
    and the first update uses the paper's step 1.
    """

    def __init__(self, hidden_size: int, warmup_steps: int, multiplier: float = 1.0):
        self.hidden_size = hidden_size
        self.warmup_steps = warmup_steps
        self.multiplier = multiplier

    def __call__(self, iterations):
        step = tf.cast(iterations, tf.float32) + 1.0
        return (self.multiplier * self.hidden_size ** -0.5 *
                tf.minimum(tf.math.rsqrt(step), step * self.warmup_steps ** -1.5))

    def get_config(self):
        return {"hidden_size": self.hidden_size, "warmup_steps": self.warmup_steps,
                "multiplier": self.multiplier}


def learning_rate_schedule(hp: HParams):
    """The schedule named by `hp.learning_rate_schedule` ("noam" or "constant")."""
    if hp.learning_rate_schedule == "noam":
        return NoamSchedule(hp.hidden_size, hp.learning_rate_warmup_steps, hp.learning_rate)
    return hp.learning_rate


def make_optimizer(hp: HParams) -> keras.optimizers.Optimizer:
    """Adam with the set's betas and epsilon, its schedule and optional global-norm clipping."""
    return keras.optimizers.Adam(
        learning_rate=learning_rate_schedule(hp),
        beta_1=hp.optimizer_adam_beta1, beta_2=hp.optimizer_adam_beta2,
        epsilon=hp.optimizer_adam_epsilon,
        global_clipnorm=hp.clip_grad_norm or None)
