"""Learning rates against tensor2tensor 1.15's formulas, written out here in plain Python.

Steps are t2t's global step s: the number of updates already applied, which
is what Keras passes a schedule (0 for the first update).
"""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.hparams_lib import LEARNING_RATE_FACTORS
from t2t_lite.train.schedule import FACTORS, T2TSchedule, make_optimizer


def legacy_noam(learning_rate, d, w):
    """t2t's learning_rate_schedule="legacy", learning_rate_decay_scheme="noam", Adam."""
    return lambda s: (5000.0 * d ** -0.5 * min((s + 1) * w ** -1.5, (s + 1) ** -0.5)
                      * 0.002 * learning_rate)


def warmup_rsqrt(constant, w, d=None):
    """"constant*linear_warmup*rsqrt_decay" (and "*rsqrt_hidden_size" when d is given)."""
    return lambda s: (constant * min(1.0, s / w) * max(s, w) ** -0.5
                      * (d ** -0.5 if d else 1.0))


def fairseq_inverse_sqrt(lr, warmup_updates):
    """fairseq's `--lr-scheduler inverse_sqrt` (warmup_init_lr 0, its default), at the
    number of updates already applied: linear from 0 to `lr` over the warm-up, then
    lr * sqrt(warmup_updates / updates)."""
    return lambda s: (s * lr / warmup_updates if s < warmup_updates
                      else lr * warmup_updates ** 0.5 * s ** -0.5)


# Every registered set: its rate in t2t's terms, with its constants typed here.
PAPER_BASE = legacy_noam(0.1, 512, 4000)
EXPECTED = {
    "transformer_base": PAPER_BASE,
    "transformer_base_v1": PAPER_BASE,
    "transformer_base_v2": legacy_noam(0.2, 512, 8000),
    "transformer_base_v3": warmup_rsqrt(2.0, 8000, 512),
    "transformer_base_single_gpu": warmup_rsqrt(0.1, 16000),
    "transformer_big_single_gpu": warmup_rsqrt(2.0, 16000, 1024),
    "transformer_big_enfr": warmup_rsqrt(2.0, 8000, 1024),
    "transformer_big": legacy_noam(0.1, 1024, 4000),
    "transformer_parsing": legacy_noam(0.1, 1024, 4000),
    "transformer_small": legacy_noam(0.1, 256, 2000),
    "transformer_tiny": legacy_noam(0.05, 128, 1000),
    "transformer_multi30k": legacy_noam(0.1, 256, 1000),
    "transformer_multi30k_v2": legacy_noam(0.1, 256, 1000),
    "transformer_multi30k_wu2021": fairseq_inverse_sqrt(0.005, 2000),
    "transformer_parsing_tiny": legacy_noam(0.07, 256, 400),
    "transformer_table3_c_dmodel256": legacy_noam(0.1, 256, 4000),
    "transformer_table3_c_dmodel1024": legacy_noam(0.1, 1024, 4000),
    **{f"transformer_table3_{row}": PAPER_BASE for row in [
        "a_heads1", "a_heads4", "a_heads16", "a_heads32", "b_dk16", "b_dk32",
        "c_layers2", "c_layers4", "c_layers8", "c_dff1024", "c_dff4096", "d_dropout0",
        "d_dropout2", "d_smoothing0", "d_smoothing2", "e_learned_pos"]},
}
WARMUP = {"transformer_base_v2": 8000, "transformer_base_v3": 8000,
          "transformer_base_single_gpu": 16000, "transformer_big_single_gpu": 16000,
          "transformer_big_enfr": 8000, "transformer_small": 2000, "transformer_tiny": 1000,
          "transformer_multi30k": 1000, "transformer_multi30k_v2": 1000,
          "transformer_multi30k_wu2021": 2000, "transformer_parsing_tiny": 400}


def test_wu2021_rate_is_fairseqs_inverse_sqrt_within_1e_7():
    """Every step of the 8,000 updates, against fairseq's formula written out above."""
    steps = list(range(0, 8001))
    got = rates(T2TSchedule.from_hparams(registry.hparams("transformer_multi30k_wu2021")),
                steps)
    expected = [fairseq_inverse_sqrt(0.005, 2000)(s) for s in steps]
    assert max(abs(g - e) for g, e in zip(got, expected)) < 1e-7
    assert got[2000] == pytest.approx(0.005, rel=1e-6) and got[0] == 0.0


def rates(schedule, steps):
    return schedule(tf.constant(steps, tf.int64)).numpy().tolist()


def test_every_registered_set_has_an_expected_rate():
    assert sorted(EXPECTED) == registry.list_hparams()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_set_learning_rate_equals_tensor2tensor_formula(name):
    w = WARMUP.get(name, 4000)
    steps = [0, 1, 100, w, 10 * w]
    expected = [EXPECTED[name](s) for s in steps]
    got = rates(T2TSchedule.from_hparams(registry.hparams(name)), steps)
    assert got == pytest.approx(expected, rel=1e-6, abs=0.0)


@pytest.mark.parametrize("name, multiplier", [
    ("transformer_base", 1.0), ("transformer_big", 1.0), ("transformer_parsing", 1.0),
    ("transformer_small", 1.0), ("transformer_multi30k", 1.0), ("transformer_tiny", 0.5),
    ("transformer_parsing_tiny", 0.7), ("transformer_table3_c_dmodel256", 1.0)])
def test_existing_sets_keep_their_float32_rate_bit_for_bit(name, multiplier):
    """The sets trained before t2t's names keep the rate of the Noam multiplier they had."""
    hp = registry.hparams(name)
    steps = np.concatenate([np.arange(0, 3000), np.arange(3000, 400000, 397)])
    paper_step = tf.constant(steps, tf.float32) + 1.0
    before = (multiplier * hp.hidden_size ** -0.5 *
              tf.minimum(tf.math.rsqrt(paper_step),
                         paper_step * hp.learning_rate_warmup_steps ** -1.5))
    now = T2TSchedule.from_hparams(hp)(tf.constant(steps))
    np.testing.assert_array_equal(now.numpy(), before.numpy())


@pytest.mark.parametrize("set_name, overrides, expected", [
    # The strings of the brief, as a t2t user passes them.
    ("transformer_base_v3", "learning_rate_constant=2.0,learning_rate_warmup_steps=8000",
     warmup_rsqrt(2.0, 8000, 512)),
    ("transformer_base_v3", "learning_rate_constant=1.0,learning_rate_warmup_steps=4000",
     warmup_rsqrt(1.0, 4000, 512)),
    ("transformer_base_v1", "learning_rate=0.2", legacy_noam(0.2, 512, 4000)),
    ("transformer_base_v1", "learning_rate=0.2,learning_rate_warmup_steps=8000,hidden_size=1024",
     legacy_noam(0.2, 1024, 8000)),
    ("transformer_base", "learning_rate_schedule=constant*rsqrt_normalized_decay,"
     "learning_rate_constant=0.001", lambda s: 0.001 * 4000 ** 0.5 * max(s, 4000) ** -0.5),
])
def test_t2t_hparams_strings_give_t2t_rates(set_name, overrides, expected):
    hp = registry.hparams(set_name).parse(overrides)
    steps = [0, 1, 100, 3999, 4000, 8000, 40000, 80000]
    got = rates(T2TSchedule.from_hparams(hp), steps)
    assert got == pytest.approx([expected(s) for s in steps], rel=1e-6, abs=0.0)


T, D, W = 10000, 3000, 500  # train_steps, learning_rate_decay_steps, learning_rate_warmup_steps


@pytest.mark.parametrize("schedule, overrides, factor", [
    ("constant", "learning_rate_constant=0.3", lambda s: 0.3),
    ("linear_warmup", "", lambda s: min(1.0, s / W)),
    ("linear_decay", "", lambda s: min(1.0, max(0.0, (T - s) / D))),
    ("cosdecay", "", lambda s: 1.0 if s <= W else 0.5 * (1 + math.cos(math.pi * s / D))),
    ("single_cycle_cos_decay", "",
     lambda s: math.cos((max(s, W) - W) * math.pi / (T - W)) / 2 + 0.5),
    ("multi_cycle_cos_decay", "", lambda s: math.cos((max(s, W) - W) * math.pi / D) / 2 + 0.5),
    ("rsqrt_decay", "", lambda s: 1 / math.sqrt(max(s, W))),
    ("rsqrt_normalized_decay", "", lambda s: math.sqrt(W) / math.sqrt(max(s, W))),
    ("exp_decay", "learning_rate_decay_rate=0.5", lambda s: 0.5 ** max(0.0, (s - W) / D)),
    ("exp_decay", "learning_rate_decay_rate=0.5,learning_rate_decay_staircase=true",
     lambda s: 0.5 ** math.floor(max(0.0, (s - W) / D))),
    ("rsqrt_hidden_size", "", lambda s: 512 ** -0.5),
    ("legacy", "learning_rate=0.3", lambda s: (
        5000.0 * 512 ** -0.5 * min((s + 1) * W ** -1.5, (s + 1) ** -0.5) * 0.002 * 0.3)),
    ("legacy", "learning_rate=0.3,learning_rate_decay_scheme=none", lambda s: (
        (math.exp(math.log(0.01) / W) ** (W - s) if s < W else 1.0) * 0.002 * 0.3)),
    (" constant * linear_warmup ", "learning_rate_constant=0.3", lambda s: 0.3 * min(1.0, s / W)),
    ("", "", lambda s: 1.0),
])
def test_each_factor_is_tensor2tensors(schedule, overrides, factor):
    hp = registry.hparams("transformer_base").parse(
        f"learning_rate_schedule={schedule},train_steps={T},learning_rate_decay_steps={D},"
        f"learning_rate_warmup_steps={W}" + ("," + overrides if overrides else ""))
    steps = [0, 1, 7, 499, 500, 501, 2999, 3000, 4567, 9999, 10000, 12000]
    got = rates(T2TSchedule.from_hparams(hp), steps)
    assert got == pytest.approx([factor(s) for s in steps], rel=1e-5, abs=1e-7)


def test_every_factor_name_has_an_implementation():
    assert list(FACTORS) == list(LEARNING_RATE_FACTORS)


def test_run_train_steps_replace_the_sets_in_linear_decay():
    """Like t2t's --train_steps flag, the run's steps are T of linear_decay."""
    hp = registry.hparams("transformer_base").parse(
        "learning_rate_schedule=linear_decay,learning_rate_decay_steps=100,train_steps=1000")
    assert rates(T2TSchedule.from_hparams(hp), [950]) == [0.5]
    optimizer = make_optimizer(hp, train_steps=2000)
    optimizer.iterations.assign(1950)
    assert float(optimizer.learning_rate) == 0.5


def test_schedule_round_trips_through_keras_serialization():
    schedule = T2TSchedule.from_hparams(registry.hparams("transformer_base_v3"))
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert isinstance(restored, T2TSchedule) and restored.get_config() == schedule.get_config()
    assert rates(restored, [0, 10, 9000]) == rates(schedule, [0, 10, 9000])


@pytest.mark.parametrize("name, first, second", [
    # The paper's step 1 and 2: d^-0.5 * step * w^-1.5.
    ("transformer_base", 512 ** -0.5 * 4000 ** -1.5, 512 ** -0.5 * 2 * 4000 ** -1.5),
    # t2t's linear warm-up: the first update has rate 0, the second 2.0 * 1/8000 * ...
    ("transformer_base_v3", 0.0, 2.0 * (1 / 8000) * 8000 ** -0.5 * 512 ** -0.5),
])
def test_first_update_uses_step_zero(name, first, second):
    """Adam moves a weight by ~lr when the gradient is constant: read the rates used."""
    optimizer = make_optimizer(registry.hparams(name))
    weight = tf.Variable(0.0)
    moves = []
    for _ in range(2):
        before = float(weight.numpy())
        optimizer.apply_gradients([(tf.constant(1.0), weight)])
        moves.append(before - float(weight.numpy()))
    assert moves == pytest.approx([first, second], rel=1e-5, abs=1e-12)
