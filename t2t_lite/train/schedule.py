"""tensor2tensor's learning-rate schedules and the optimizer (section 5.3).

The learning rate is t2t's `learning_rate_schedule`: a product of named
factors ("constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size") or "legacy",
with t2t's hparams and meanings (`t2t_lite.hparams_lib.LEARNING_RATE_FACTORS`).

Step convention. tensor2tensor computes the rate of an update at its global
step before that update, i.e. the number of updates already applied: 0 for
the first update. Keras calls a schedule with `optimizer.iterations`, which
is the same number, so `T2TSchedule(s)` is t2t's rate at global step s with
no offset, and the first update uses s = 0. The legacy noam formula adds 1
itself, so with it the first update uses the paper's step 1
(d^-0.5 * 1 * w^-1.5); with "linear_warmup" the first update's rate is 0,
as in t2t.
"""

import math

import keras
import tensorflow as tf

from t2t_lite.hparams_lib import HParams, learning_rate_factors


def _constant(s, step):
    return s.learning_rate_constant


def _linear_warmup(s, step):
    return tf.minimum(1.0, step / s.learning_rate_warmup_steps)


def _linear_decay(s, step):
    return tf.clip_by_value((s.train_steps - step) / s.learning_rate_decay_steps, 0.0, 1.0)


def _cosdecay(s, step):  # OpenAI GPT's: 1 during warm-up, then a cosine of the whole step
    decayed = 0.5 * (1.0 + tf.cos(math.pi * step / s.learning_rate_decay_steps))
    return tf.where(step <= s.learning_rate_warmup_steps, 1.0, decayed)


def _single_cycle_cos_decay(s, step):  # from 1 at the end of warm-up to 0 at train_steps
    after_warmup = tf.maximum(step, s.learning_rate_warmup_steps) - s.learning_rate_warmup_steps
    period = s.train_steps - s.learning_rate_warmup_steps
    return 0.5 + 0.5 * tf.cos(math.pi * after_warmup / period)


def _multi_cycle_cos_decay(s, step):
    after_warmup = tf.maximum(step, s.learning_rate_warmup_steps) - s.learning_rate_warmup_steps
    return 0.5 + 0.5 * tf.cos(math.pi * after_warmup / s.learning_rate_decay_steps)


def _rsqrt_decay(s, step):
    return tf.math.rsqrt(tf.maximum(step, s.learning_rate_warmup_steps))


def _rsqrt_normalized_decay(s, step):
    return (s.learning_rate_warmup_steps ** 0.5 *
            tf.math.rsqrt(tf.maximum(step, s.learning_rate_warmup_steps)))


def _exp_decay(s, step):
    periods = tf.maximum((step - s.learning_rate_warmup_steps) / s.learning_rate_decay_steps, 0.0)
    if s.learning_rate_decay_staircase:
        periods = tf.floor(periods)
    return tf.pow(s.learning_rate_decay_rate, periods)


def _rsqrt_hidden_size(s, step):
    return s.hidden_size ** -0.5


def _legacy(s, step):
    # t2t's 0.002 "optimizer correction" for Adam, folded with the scheme's
    # constants in Python floats: with learning_rate 0.1 and "noam" the
    # multiplier is exactly 1.0, the paper's formula.
    if s.learning_rate_decay_scheme == "noam":
        scale = 5000.0 * 0.002 * s.learning_rate * s.hidden_size ** -0.5
        paper_step = step + 1.0
        return scale * tf.minimum(tf.math.rsqrt(paper_step),
                                  paper_step * s.learning_rate_warmup_steps ** -1.5)
    # "none": exponential warm-up from 1% over w steps, then constant.
    scale = 0.002 * s.learning_rate
    if not s.learning_rate_warmup_steps:
        return scale
    warmup = 0.01 ** ((s.learning_rate_warmup_steps - step) / s.learning_rate_warmup_steps)
    return scale * tf.where(step < s.learning_rate_warmup_steps, warmup, 1.0)


# name -> f(schedule, step: float32 scalar) -> factor; the names are
# hparams_lib.LEARNING_RATE_FACTORS (tests/train/test_schedule.py checks both lists agree).
FACTORS = {
    "constant": _constant,
    "linear_warmup": _linear_warmup,
    "linear_decay": _linear_decay,
    "cosdecay": _cosdecay,
    "single_cycle_cos_decay": _single_cycle_cos_decay,
    "multi_cycle_cos_decay": _multi_cycle_cos_decay,
    "rsqrt_decay": _rsqrt_decay,
    "rsqrt_normalized_decay": _rsqrt_normalized_decay,
    "exp_decay": _exp_decay,
    "rsqrt_hidden_size": _rsqrt_hidden_size,
    "legacy": _legacy,
}


@keras.saving.register_keras_serializable(package="t2t_lite")
class T2TSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """tensor2tensor's learning rate: the product of `learning_rate_schedule`'s factors.

    Called with Keras' `iterations` (updates already applied), which is t2t's
    global step: no offset (see the module docstring). Build it from hparams
    with `T2TSchedule.from_hparams`; the arguments are the HParams fields of
    the same names.

    Raises:
      T2TError: an unknown factor in `learning_rate_schedule`.
    """

    def __init__(self, *, learning_rate_schedule: str, learning_rate_constant: float,
                 learning_rate: float, learning_rate_decay_scheme: str,
                 learning_rate_warmup_steps: int, learning_rate_decay_steps: int,
                 learning_rate_decay_rate: float, learning_rate_decay_staircase: bool,
                 hidden_size: int, train_steps: int):
        self.learning_rate_schedule = learning_rate_schedule
        self.learning_rate_constant = learning_rate_constant
        self.learning_rate = learning_rate
        self.learning_rate_decay_scheme = learning_rate_decay_scheme
        self.learning_rate_warmup_steps = learning_rate_warmup_steps
        self.learning_rate_decay_steps = learning_rate_decay_steps
        self.learning_rate_decay_rate = learning_rate_decay_rate
        self.learning_rate_decay_staircase = learning_rate_decay_staircase
        self.hidden_size = hidden_size
        self.train_steps = train_steps
        self.factors = learning_rate_factors(learning_rate_schedule)

    @classmethod
    def from_hparams(cls, hp: HParams, train_steps: int = 0) -> "T2TSchedule":
        """The schedule of `hp`; `train_steps` (if not 0) replaces hp.train_steps, like
        t2t's --train_steps flag, in linear_decay and single_cycle_cos_decay."""
        return cls(**{name: getattr(hp, name) for name in _HPARAMS},
                   train_steps=train_steps or hp.train_steps)

    def __call__(self, iterations):
        step = tf.cast(iterations, tf.float32)  # t2t's global step
        rate = tf.ones_like(step)  # [same shape as iterations]
        for name in self.factors:
            rate = rate * FACTORS[name](self, step)
        return rate

    def get_config(self):
        return {name: getattr(self, name) for name in _HPARAMS + ("train_steps",)}


_HPARAMS = ("learning_rate_schedule", "learning_rate_constant", "learning_rate",
            "learning_rate_decay_scheme", "learning_rate_warmup_steps",
            "learning_rate_decay_steps", "learning_rate_decay_rate",
            "learning_rate_decay_staircase", "hidden_size")


def make_optimizer(hp: HParams, train_steps: int = 0) -> keras.optimizers.Optimizer:
    """Adam with the set's betas and epsilon and its t2t learning-rate schedule.

    Gradient clipping (`clip_grad_norm`) is not the optimizer's: Keras would
    clip each replica's part of the gradient before summing them, so
    `t2t_lite.train.step.apply_global_mean` clips the step's whole gradient.

    Args:
      train_steps: the run's steps if not hp.train_steps (t2t-trainer --train_steps).
    """
    return keras.optimizers.Adam(
        learning_rate=T2TSchedule.from_hparams(hp, train_steps),
        beta_1=hp.optimizer_adam_beta1, beta_2=hp.optimizer_adam_beta2,
        epsilon=hp.optimizer_adam_epsilon)
