import math

import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.train.loss import smoothed_cross_entropy, token_statistics
from t2t_lite.train.schedule import T2TSchedule, make_optimizer


@pytest.mark.parametrize("step, expected", [
    (1, 512 ** -0.5 * 1 * 4000 ** -1.5),
    (4000, 512 ** -0.5 * 4000 ** -0.5),
    (100000, 512 ** -0.5 * 100000 ** -0.5),
])
def test_paper_learning_rate_of_transformer_base(step, expected):
    schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base"))
    # Keras passes the number of updates already applied: the paper's step s is iteration s - 1.
    assert float(schedule(step - 1)) == pytest.approx(expected, rel=1e-6)


def test_optimizer_has_the_paper_adam_settings():
    optimizer = make_optimizer(registry.hparams("transformer_base"))
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
    assert float(optimizer.learning_rate) == pytest.approx(512 ** -0.5 * 4000 ** -1.5, rel=1e-6)


def test_label_smoothed_loss_equals_hand_computation_ignoring_padding():
    logits = tf.constant([[[2.0, 0.0, 1.0, 0.0], [0.0, 3.0, 0.0, 1.0], [5.0, 5.0, 5.0, 5.0]]])
    targets = tf.constant([[2, 1, 0]])  # last position is padding
    eps = 0.1
    total = 0.0
    for row, target in [([2.0, 0.0, 1.0, 0.0], 2), ([0.0, 3.0, 0.0, 1.0], 1)]:
        log_z = math.log(sum(math.exp(x) for x in row))
        log_p = [x - log_z for x in row]
        q = [eps / 3] * 4
        q[target] = 1 - eps
        total += -sum(qi * lp for qi, lp in zip(q, log_p))
    loss_sum, count = smoothed_cross_entropy(logits, targets, eps)
    assert float(count) == 2.0
    assert float(loss_sum) == pytest.approx(total, rel=1e-6)
    # Without smoothing it is the plain negative log-likelihood.
    nll_sum, correct, count = token_statistics(logits, targets)
    plain, _ = smoothed_cross_entropy(logits, targets, 0.0)
    assert float(plain) == pytest.approx(float(nll_sum), rel=1e-6)
    assert (float(correct), float(count)) == (1.0, 2.0)  # argmax of row 0 is 0, not 2


@pytest.mark.parametrize("jit_compile", [False, True])
def test_training_step_fits_a_fixed_batch(jit_compile):
    import t2t_lite
    from t2t_lite.train.step import make_train_step
    hp = registry.hparams("transformer_tiny").parse(
        "learning_rate_schedule=constant,learning_rate_constant=0.003,"
        "layer_prepostprocess_dropout=0.0")
    tf.keras.utils.set_random_seed(1)
    model = t2t_lite.build_model(hp, vocab_size=30)
    step = make_train_step(model, make_optimizer(hp), hp, jit_compile=jit_compile)
    batch = {"inputs": tf.constant([[5, 6, 7, 1], [8, 9, 1, 0]]),
             "targets": tf.constant([[7, 6, 5, 1], [9, 8, 1, 0]])}
    losses = [float(step(batch)) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
