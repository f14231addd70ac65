"""A Marian model loaded into t2t-lite computes what transformers' MarianMTModel computes.

The expected values are transformers 5.23's own teacher-forced log-probabilities
(tests/t2t_import/marian/*/expected/logprobs.npz, see that folder's README), with
Marian's ids: the test renumbers them as the import does. The 30 pairs of a model
run as one padded batch (sources padded with t2t-lite's padding id, masked; targets
padded after their end), which also shows that padding changes no real position
when id 0 embeds to the `<pad>` row.

Deliberately broken mappings (positions' sin and cos halves swapped, logits bias
dropped, self-attention v or output biases dropped, the start row zeroed) move the
log-probabilities by more than 1e-3 on shared_swish and multilingual_gelu: a
mapping that silently ignored one of those parts would fail the 1e-4 check.
"""

import contextlib
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.marian.loader import load_model
from t2t_lite.model.layers import marian_sinusoids

from marian_references import reference_dir

MARIAN = pathlib.Path(__file__).parent / "marian"
MODELS = ["shared_swish", "separate_relu", "multilingual_gelu", "shared_swish_full_state"]


def expected_of(name: str) -> dict:
    """logprobs.npz of `name` (the full-state copy has shared_swish's)."""
    folder = name.replace("_full_state", "")
    with np.load(MARIAN / folder / "expected" / "logprobs.npz") as npz:
        return dict(npz)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Each reference model, loaded once: {name: LoadedMarian}."""
    unpacked = tmp_path_factory.mktemp("unpacked")
    return {name: load_model(str(reference_dir(name, unpacked))) for name in MODELS}


def padded(rows) -> np.ndarray:
    """int rows of different lengths -> int32 [N, longest], padded with 0 (PAD_ID)."""
    out = np.zeros([len(rows), max(len(r) for r in rows)], np.int32)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def teacher_forced(loaded_model, expected: dict) -> list:
    """The model's log-probability of each target token of each recorded pair:
    [float32 [T_i]], in the order of the npz's pairs."""
    count = len([key for key in expected if key.startswith("src_")])
    sources = [loaded_model.source_ids[expected[f"src_{i}"]] for i in range(count)]
    targets = [loaded_model.target_ids[expected[f"tgt_{i}"]] for i in range(count)]
    tgt = padded(targets)
    logits = loaded_model.model({"inputs": tf.constant(padded(sources)),
                                 "targets": tf.constant(tgt)})  # [N, T, V]
    logp = tf.nn.log_softmax(logits).numpy()
    picked = np.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0]  # [N, T]
    return [picked[i, :len(t)] for i, t in enumerate(targets)]


def max_difference(loaded_model, expected: dict) -> float:
    got = teacher_forced(loaded_model, expected)
    return max(float(np.abs(g - expected[f"logp_{i}"]).max()) for i, g in enumerate(got))


@pytest.mark.parametrize("name", MODELS)
def test_teacher_forced_log_probabilities_equal_transformers(loaded, name):
    expected = expected_of(name)
    assert len([k for k in expected if k.startswith("logp_")]) == 30
    assert max_difference(loaded[name], expected) < 1e-4


def test_the_imported_shapes_are_the_configs(loaded):
    separate = loaded["separate_relu"]
    assert separate.model.source_embedding.weights_matrix.shape == (61, 64)
    assert separate.model.target_embedding.weights_matrix.shape == (51, 64)
    assert separate.model.logits_bias.bias.shape == (51,)
    # the source <pad> (60) and the target <pad> (50) both become 0
    assert separate.source_ids[[60, 0, 1, 2]].tolist() == [0, 1, 2, 3]
    assert separate.target_ids[[50, 0, 1, 2]].tolist() == [0, 1, 2, 3]
    shared = loaded["multilingual_gelu"]
    assert shared.model.source_embedding is shared.model.target_embedding
    assert shared.source_ids is shared.target_ids
    assert shared.target_ids[[239, 0, 1, 2, 3]].tolist() == [0, 1, 2, 3, 4]


@contextlib.contextmanager
def changed(variable, value):
    """`variable` holds `value` within the block, its own value again after."""
    saved = variable.numpy()
    variable.assign(value)
    try:
        yield
    finally:
        variable.assign(saved)


@contextlib.contextmanager
def broken(model, what: str):
    """The model with one part of its mapping made wrong on purpose."""
    with contextlib.ExitStack() as stack:
        if what == "sin_cos_swapped":
            stack.callback(setattr, model.positions, "timing_signal",
                           model.positions.timing_signal)
            model.positions.timing_signal = lambda p, d: tf.roll(marian_sinusoids(p, d),
                                                                 d // 2, axis=1)
        elif what == "logits_bias_dropped":
            stack.enter_context(changed(model.logits_bias.bias,
                                        np.zeros(model.logits_bias.bias.shape, np.float32)))
        elif what in ("v_biases_dropped", "output_biases_dropped"):
            for layer in model.encoder_layers + model.decoder_layers:
                attention = layer.self_attention
                if what == "v_biases_dropped":
                    bias = attention.qkv_bias.numpy()
                    bias[2 * attention.key_channels:] = 0.0  # [q | k | v]
                    stack.enter_context(changed(attention.qkv_bias, bias))
                else:
                    stack.enter_context(changed(attention.output_bias,
                                                np.zeros([attention.hidden_size], np.float32)))
        else:  # start_row_zeroed: id 0 embeds to zeros again (the decoder input only)
            embedding = model.target_embedding
            stack.callback(setattr, embedding, "embed_padding", embedding.embed_padding)
            embedding.embed_padding = False
        yield


@pytest.mark.parametrize("name", ["shared_swish", "multilingual_gelu"])
@pytest.mark.parametrize("what", ["sin_cos_swapped", "logits_bias_dropped", "v_biases_dropped",
                                  "output_biases_dropped", "start_row_zeroed"])
def test_a_wrong_mapping_fails_the_check(loaded, name, what):
    expected = expected_of(name)
    with broken(loaded[name].model, what):
        assert max_difference(loaded[name], expected) > 1e-3
    assert max_difference(loaded[name], expected) < 1e-4  # restored


def test_mixed_bfloat16_runs_the_imported_model(loaded):
    """The new weights (attention biases, logits bias) are cast like the others: the
    model runs under mixed_bfloat16 with float32 variables and float32 logits, close
    to float32's."""
    from t2t_lite.marian import weights
    float32 = loaded["multilingual_gelu"]
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        from t2t_lite.model.transformer import build
        model = build(float32.config.hparams, float32.config.vocab_size)
    finally:
        keras.config.set_dtype_policy("float32")
    tensors = weights.read_tensors(str(MARIAN / "multilingual_gelu"))
    weights.assign(model, tensors, True, float32.source_ids, float32.target_ids, "test")
    assert all(v.dtype == "float32" for v in model.weights)
    assert model.encoder_layers[0].self_attention.compute_dtype == "bfloat16"
    expected = expected_of("multilingual_gelu")
    half = type(float32)(model, float32.config, float32.source_ids, float32.target_ids)
    src = tf.constant(padded([float32.source_ids[expected["src_0"]]]))
    tgt = tf.constant(padded([float32.target_ids[expected["tgt_0"]]]))
    assert model({"inputs": src, "targets": tgt}).dtype == tf.float32
    assert max_difference(half, expected) < 0.2  # 0.046 measured


def read_ids(path: pathlib.Path) -> list:
    return [[int(i) for i in line.split()] for line in path.read_text().split("\n")[:-1]]


@pytest.mark.parametrize("name", ["shared_swish", "separate_relu", "multilingual_gelu"])
def test_step_by_step_greedy_decoding_equals_transformers_greedy(loaded, name):
    """decode_step (the cache of the attention biases, the start row at step 0) on
    three recorded lines (two numbers, the empty line), argmax with <pad> barred as
    bad_words_ids bars it: transformers' greedy ids, renumbered."""
    expected = MARIAN / name / "expected"
    sources, outputs = read_ids(expected / "input.ids"), read_ids(expected / "greedy.ids")
    model = loaded[name]
    for line in (0, 1, 50):
        memory, bias = model.model.encode(tf.constant(model.source_ids[sources[line]][None]))
        cache = model.model.init_cache(memory, bias, max_length=None)
        ids, decoded = tf.zeros([1], tf.int32), []
        while len(decoded) < 30 and decoded[-1:] != [1]:
            logits, cache = model.model.decode_step(ids, tf.constant(len(decoded)), cache,
                                                    growing=True)
            logits = logits.numpy()[0]
            logits[0] = -np.inf  # bad_words_ids [[<pad>]]
            decoded.append(int(logits.argmax()))
            ids = tf.constant(decoded[-1:])
        assert decoded == model.target_ids[outputs[line]].tolist(), line
