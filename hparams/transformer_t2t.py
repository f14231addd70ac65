"""tensor2tensor 1.15's Transformer sets, under their t2t names and with their t2t values.

Users coming from t2t pass the same `--hparams_set` and get the same model,
dropouts and learning rate at every step. t2t 1.15's `transformer_base` and
`transformer_big` are `transformer_base_v3` and `transformer_big_single_gpu`'s
parent; here those two names stay the paper's models (`transformer.py`).

Two values come from t2t's trainer rather than its sets:
  - tokens_per_step=0: a t2t step is one batch of `batch_size` tokens per
    replica, never accumulated (t2t's only accumulation is the multistep
    optimizer);
  - train_steps=250000: t2t-trainer's --train_steps default (t2t has no
    train_steps hparam).

t2t fields of these sets with no equivalent here, and what this project does:
  norm_type="layer" (always layer norm); norm_epsilon (here
  layer_norm_epsilon, same 1e-6); initializer="uniform_unit_scaling" (here
  Glorot-uniform scaled by initializer_gain); optimizer="adam" (always Adam;
  t2t's is LazyAdam); weight_decay=0.0 (none); learning_rate_minimum,
  learning_rate_cosine_cycle_steps, learning_rate_boundaries/multiples (the
  legacy "cosine"/"piecewise" schemes are not supported);
  optimizer_multistep_accumulate_steps (tokens_per_step); ffn_layer=
  "dense_relu_dense", self_attention_type="dot_product",
  multiply_embedding_mode="sqrt_depth" (the only kinds); symbol_modality_num_shards,
  use_pad_remover, daisy_chain_variables, *_broadcast_dims (implementation
  details); use_target_space_embedding=True (no target-space embedding);
  num_sampled_classes, proximity_bias, max_input_seq_length,
  max_target_seq_length, min_length, length_bucket_step, min_length_bucket
  (batching is `t2t_lite.data.bucketing`'s).
"""

from t2t_lite import registry
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.hparams_lib import HParams

# The learning-rate schedule of t2t's transformer_base since v3: the same curve as
# v2's legacy noam (2.0 * 512^-0.5 * min(s w^-1.5, s^-0.5)), written as factors.
_T2T_SCHEDULE = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"


@registry.register_hparams
def transformer_base_v1() -> HParams:
    """t2t's first base set, the paper's model and rate: post-norm, legacy noam, learning_rate 0.1.

    The same as `transformer_base` except for t2t's steps (see the module docstring).
    """
    return transformer_base().replace(tokens_per_step=0, train_steps=250000)


@registry.register_hparams(aliases=["transformer_base_prenorm"])
def transformer_base_v2() -> HParams:
    """v1 with pre-layer-norm, attention and ReLU dropout 0.1, 8000 warm-up steps, learning_rate 0.2."""
    return transformer_base_v1().replace(
        layer_preprocess_sequence="n", layer_postprocess_sequence="da",
        layer_prepostprocess_dropout=0.1, attention_dropout=0.1, relu_dropout=0.1,
        learning_rate_warmup_steps=8000, learning_rate=0.2)


@registry.register_hparams
def transformer_base_v3() -> HParams:
    """t2t 1.15's `transformer_base`: v2 with Adam beta2 0.997 and the factor schedule.

    Rate 2.0 * min(1, s / 8000) * max(s, 8000)^-0.5 * 512^-0.5 at t2t's step s.
    """
    return transformer_base_v2().replace(
        optimizer_adam_beta2=0.997, learning_rate_schedule=_T2T_SCHEDULE,
        learning_rate_constant=2.0)


def _t2t_transformer_big() -> HParams:
    """t2t 1.15's `transformer_big` (unregistered: that name is the paper's big model here)."""
    return transformer_base_v3().replace(
        hidden_size=1024, filter_size=4096, batch_size=2048, num_heads=16,
        layer_prepostprocess_dropout=0.3)


@registry.register_hparams
def transformer_big_single_gpu() -> HParams:
    """t2t 1.15's big model for one GPU: P_drop 0.1, 16000 warm-up steps, 2048-token batches."""
    return _t2t_transformer_big().replace(
        layer_prepostprocess_dropout=0.1, learning_rate_warmup_steps=16000)


@registry.register_hparams
def transformer_base_single_gpu() -> HParams:
    """t2t 1.15's base for one GPU: 1024-token batches, 0.1 * min(1, s/16000) * max(s, 16000)^-0.5."""
    return transformer_base_v3().replace(
        batch_size=1024, learning_rate_schedule="constant*linear_warmup*rsqrt_decay",
        learning_rate_constant=0.1, learning_rate_warmup_steps=16000)


@registry.register_hparams
def transformer_big_enfr() -> HParams:
    """t2t 1.15's EN-FR big model: v3 with d_model 1024, d_ff 8192, 16 heads, P_drop 0.1,
    separate source embedding, target embedding and softmax (4096-token batches)."""
    return transformer_base_v3().replace(
        hidden_size=1024, filter_size=8192, num_heads=16, layer_prepostprocess_dropout=0.1,
        shared_embedding=False, shared_embedding_and_softmax_weights=False)
