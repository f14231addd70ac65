import functools

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import registry


def transformer_base_param_count(vocab: int, d: int = 512, d_ff: int = 2048, n: int = 6) -> int:
    """The paper's architecture, counted by hand: shared embedding/softmax, bias-free
    attention projections (W^Q, W^K, W^V, W^O), FFN with biases, LayerNorm gain and bias."""
    embedding = vocab * d
    attention = 4 * d * d
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = 2 * d
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return embedding + n * encoder_layer + n * decoder_layer


def test_transformer_base_parameter_count():
    model = t2t_lite.build_model(registry.hparams("transformer_base"), vocab_size=37000)
    assert transformer_base_param_count(37000) == 63_045_632
    assert model.count_params() == transformer_base_param_count(37000)


def test_keras_build_and_a_first_call_create_every_weight():
    """`model.build()` creates the weights (Keras's contract), as does calling an
    unbuilt model: the count is the paper's formula either way."""
    from t2t_lite.model.transformer import Transformer
    hp = registry.hparams("transformer_base")
    built = Transformer(hp, 37000)
    assert not built.weights
    built.build(None)
    called = Transformer(hp, 37000)
    ids = tf.constant([[5, 6, 1]])
    assert called({"inputs": ids, "targets": ids}).shape == (1, 3, 37000)
    assert built.count_params() == called.count_params() == transformer_base_param_count(37000)


def test_untied_and_unshared_embeddings_add_matrices():
    hp = registry.hparams("transformer_tiny")
    tied = t2t_lite.build_model(hp, 100).count_params()
    untied = t2t_lite.build_model(hp.parse("shared_embedding_and_softmax_weights=false,"
                                           "shared_embedding=false"), 100).count_params()
    assert untied - tied == 2 * 100 * 128


def test_pre_norm_adds_final_layer_norms():
    hp = registry.hparams("transformer_tiny")
    post = t2t_lite.build_model(hp, 50).count_params()
    pre = t2t_lite.build_model(hp.parse("layer_preprocess_sequence=n,"
                                        "layer_postprocess_sequence=da"), 50).count_params()
    assert pre - post == 2 * 2 * 128


def tiny_model(**overrides):
    hp = registry.hparams("transformer_tiny").replace(**overrides)
    tf.keras.utils.set_random_seed(0)
    return t2t_lite.build_model(hp, vocab_size=40)


SOURCE = tf.constant([[5, 6, 7, 8, 1, 0, 0], [9, 10, 1, 0, 0, 0, 0], [11, 12, 13, 14, 15, 16, 1]])
TARGET = tf.constant([[3, 4, 5, 6, 7, 1], [8, 9, 1, 0, 0, 0], [10, 11, 12, 13, 14, 1]])


def incremental_logits(model, source, target, growing=False, beam=1):
    """Logits of `target` [B * beam, T] decoded step by step over `source` [B, S]
    (beam rows per sentence, the cache's memory one copy per sentence)."""
    from t2t_lite.decode.search_common import tile_cache
    memory, bias = model.encode(source)
    steps = target.shape[1]
    cache = model.init_cache(memory, bias, max_length=None if growing else steps + 2)
    if beam > 1:
        cache = tile_cache(cache, beam)
        assert cache["per_example"]["layer_0"]["k"].shape[0] == source.shape[0]  # not tiled
    ids = tf.zeros([target.shape[0]], tf.int32)
    step = tf.function(functools.partial(model.decode_step, growing=growing))
    outputs = []
    for i in range(steps):
        logits, cache = step(ids, tf.constant(i), cache)
        outputs.append(logits)
        ids = target[:, i]
    return tf.stack(outputs, axis=1)


@pytest.mark.parametrize("overrides", [
    {}, {"layer_preprocess_sequence": "n", "layer_postprocess_sequence": "da"},
    {"pos": "emb"}, {"attention_key_channels": 64}])
def test_cached_incremental_decoding_equals_full_forward_pass(overrides):
    model = tiny_model(**overrides)
    full = model({"inputs": SOURCE, "targets": TARGET}, training=False)
    for growing in (False, True):  # preallocated, or appended to each step
        step_by_step = incremental_logits(model, SOURCE, TARGET, growing)
        np.testing.assert_allclose(step_by_step.numpy(), full.numpy(), atol=1e-5)


def test_beams_folded_into_one_copy_of_the_memory_equal_the_full_pass():
    # Three beams per sentence, each with its own target: the cache keeps the
    # encoder's keys and values once per sentence, and decode_step maps rows
    # b * 3 .. b * 3 + 2 to sentence b; every row must equal the full forward
    # pass of its sentence and its own target.
    model = tiny_model()
    beam = 3
    sources = tf.repeat(SOURCE, beam, axis=0)  # [9, S]
    targets = tf.concat([sources[:, :1], tf.random.stateless_uniform(
        [9, TARGET.shape[1] - 1], (1, 2), 3, 40, tf.int32)], axis=1)  # [9, T], rows differ
    full = model({"inputs": sources, "targets": targets}, training=False)
    folded = incremental_logits(model, SOURCE, targets, growing=True, beam=beam)
    np.testing.assert_allclose(folded.numpy(), full.numpy(), atol=1e-5)


def test_future_target_tokens_do_not_change_earlier_outputs():
    model = tiny_model()
    changed = tf.tensor_scatter_nd_update(TARGET, [[0, 4], [2, 3]], [20, 21])
    a = model({"inputs": SOURCE, "targets": TARGET}).numpy()
    b = model({"inputs": SOURCE, "targets": changed}).numpy()
    np.testing.assert_array_equal(a[0, :5], b[0, :5])
    np.testing.assert_array_equal(a[2, :4], b[2, :4])
    assert np.abs(a[2, 4:] - b[2, 4:]).max() > 1e-4  # later outputs do see it


def test_padded_source_positions_do_not_change_any_output():
    model = tiny_model()
    # Longer padding and garbage-free padding must give identical logits.
    padded_more = tf.pad(SOURCE, [[0, 0], [0, 3]])
    a = model({"inputs": SOURCE, "targets": TARGET}).numpy()
    b = model({"inputs": padded_more, "targets": TARGET}).numpy()
    np.testing.assert_allclose(a, b, atol=1e-5)
    memory_a, _ = model.encode(SOURCE)
    memory_b, _ = model.encode(padded_more)
    np.testing.assert_allclose(memory_a.numpy()[1, :2], memory_b.numpy()[1, :2], atol=1e-5)


def test_dropout_is_active_only_in_training():
    model = tiny_model(layer_prepostprocess_dropout=0.3)
    features = {"inputs": SOURCE, "targets": TARGET}
    np.testing.assert_array_equal(model(features).numpy(), model(features).numpy())
    assert np.abs(model(features, training=True).numpy() -
                  model(features, training=True).numpy()).max() > 1e-3


def test_sinusoids_follow_the_paper_formula():
    from t2t_lite.model.layers import sinusoids
    table = sinusoids(tf.constant([0, 3, 50]), 8).numpy()
    for row, pos in enumerate([0, 3, 50]):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert table[row, 2 * i] == pytest.approx(np.sin(angle), abs=1e-5)
            assert table[row, 2 * i + 1] == pytest.approx(np.cos(angle), abs=1e-5)


def test_mixed_bfloat16_keeps_variables_and_logits_in_float32():
    import keras
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = tiny_model()
        logits = model({"inputs": SOURCE, "targets": TARGET}, training=True)
    finally:
        keras.config.set_dtype_policy("float32")
    assert logits.dtype == tf.float32
    assert all(v.dtype == "float32" for v in model.weights)


def test_checkpoint_of_the_model_holds_every_weight(tmp_path):
    model = tiny_model()
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    saved = [name for name, _ in tf.train.list_variables(path) if name.startswith("model/")]
    assert len(saved) == len(model.weights)
    other = tiny_model(initializer_gain=2.0)
    tf.train.Checkpoint(model=other).restore(path).assert_existing_objects_matched()
    for a, b in zip(model.weights, other.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_layer_norm_on_decoding_rows_equals_keras_bit_for_bit(policy):
    # LayerNorm computes [R, D] rows (a decoding step) with its own ops: the values must
    # be Keras's LayerNormalization's exactly, so decoding outputs do not move.
    import keras
    from t2t_lite.model.layers import LayerNorm
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(3.0, 2.0, size=(7, 48)), tf.float32)
    ours = LayerNorm(epsilon=1e-6, dtype=policy)
    keras_norm = keras.layers.LayerNormalization(epsilon=1e-6, dtype=policy)
    for layer in (ours, keras_norm):
        layer.build(x.shape)
    for weight, other in zip(ours.weights, keras_norm.weights):  # gamma, beta
        value = rng.normal(1.0, 0.5, size=weight.shape).astype(np.float32)
        weight.assign(value)
        other.assign(value)
    x = tf.cast(x, ours.compute_dtype)
    mine, theirs = ours(x), keras_norm(x)
    assert mine.dtype == theirs.dtype
    np.testing.assert_array_equal(mine.numpy().astype(np.float32),
                                  theirs.numpy().astype(np.float32))
    # Rank 3 (training, the encoder) is Keras's own path.
    x3 = tf.reshape(x[:6], [2, 3, 48])
    np.testing.assert_array_equal(ours(x3).numpy().astype(np.float32),
                                  keras_norm(x3).numpy().astype(np.float32))
