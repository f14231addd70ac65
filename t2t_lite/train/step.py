"""The math of one training step, shared by the trainer and the benchmark.

Per replica: the label-smoothed loss summed over real target tokens and its
gradients; then one update with the gradient of the global mean loss,
clipped as a whole (all replicas, all micro-batches) to `clip_grad_norm`.
"""

from typing import Callable, Dict

import keras
import tensorflow as tf

from t2t_lite.hparams_lib import HParams
from t2t_lite.train.loss import smoothed_cross_entropy


def replica_gradients(model: keras.Model, optimizer, hp: HParams, batch):
    """Summed label-smoothed loss of one (per-replica) micro-batch and its gradients.

    Returns:
      (loss_sum, num_tokens, gradients of loss_sum [times the loss scale
      under mixed_float16]).
    """
    with tf.GradientTape() as tape:
        logits = model(batch, training=True)
        loss_sum, tokens = smoothed_cross_entropy(logits, batch["targets"], hp.label_smoothing)
        scaled = (optimizer.scale_loss(loss_sum)
                  if isinstance(optimizer, keras.optimizers.LossScaleOptimizer) else loss_sum)
    return loss_sum, tokens, tape.gradient(scaled, model.trainable_variables)


def apply_global_mean(model: keras.Model, optimizer, grads, tokens,
                      clip_grad_norm: float = 0.0) -> None:
    """Applies summed-loss gradients as the gradient of the global mean loss.

    Called in replica context with this replica's gradients of its summed
    loss (all its micro-batches) and its real target tokens. The update is
    the gradient of (sum of losses of all replicas) / (all real target
    tokens), scaled down as a whole to a global norm of at most
    `clip_grad_norm` (0: no clipping).

    Keras' `apply_gradients` sums the gradients over replicas itself, and its
    own clipping (`global_clipnorm`) would clip each replica's part before
    that sum. So without clipping each replica hands Keras its part; with
    clipping, the step's gradient is summed here, clipped, and each replica
    hands Keras 1/n of it, which Keras' sum makes whole again (exact for 2
    replicas, within rounding for more). That second all-reduce is paid only
    when clipping on several replicas.

    Args:
      optimizer: any Keras optimizer (a `LossScaleOptimizer`'s gradients
        are still scaled here, so the limit is scaled with them).
    """
    context = tf.distribute.get_replica_context()
    global_tokens = tf.maximum(context.all_reduce("sum", tokens), 1.0)
    grads = [g / global_tokens for g in grads]
    if clip_grad_norm:
        grads = context.all_reduce("sum", grads)  # the step's gradient, on every replica
        limit = clip_grad_norm
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            limit = limit * optimizer.dynamic_scale
        grads, _ = tf.clip_by_global_norm(grads, limit)  # non-finite norm -> NaN, as Keras
        grads = [g / context.num_replicas_in_sync for g in grads]
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, hp: HParams,
                    jit_compile: bool = False) -> Callable[[Dict[str, tf.Tensor]], tf.Tensor]:
    """A single-device `step(batch) -> mean loss per real target token` (`tf.function`).

    The trainer adds strategies and accumulation around the same two
    functions; the benchmark and tests use this one directly.
    """
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    gradients = tf.function(lambda batch: replica_gradients(model, optimizer, hp, batch),
                            jit_compile=jit_compile, autograph=False)

    @tf.function(autograph=False)
    def step(batch):
        loss_sum, tokens, grads = gradients(batch)
        apply_global_mean(model, optimizer, grads, tokens, hp.clip_grad_norm)
        return loss_sum / tf.maximum(tokens, 1.0)

    return step
