"""What the Marian import reads from config.json, generation_config.json and
model.safetensors, and what it refuses, each in one line naming the field or tensor.

Configs are edited copies of the reference models' (tests/t2t_import/marian/); the
weights tests edit copies of shared_swish_full_state's tensors (the full state_dict
with the tied aliases and position tables older conversions hold)."""

import json
import pathlib
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from t2t_lite.errors import T2TError
from t2t_lite.marian import config as config_lib
from t2t_lite.marian.loader import load_model

from marian_references import reference_dir

MARIAN = pathlib.Path(__file__).parent / "marian"


def copy_model(tmp_path, name="shared_swish", config_changes=None, drop=()):
    """A copy of reference model `name` with config.json's `config_changes` applied
    (None deletes a field) and the files `drop` removed."""
    target = tmp_path / name
    shutil.copytree(reference_dir(name, tmp_path / "unpacked"), target,
                    ignore=shutil.ignore_patterns("expected"))
    if config_changes:
        values = json.loads((target / "config.json").read_text())
        for key, value in config_changes.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
        (target / "config.json").write_text(json.dumps(values))
    for filename in drop:
        (target / filename).unlink()
    return target


def one_line_error(function, *args) -> str:
    with pytest.raises(T2TError) as error:
        function(*args)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_shared_swish_config_is_read_as_transformers_reads_it():
    config = config_lib.read_config(str(MARIAN / "shared_swish"))
    hp = config.hparams
    assert (hp.hidden_size, hp.filter_size, hp.num_heads, hp.encoder_layers,
            hp.decoder_layers) == (64, 128, 4, 2, 2)
    assert (hp.ffn_activation, hp.scale_embedding, hp.timing_signal, hp.pos) == (
        "swish", True, "marian", "timing")
    assert (hp.attention_bias, hp.logits_bias, hp.embed_padding) == (True, True, True)
    assert (hp.norm_placement, hp.layer_norm_epsilon) == ("post", 1e-5)
    assert (hp.shared_embedding, hp.shared_embedding_and_softmax_weights,
            hp.source_vocab_size) == (True, True, 0)
    assert (hp.layer_prepostprocess_dropout, hp.attention_dropout, hp.relu_dropout) == (
        0.1, 0.0, 0.0)
    assert hp.max_length == 512
    assert (config.vocab_size, config.source_vocab_size, config.shared_vocab) == (188, 188, True)
    assert config.ids == config_lib.SpecialIds(pad=187, eos=0, decoder_start=187)
    assert config.generation == config_lib.GenerationSettings(
        num_beams=4, max_length=512, bad_words_ids=[[187]], forced_eos_token_id=0,
        renormalize_logits=True, length_penalty=1.0, source="generation_config.json")


def test_separate_vocabularies_and_activations():
    separate = config_lib.read_config(str(MARIAN / "separate_relu"))
    assert (separate.vocab_size, separate.source_vocab_size, separate.shared_vocab) == (
        51, 61, False)
    assert not separate.hparams.shared_embedding and separate.hparams.source_vocab_size == 61
    assert separate.hparams.ffn_activation == "relu"
    multilingual = config_lib.read_config(str(MARIAN / "multilingual_gelu"))
    assert multilingual.hparams.ffn_activation == "gelu"
    assert multilingual.generation.num_beams == 6


def test_without_generation_config_json_config_json_settings_are_used(tmp_path):
    """As transformers' from_pretrained: config.json's generation fields, and
    GenerationConfig's defaults (renormalize_logits False) for the rest."""
    path = copy_model(tmp_path, drop=["generation_config.json"])
    assert config_lib.read_config(str(path)).generation == config_lib.GenerationSettings(
        num_beams=4, max_length=512, bad_words_ids=[[187]], forced_eos_token_id=0,
        renormalize_logits=False, length_penalty=1.0, source="config.json")
    bare = copy_model(tmp_path / "bare", drop=["generation_config.json"], config_changes={
        "num_beams": None, "max_length": None, "bad_words_ids": None,
        "forced_eos_token_id": None})
    settings = config_lib.read_config(str(bare)).generation
    assert (settings.num_beams, settings.max_length, settings.bad_words_ids,
            settings.forced_eos_token_id) == (1, 20, None, None)
    # (transformers 5.23 loads that directory with these four None, and generate()
    # fills GenerationConfig's defaults: 1, 20, None, None; MarianConfig's own
    # forced_eos_token_id default 0 is not used)


@pytest.mark.parametrize("changes", [
    {"normalize_before": True}, {"static_position_embeddings": False},
    {"add_final_layer_norm": True}, {"normalize_embedding": True}, {"add_bias_logits": True},
    {"encoder_layerdrop": 0.1}, {"extra_pos_embeddings": 2}, {"activation_function": "silu"},
    {"eos_token_id": [0]}])
def test_fields_transformers_ignores_or_accepts_import_unchanged(tmp_path, changes):
    original = config_lib.read_config(str(MARIAN / "shared_swish"))
    changed = config_lib.read_config(str(copy_model(tmp_path, config_changes=changes)))
    assert changed.hparams == original.hparams and changed.ids == original.ids


def test_missing_fields_take_marian_configs_defaults(tmp_path):
    config = config_lib.read_config(str(copy_model(tmp_path, config_changes={
        "scale_embedding": None, "activation_function": None, "dropout": None})))
    assert (config.hparams.scale_embedding, config.hparams.ffn_activation,
            config.hparams.layer_prepostprocess_dropout) == (False, "gelu", 0.1)


@pytest.mark.parametrize("changes, message", [
    ({"model_type": "bart"}, "model_type is 'bart', not 'marian'"),
    ({"model_type": None}, "model_type is None, not 'marian'"),
    ({"activation_function": "gelu_new"}, "activation_function 'gelu_new' is not supported; "
                                          "supported: relu, swish, silu, gelu"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings is false"),
    ({"decoder_start_token_id": 0}, "decoder_start_token_id 0 is not pad_token_id 187"),
    ({"eos_token_id": [0, 5]}, "'eos_token_id' must be one token id, got [0, 5]"),
    ({"decoder_attention_heads": 8}, "encoder_attention_heads 4 differs from "
                                     "decoder_attention_heads 8"),
    ({"decoder_ffn_dim": 256}, "encoder_ffn_dim 128 differs from decoder_ffn_dim 256"),
    ({"d_model": 66}, "hidden_size of 66 has to be divisible by num_heads of 4"),
    ({"scale_embedding": "yes"}, "'scale_embedding' must be bool, got 'yes'"),
    ({"pad_token_id": 188, "decoder_start_token_id": 188},
     "pad_token_id 188 is outside the target vocabulary of 188 ids"),
])
def test_values_marian_computes_differently_are_refused(tmp_path, changes, message):
    path = copy_model(tmp_path, config_changes=changes)
    assert message in one_line_error(config_lib.read_config, str(path))


def test_a_separate_source_vocabulary_smaller_than_the_pad_id_is_refused(tmp_path):
    path = copy_model(tmp_path, "separate_relu", config_changes={"vocab_size": 50})
    assert "pad_token_id 50 is outside the source vocabulary of 50 ids" in one_line_error(
        config_lib.read_config, str(path))


def test_malformed_config_json(tmp_path):
    path = copy_model(tmp_path)
    (path / "config.json").write_text("{not json")
    assert "config.json is not valid JSON" in one_line_error(config_lib.read_config, str(path))


# --- model.safetensors -----------------------------------------------------------


def with_tensors(tmp_path, edit):
    """A copy of shared_swish_full_state whose tensors `edit` (a function of the dict) changed."""
    path = copy_model(tmp_path, "shared_swish_full_state")
    tensors = load_file(str(path / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(path / "model.safetensors"))
    return path


def nudged(name):
    def edit(tensors):
        tensors[name] = tensors[name].copy()
        tensors[name][3, 5] += 1e-3
    return edit


@pytest.mark.parametrize("edit, message", [
    (nudged("lm_head.weight"), "lm_head.weight differs from model.shared.weight, which it is "
                               "tied to"),
    (nudged("model.decoder.embed_tokens.weight"),
     "model.decoder.embed_tokens.weight differs from model.shared.weight"),
    (nudged("model.encoder.embed_positions.weight"),
     "model.encoder.embed_positions.weight is not transformers' sinusoid table"),
    (lambda t: t.update({"model.encoder.layer_norm.weight": np.ones(64, np.float32)}),
     "holds the tensor model.encoder.layer_norm.weight, which nothing in a Marian model"),
    (lambda t: t.pop("model.decoder.layers.1.encoder_attn.v_proj.bias"),
     "lacks the tensor model.decoder.layers.1.encoder_attn.v_proj.bias"),
    (lambda t: t.pop("final_logits_bias"), "lacks the tensor final_logits_bias"),
    (lambda t: t.update({"final_logits_bias": np.zeros([1, 187], np.float32)}),
     "final_logits_bias [1, 187] do not make the [188] weight"),
])
def test_full_state_tensors_are_each_accounted_for(tmp_path, edit, message):
    path = with_tensors(tmp_path, edit)
    assert message in one_line_error(load_model, str(path))


def test_a_file_holding_only_an_alias_of_the_shared_table_loads(tmp_path):
    """transformers ties to whichever tied name the file holds; so does the import."""
    path = with_tensors(tmp_path, lambda t: t.pop("model.shared.weight"))
    loaded = load_model(str(path))
    expected = load_file(str(MARIAN / "shared_swish" / "model.safetensors"))["model.shared.weight"]
    np.testing.assert_array_equal(loaded.model.target_embedding.weights_matrix.numpy(),
                                  expected[np.argsort(loaded.target_ids)])


def test_pytorch_model_bin_alone_says_how_to_convert(tmp_path):
    path = copy_model(tmp_path, drop=["model.safetensors"])
    (path / "pytorch_model.bin").write_bytes(b"not read")
    message = one_line_error(load_model, str(path))
    assert "holds only pytorch_model.bin" in message
    assert "convert it to model.safetensors first" in message
    # the command (checked by hand with torch 2.13: the converted file of a full
    # state_dict, aliases included, imports to shared_swish's log-probabilities)
    assert (f"torch.load('{path}/pytorch_model.bin', map_location='cpu'); "
            "safetensors.torch.save_file({k: v.clone().contiguous() for k, v in s.items()}, "
            f"'{path}/model.safetensors')") in message


def test_no_weights_at_all(tmp_path):
    path = copy_model(tmp_path, drop=["model.safetensors"])
    assert "has no model.safetensors" in one_line_error(load_model, str(path))


def test_the_vocabulary_must_agree_with_config_json(tmp_path):
    path = copy_model(tmp_path, config_changes={"pad_token_id": 186,
                                                "decoder_start_token_id": 186})
    assert "config.json's pad_token_id 186 is not '<pad>'" in one_line_error(load_model,
                                                                              str(path))
