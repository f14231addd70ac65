"""tensor2tensor.data_generators.multi_problem: MultiProblem, refused when used.

A MultiProblem mixes several problems' examples inside t2t's input pipeline,
with task ids; t2t-lite mixes train corpora of one problem by weight
(`t2t-trainer --train_mix`) instead. Registering one works (the directory
stays importable); using it is a one-line refusal (`checks`).
"""

from t2t_lite.t2t_compat import problem


class MixingSchedule:
    EXPONENTIAL = "exponential"
    CONSTANT = "constant"
    PRETRAIN = "pretrain"


class MultiProblem(problem.Problem):
    """t2t's MultiProblem (refused when used)."""

    def __init__(self, was_reversed=False, was_copy=False):
        self.task_list = []
