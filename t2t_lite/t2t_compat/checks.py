"""What the layer refuses, each in one line naming the class and the member.

Refused when a problem is registered (the directory still imports; the
problem refuses when it is used, `registry.problem_refusal`): a MultiProblem; a
problem that is not text to text; a user's override of a member t2t-lite
would not call (`OVERRIDES`: two vocabularies, other features,
preprocessing, metrics, decode hooks, its own data generation). Refused when
it is made (`Text2TextProblem.__init__`): a vocab_type other than t2t's
three (`vocab_refusal`), custom modalities (`problem_hparams`). Members that
only shape t2t's vocabulary builder are said, in one line, not to be used
(`vocab_note`).
"""

from typing import Optional

from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import locate, problem as t2t_problem

COMPAT = "t2t_lite."  # the layer's and t2t-lite's own classes: not the user's

# member -> why a user's override of it cannot run here.
OVERRIDES = {
    "feature_encoders": "t2t-lite's problems have one vocabulary, shared by inputs and "
                        "targets, that datagen builds",
    "get_or_create_vocab": "t2t-lite's datagen builds the vocabulary itself",
    "preprocess_example": "t2t-lite's input pipeline does not call per-example preprocessing",
    "example_reading_spec": "t2t-lite's examples are inputs and targets ids only",
    "generate_encoded_samples": "t2t-lite's datagen encodes the text of generate_samples itself",
    "generate_data": "t2t-lite's datagen writes the data from generate_samples",
    "eval_metrics": "t2t-lite's dev evaluation computes BLEU and chrF (t2t-trainer "
                    "--eval_bleu_sentences)",
    "decode_hooks": "t2t-decoder here scores with the problem's BLEU report, not t2t's hooks",
}


def user_defined(cls, member: str) -> Optional[type]:
    """The user's class defining `member`, if one in `cls`'s MRO does."""
    for klass in cls.__mro__:
        if member in vars(klass):
            return None if klass.__module__.startswith(COMPAT) else klass
    return None


def problem_hparams(problem) -> int:
    """Runs a user's `hparams(defaults, None)` override; returns its target space id.

    Raises:
      T2TError: it chooses another modality than SYMBOL (custom modalities).
    """
    owner = user_defined(type(problem), "hparams")
    if owner is None:
        return t2t_problem.SpaceID.GENERIC
    defaults = t2t_problem.default_problem_hparams()
    try:
        problem.hparams(defaults, None)
    except T2TError:
        raise
    except Exception as e:  # the user's code: any error, told in one line
        raise T2TError(f"{owner.__name__}.hparams failed: {locate.where(e, owner)}") from None
    modalities = getattr(defaults, "modality", {}) or {}
    custom = {k: v for k, v in modalities.items() if v not in ("symbol", None)}
    if custom:
        raise T2TError(f"{owner.__name__}.hparams sets modality {custom!r}: custom modalities "
                       "are not supported (t2t-lite's Transformer has t2t's SYMBOL modality "
                       "only).")
    return int(getattr(defaults, "target_space_id", 0) or 0)


# Members that only shape t2t's own SubwordTextEncoder: a user's override of one has
# no effect on the SentencePiece vocabulary t2t-lite learns from the train pairs.
VOCAB_MEMBERS = ("generate_text_for_vocab", "vocab_data_files", "max_subtoken_length",
                 "use_vocab_from_other_problem")


def vocab_note(problem) -> Optional[str]:
    """The one line naming the user's vocabulary-building members t2t-lite does not use."""
    if problem.vocab_type != "subwords":  # t2t builds no SubwordTextEncoder for it either
        return None
    members = [f"{owner.__name__}.{member}" for member in VOCAB_MEMBERS
               for owner in [user_defined(type(problem), member)] if owner is not None]
    if problem.additional_reserved_tokens:
        members.append(f"additional_reserved_tokens {problem.additional_reserved_tokens!r}")
    if not members:
        return None
    return (f"{problem.name}: {', '.join(members)} shape(s) t2t's SubwordTextEncoder only; "
            "t2t-lite learns its SentencePiece vocabulary from the train pairs and does not "
            "use them.")


def vocab_refusal(problem) -> Optional[str]:
    """The one-line refusal of a vocabulary type t2t-lite cannot build, or None."""
    kind = problem.vocab_type
    if kind in ("subwords", "character", "tokens"):  # t2t's three VocabTypes
        return None
    return (f"{type(problem).__name__}.vocab_type is {kind!r}: not a t2t VocabType "
            "(SUBWORD, CHARACTER or TOKEN).")
