"""The problem of a model imported from tensor2tensor: t2t-decoder's defaults, no data."""

from t2t_lite.data.problem import NO_INPUT_LIMIT, Problem
from t2t_lite.errors import T2TError


class ImportedProblem(Problem):
    """What t2t-lite knows of a t2t problem from an imported model directory.

    Decoding defaults are t2t-decoder's (`beam_size=4, alpha=0.6,
    extra_length=100`, scores as t2t reports them: `t2t_scores`, and inputs
    never truncated: t2t's `max_length` only filtered training examples, and
    t2t-decoder's `max_input_size` is -1), so `t2t-decoder --output_dir=M`
    with no --decode_hparams decodes and scores as t2t-decoder did; BLEU is
    sacreBLEU's. It has no data of its own: to fine-tune, encode new pairs with
    a t2t-lite problem and `t2t-datagen --vocab_from=M`.
    """

    beam_size = 4
    alpha = 0.6
    extra_length = 100
    t2t_scores = True
    max_input_length = NO_INPUT_LIMIT

    def __init__(self, name: str):
        self.name = name

    def raw_pairs(self, split, tmp_dir):
        raise T2TError(f"{self.name} is a tensor2tensor problem of an imported model: t2t-lite "
                       "has no data for it; use one of t2t-lite's problems with "
                       "t2t-datagen --vocab_from=<the imported model>.")
