import pytest

from t2t_lite import registry
from t2t_lite.data.problem import Problem
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams

PAPER_SETS = ["transformer_base", "transformer_big", "transformer_tiny", "transformer_small",
              "transformer_parsing"]
T2T_SETS = ["transformer_base_v1", "transformer_base_v2", "transformer_base_v3",
            "transformer_base_single_gpu", "transformer_big_single_gpu", "transformer_big_enfr"]
TABLE3_SETS = ["transformer_table3_a_heads1", "transformer_table3_a_heads4",
               "transformer_table3_a_heads16", "transformer_table3_a_heads32",
               "transformer_table3_b_dk16", "transformer_table3_b_dk32",
               "transformer_table3_c_layers2", "transformer_table3_c_layers4",
               "transformer_table3_c_layers8", "transformer_table3_c_dmodel256",
               "transformer_table3_c_dmodel1024", "transformer_table3_c_dff1024",
               "transformer_table3_c_dff4096", "transformer_table3_d_dropout0",
               "transformer_table3_d_dropout2", "transformer_table3_d_smoothing0",
               "transformer_table3_d_smoothing2", "transformer_table3_e_learned_pos"]


def test_every_set_is_listed_and_builds_valid_hparams():
    names = registry.list_hparams()
    for name in PAPER_SETS + T2T_SETS + TABLE3_SETS:
        assert name in names
        assert isinstance(registry.hparams(name), HParams)


def test_unknown_hparams_set_suggests_close_names_and_lists_all():
    with pytest.raises(T2TError) as err:
        registry.hparams("transformer_bsae")
    message = str(err.value)
    assert "Unknown hparams set 'transformer_bsae'" in message
    assert "Did you mean 'transformer_base'" in message
    assert "transformer_table3_e_learned_pos" in message  # the full list follows


def test_registering_a_name_twice_is_an_error():
    with pytest.raises(T2TError, match="'transformer_base' is already registered"):
        registry.register_hparams("transformer_base")(lambda: HParams())


def test_alias_clash_is_an_error():
    with pytest.raises(T2TError, match="'transformer_big' is already registered"):
        registry.register_hparams("some_new_set", aliases=["transformer_big"])(HParams)


def test_default_name_is_snake_case_of_the_class():
    reg = registry.Registry("thing", "t2t_lite")
    reg.register(type("MyFancyProblem", (), {}))
    assert reg.names() == ["my_fancy_problem"]


def test_registering_a_problem_sets_its_name():
    reg = registry.Registry("problem", "t2t_lite", name_attribute="name")

    @reg.decorator("toy_problem", aliases=["toy_alias"])
    class Toy(Problem):
        pass

    class SmallToy(Toy):  # an unregistered variant, as tests make
        vocab_size = 300

    class Unregistered(Problem):
        name = "my_own_name"

    assert (Toy.name, SmallToy.name, Unregistered.name) == (
        "toy_problem", "toy_problem", "my_own_name")
    assert reg.get("toy_alias") is Toy
    assert registry.problem("translate_ende_wmt32k").name == "translate_ende"


def test_help_string_lists_problems_and_hparams_sets():
    text = registry.help_string()
    assert text.startswith("Problems:\n") and "\n\nHparams sets:\n" in text
    assert "translate_ende  (also: translate_ende_wmt32k)" in text
    assert "  transformer_base\n" in text and "Models" not in text


def test_table3_rows_change_what_the_paper_says():
    base = registry.hparams("transformer_base")
    heads1 = registry.hparams("transformer_table3_a_heads1")
    assert (heads1.num_heads, heads1.key_channels // heads1.num_heads) == (1, 512)
    dk16 = registry.hparams("transformer_table3_b_dk16")
    assert (dk16.key_channels // dk16.num_heads, dk16.value_channels // dk16.num_heads) == (16, 64)
    small = registry.hparams("transformer_table3_c_dmodel256")
    assert (small.hidden_size, small.key_channels // small.num_heads) == (256, 32)
    assert registry.hparams("transformer_table3_e_learned_pos").pos == "emb"
    big = registry.hparams("transformer_big")
    assert (big.hidden_size, big.filter_size, big.num_heads, big.layer_prepostprocess_dropout,
            big.train_steps) == (1024, 4096, 16, 0.3, 300000)
    assert (base.hidden_size, base.filter_size, base.num_heads, base.num_hidden_layers,
            base.label_smoothing, base.learning_rate_warmup_steps, base.train_steps) == (
                512, 2048, 8, 6, 0.1, 4000, 100000)
    parsing = registry.hparams("transformer_parsing")
    assert (parsing.num_hidden_layers, parsing.hidden_size) == (4, 1024)


# tensor2tensor 1.15's values (models/transformer.py, layers/common_hparams.py), typed here.
T2T_VALUES = {
    "transformer_base_v1": dict(
        hidden_size=512, filter_size=2048, num_heads=8, num_hidden_layers=6, batch_size=4096,
        max_length=256, layer_preprocess_sequence="", layer_postprocess_sequence="dan",
        layer_prepostprocess_dropout=0.1, attention_dropout=0.0, relu_dropout=0.0,
        label_smoothing=0.1, optimizer_adam_beta1=0.9, optimizer_adam_beta2=0.98,
        optimizer_adam_epsilon=1e-9, clip_grad_norm=0.0, initializer_gain=1.0,
        learning_rate_schedule="legacy", learning_rate_decay_scheme="noam", learning_rate=0.1,
        learning_rate_constant=1.0, learning_rate_warmup_steps=4000,
        learning_rate_decay_steps=5000, shared_embedding_and_softmax_weights=True),
    "transformer_base_v2": dict(
        layer_preprocess_sequence="n", layer_postprocess_sequence="da",
        layer_prepostprocess_dropout=0.1, attention_dropout=0.1, relu_dropout=0.1,
        learning_rate_warmup_steps=8000, learning_rate=0.2, optimizer_adam_beta2=0.98),
    "transformer_base_v3": dict(
        layer_preprocess_sequence="n", layer_postprocess_sequence="da", attention_dropout=0.1,
        relu_dropout=0.1, optimizer_adam_beta2=0.997, learning_rate_constant=2.0,
        learning_rate_schedule="constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size",
        learning_rate_warmup_steps=8000, batch_size=4096, hidden_size=512),
    "transformer_base_single_gpu": dict(
        batch_size=1024, learning_rate_schedule="constant*linear_warmup*rsqrt_decay",
        learning_rate_constant=0.1, learning_rate_warmup_steps=16000, hidden_size=512,
        layer_preprocess_sequence="n", optimizer_adam_beta2=0.997),
    "transformer_big_single_gpu": dict(
        hidden_size=1024, filter_size=4096, num_heads=16, batch_size=2048,
        layer_prepostprocess_dropout=0.1, learning_rate_warmup_steps=16000,
        learning_rate_constant=2.0, layer_preprocess_sequence="n", attention_dropout=0.1,
        learning_rate_schedule="constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"),
    "transformer_big_enfr": dict(
        hidden_size=1024, filter_size=8192, num_heads=16, batch_size=4096,
        layer_prepostprocess_dropout=0.1, shared_embedding=False,
        shared_embedding_and_softmax_weights=False, learning_rate_warmup_steps=8000,
        learning_rate_constant=2.0, layer_preprocess_sequence="n", relu_dropout=0.1),
}


@pytest.mark.parametrize("name", sorted(T2T_VALUES))
def test_tensor2tensor_sets_have_tensor2tensors_values(name):
    hp = registry.hparams(name)
    assert {k: getattr(hp, k) for k in T2T_VALUES[name]} == T2T_VALUES[name]
    # From t2t's trainer: a step is one batch per replica; --train_steps defaults to 250000.
    assert (hp.tokens_per_step, hp.train_steps) == (0, 250000)


def test_prenorm_name_is_tensor2tensors_v2_and_the_paper_names_stay_the_papers():
    assert registry.hparams("transformer_base_prenorm") == registry.hparams("transformer_base_v2")
    base, v1 = registry.hparams("transformer_base"), registry.hparams("transformer_base_v1")
    assert base.replace(tokens_per_step=0, train_steps=250000) == v1
    assert registry.hparams("transformer_big").norm_placement == "post"
