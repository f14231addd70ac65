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
])
def test_bad_overrides_are_errors_naming_the_problem(overrides, message):
    with pytest.raises(T2TError) as err:
        base().parse(overrides)
    assert message in str(err.value)


def test_pre_norm_is_an_hparam():
    hp = base().parse("layer_preprocess_sequence=n,layer_postprocess_sequence=da")
    assert hp.norm_placement == "pre"
    assert base().norm_placement == "post"


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
