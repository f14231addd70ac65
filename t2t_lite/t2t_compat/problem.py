"""tensor2tensor.data_generators.problem: DatasetSplit, SpaceID and the Problem base.

The base is a t2t-lite `Problem`; only `text_problems.Text2TextProblem`
subclasses run (a problem of another kind is refused when used: `checks`).
The members t2t's base defines and t2t-lite does not honour
(`feature_encoders`, `preprocess_example`, `eval_metrics`, `decode_hooks`, ...)
are defined here so that a user's override of one can be told from the base's.
"""

from types import SimpleNamespace

from t2t_lite.data.problem import Problem as LiteProblem


class DatasetSplit:
    """t2t's split names; EVAL is t2t-lite's "dev"."""
    TRAIN = "train"
    EVAL = "eval"
    TEST = "test"


class SpaceID:
    """t2t 1.15's input/target space ids (the row of its target-space embedding)."""
    GENERIC = 0
    IMAGE_LABEL = 1
    EN_CHR = 2
    EN_TOK = 3
    EN_BPE_TOK = 4
    FR_CHR = 5
    FR_TOK = 6
    DE_CHR = 7
    DE_TOK = 8
    DE_BPE_TOK = 9
    DIGIT_0 = 10
    DIGIT_1 = 11
    AUDIO_WAV = 12
    AUDIO_SPECTRAL = 13
    PARSE_CHR = 14
    PARSE_TOK = 15
    ZH_TOK = 16
    ICE_CHAR = 17
    ICE_TOK = 18
    ICE_PARSE_TOK = 19
    MK_TOK = 20
    CS_TOK = 21
    CS_CHR = 22
    DNA = 23
    REAL = 24
    IMAGE = 25
    PEPTIDE = 26
    PY_TOK = 27
    CPP_TOK = 28
    STROKES = 29
    PICKLED_PYTHON = 30


def default_problem_hparams() -> SimpleNamespace:
    """What t2t's `Problem.hparams(defaults, ...)` receives (the fields users set)."""
    return SimpleNamespace(loss_multiplier=1.0, batch_size_multiplier=1, stop_at_eos=False,
                           modality={}, vocab_size={}, input_space_id=SpaceID.GENERIC,
                           target_space_id=SpaceID.GENERIC)


class Problem(LiteProblem):
    """t2t's Problem base (see the module doc)."""

    def dataset_filename(self) -> str:
        return self.name

    @property
    def has_inputs(self) -> bool:
        return True

    def hparams(self, defaults, model_hparams):
        """t2t's problem hparams hook: users set space ids here (`checks.problem_hparams`)."""

    # Defined for `checks`: a subclass overriding one of these is refused.
    def feature_encoders(self, data_dir):
        raise NotImplementedError

    def preprocess_example(self, example, mode, hparams):
        return example

    def eval_metrics(self):
        return []

    @property
    def decode_hooks(self):
        return []

    def example_reading_spec(self):
        raise NotImplementedError

    def generate_data(self, data_dir, tmp_dir, task_id=-1):
        raise NotImplementedError
