import dataclasses
import json

import pytest

from t2t_lite import registry
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams


def base() -> HParams:
    return registry.hparams("transformer_base")


def test_parse_returns_a_converted_copy():
    hp = base()
    new = hp.parse("num_heads=16,layer_prepostprocess_dropout=0.3, pos=emb ,"
                   "shared_embedding=false")
    assert (new.num_heads, new.layer_prepostprocess_dropout, new.pos, new.shared_embedding) == (
        16, 0.3, "emb", False)
    assert type(new.num_heads) is int and type(new.layer_prepostprocess_dropout) is float
    assert hp.num_heads == 8  # the original is untouched


def test_parse_empty_string_is_identity():
    assert base().parse("") == base()


def test_hparams_are_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        base().num_heads = 4


@pytest.mark.parametrize("overrides, message", [
    ("num_head=16", "Unknown hparam 'num_head'. Did you mean 'num_heads'"),
    ("num_heads=sixteen", "hparam 'num_heads' expects int, got 'sixteen'"),
    ("label_smoothing=high", "hparam 'label_smoothing' expects float, got 'high'"),
    ("shared_embedding=maybe", "hparam 'shared_embedding' expects bool, got 'maybe'"),
    ("num_heads", "Malformed hparams override 'num_heads': expected key=value"),
    ("=3", "Malformed hparams override '=3'"),
    ("num_heads=7", "hidden_size of 512 has to be divisible by num_heads of 7"),
    ("attention_key_channels=100", "attention_key_channels of 100 has to be divisible by num_heads"),
    ("layer_prepostprocess_dropout=-0.1", "must be in [0, 1), got -0.1"),
    ("hidden_size=0", "'hidden_size' must be positive, got 0"),
    ("pos=rotary", "'pos' must be 'timing' or 'emb'"),
    ("layer_preprocess_sequence=n", "Unsupported layer_preprocess_sequence"),
    ("learning_rate_schedule=constant*linear_warmpu",
     "Unknown learning-rate factor 'linear_warmpu' in learning_rate_schedule "
     "'constant*linear_warmpu'. Did you mean 'linear_warmup' or 'linear_decay'? Known factors: "
     "constant, "
     "linear_warmup, linear_decay, cosdecay, single_cycle_cos_decay, multi_cycle_cos_decay, "
     "rsqrt_decay, rsqrt_normalized_decay, exp_decay, rsqrt_hidden_size, legacy"),
    ("learning_rate_schedule=noam", "Unknown learning-rate factor 'noam'"),
    ("learning_rate_decay_scheme=piecewise", "learning_rate_decay_scheme 'piecewise' is not "
     "supported by the 'legacy' factor; use one of noam, none"),
    ("learning_rate_warmup_steps=0", "factor(s) legacy need learning_rate_warmup_steps > 0"),
    ("learning_rate_schedule=constant*linear_warmup,learning_rate_warmup_steps=0",
     "factor(s) linear_warmup need learning_rate_warmup_steps > 0"),
    ("learning_rate_schedule=linear_decay,learning_rate_decay_steps=0",
     "factor(s) linear_decay need learning_rate_decay_steps > 0"),
    ("learning_rate_schedule=single_cycle_cos_decay,train_steps=4000",
     "single_cycle_cos_decay needs train_steps > learning_rate_warmup_steps"),
    ("learning_rate_constant=-1", "'learning_rate_constant' must be >= 0"),
])
def test_bad_overrides_are_errors_naming_the_problem(overrides, message):
    with pytest.raises(T2TError) as err:
        base().parse(overrides)
    assert message in str(err.value)


def test_pre_norm_is_an_hparam():
    hp = base().parse("layer_preprocess_sequence=n,layer_postprocess_sequence=da")
    assert hp.norm_placement == "pre"
    assert base().norm_placement == "post"
    # tensor2tensor writes the empty sequence "none".
    assert base().parse("layer_preprocess_sequence=none").norm_placement == "post"


def test_schedule_without_warmup_factors_needs_no_warmup():
    hp = base().parse("learning_rate_schedule=constant,learning_rate_warmup_steps=0")
    assert hp.learning_rate_factors == ("constant",)
    assert base().parse("learning_rate_decay_scheme=none,learning_rate_warmup_steps=0")


@pytest.mark.parametrize("saved, expected", [
    # Written before t2t's schedule names: "noam" multiplied d^-0.5 min(...) by learning_rate.
    ({"learning_rate_schedule": "noam", "learning_rate": 0.7},
     {"learning_rate_schedule": "legacy", "learning_rate_decay_scheme": "noam",
      "learning_rate": 0.07}),
    ({"learning_rate_schedule": "noam"},  # the old default multiplier 1.0
     {"learning_rate_schedule": "legacy", "learning_rate": 0.1}),
    ({"learning_rate_schedule": "constant", "learning_rate": 0.003},
     {"learning_rate_schedule": "constant", "learning_rate_constant": 0.003}),
])
def test_hparams_saved_by_older_versions_keep_their_learning_rate(saved, expected):
    new_fields = ("learning_rate_constant", "learning_rate_decay_scheme",
                  "learning_rate_decay_steps", "learning_rate_decay_rate",
                  "learning_rate_decay_staircase", "learning_rate", "learning_rate_schedule")
    old = {k: v for k, v in HParams().to_dict().items() if k not in new_fields}
    hp = HParams.from_dict({**old, **saved})
    assert {k: getattr(hp, k) for k in expected} == expected


def test_json_round_trip():
    hp = base().parse("num_heads=16,pos=emb,learning_rate=2")
    text = hp.to_json()
    assert json.loads(text)["num_heads"] == 16
    assert HParams.from_json(text) == hp


def test_from_json_rejects_unknown_keys_wrong_types_and_garbage():
    with pytest.raises(T2TError, match="Unknown hparams"):
        HParams.from_dict({"num_heds": 3})
    with pytest.raises(T2TError, match="'num_heads' must be int"):
        HParams.from_dict({"num_heads": "8"})
    with pytest.raises(T2TError, match="Corrupt hparams JSON"):
        HParams.from_json("{not json")


def test_replace_rejects_unknown_keys():
    with pytest.raises(T2TError, match="Unknown hparam 'hiden_size'"):
        base().replace(hiden_size=3)


def differences(name: str, parent: str) -> dict:
    """The fields in which hparams set `name` differs from set `parent`: {field: value}."""
    child, base_set = registry.hparams(name), registry.hparams(parent)
    return {f.name: getattr(child, f.name) for f in dataclasses.fields(HParams)
            if getattr(child, f.name) != getattr(base_set, f.name)}


def test_multi30k_set_is_pinned():
    """`transformer_multi30k` stays as the README's speed tables, the Multi30k recipe's
    tables and the news recipe measured it."""
    small = registry.hparams("transformer_small")
    assert (small.hidden_size, small.filter_size, small.num_heads, small.batch_size,
            small.tokens_per_step, small.learning_rate, small.label_smoothing,
            small.attention_dropout, small.relu_dropout) == (
        256, 1024, 4, 4096, 0, 0.1, 0.1, 0.0, 0.0)
    assert differences("transformer_multi30k", "transformer_small") == {
        "num_hidden_layers": 3, "layer_prepostprocess_dropout": 0.3,
        "learning_rate_warmup_steps": 1000, "train_steps": 8000}


def test_wu2021_set_is_pinned():
    """Wu et al. 2021's recipe (fairseq transformer_tiny) as differences from the CPU set."""
    assert differences("transformer_multi30k_wu2021", "transformer_multi30k") == {
        "hidden_size": 128, "filter_size": 256, "num_hidden_layers": 4,
        "timing_signal": "tensor2tensor", "optimizer_adam_epsilon": 1e-8,
        "clip_grad_norm": 25.0,
        "learning_rate_schedule": "constant*linear_warmup*rsqrt_normalized_decay",
        "learning_rate_constant": 0.005, "learning_rate_warmup_steps": 2000,
        "batch_size": 8192}
    hp = registry.hparams("transformer_multi30k_wu2021")
    assert (hp.num_heads, hp.layer_prepostprocess_dropout, hp.attention_dropout, hp.relu_dropout,
            hp.label_smoothing, hp.layer_preprocess_sequence, hp.layer_postprocess_sequence,
            hp.shared_embedding, hp.shared_embedding_and_softmax_weights, hp.tokens_per_step,
            hp.optimizer_adam_beta1, hp.optimizer_adam_beta2, hp.train_steps) == (
        4, 0.3, 0.0, 0.0, 0.1, "", "dan", True, True, 0, 0.9, 0.98, 8000)


def test_multi30k_v2_set_is_pinned():
    """Issue 44's recipe set differs from `transformer_multi30k` by its layer dropout only."""
    assert differences("transformer_multi30k_v2", "transformer_multi30k") == {
        "layer_prepostprocess_dropout": 0.2}
