"""Every row of the paper's Table 3 (model variations, on newstest2013) as a set.

All rows change the base model and train for its 100k steps.
"""

from t2t_lite import registry
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.hparams_lib import HParams


def _register(name: str, doc: str, **changes) -> None:
    def hparams_set() -> HParams:
        return transformer_base().replace(**changes)

    hparams_set.__name__ = name
    hparams_set.__doc__ = doc
    registry.register_hparams(name)(hparams_set)


# (A) Number of heads at constant computation: d_k = d_v = d_model / h.
for _heads in (1, 4, 16, 32):
    _register(f"transformer_table3_a_heads{_heads}",
              f"Table 3 (A): h={_heads}, d_k=d_v={512 // _heads}.", num_heads=_heads)

# (B) Smaller attention key size d_k (h=8, d_v stays 64).
for _dk in (16, 32):
    _register(f"transformer_table3_b_dk{_dk}", f"Table 3 (B): d_k={_dk}.",
              attention_key_channels=8 * _dk)

# (C) Bigger and smaller models.
for _layers in (2, 4, 8):
    _register(f"transformer_table3_c_layers{_layers}", f"Table 3 (C): N={_layers}.",
              num_hidden_layers=_layers)
_register("transformer_table3_c_dmodel256", "Table 3 (C): d_model=256, d_k=d_v=32.",
          hidden_size=256)
_register("transformer_table3_c_dmodel1024", "Table 3 (C): d_model=1024, d_k=d_v=128.",
          hidden_size=1024)
for _dff in (1024, 4096):
    _register(f"transformer_table3_c_dff{_dff}", f"Table 3 (C): d_ff={_dff}.", filter_size=_dff)

# (D) Dropout and label smoothing.
_register("transformer_table3_d_dropout0", "Table 3 (D): P_drop=0.0.",
          layer_prepostprocess_dropout=0.0)
_register("transformer_table3_d_dropout2", "Table 3 (D): P_drop=0.2.",
          layer_prepostprocess_dropout=0.2)
_register("transformer_table3_d_smoothing0", "Table 3 (D): epsilon_ls=0.0.", label_smoothing=0.0)
_register("transformer_table3_d_smoothing2", "Table 3 (D): epsilon_ls=0.2.", label_smoothing=0.2)

# (E) Learned positional embeddings instead of sinusoids.
_register("transformer_table3_e_learned_pos",
          "Table 3 (E): learned positional embeddings instead of sinusoids.", pos="emb")
