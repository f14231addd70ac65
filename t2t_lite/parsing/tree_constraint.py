"""Constrained decoding for linearized trees: only well-formed outputs.

A parser that writes trees as token sequences (`t2t_lite.parsing.linearize`)
must emit exactly one word slot per input word and balanced brackets. A small
model trained on a few thousand trees often does not: it drops or adds a
slot, and EVALB rejects the sentence. Constraining the search to sequences
that are well-formed trees (as seq2seq parsers commonly do, e.g. Vinyals et
al.'s successors) costs a few masked logits per step and removes those
failures. tensor2tensor and keras-hub have no such search constraint, so it
is written here, as the parsing problem's `SearchConstraint`: a mask over the
next-token logits that `beam_search` and `sample` choose from.

Token kinds come from the vocabulary: parsing vocabularies keep every target
token whole as a SentencePiece user-defined symbol (`Problem.target_tokens_whole`),
so `▁(NP` opens a constituent, `▁)` closes one and every other whole target
token (`▁NN`, `▁,`) is a word slot. Any other piece (pieces of source words)
is never allowed in the output.

The rules, per hypothesis, with `s` slots written, `d` constituents open and
`n` input words (the detokenized input split on whitespace):

- `(X` only while `s < n`, at depth 0 only as the first token (one root), and
  at most `MAX_OPEN_RUN` in a row (the treebank's train trees have at most 6;
  without a bound a model pushed off the punctuation it wanted can open
  `(NP (NP (NP ...` until it runs out of length);
- a slot only while `s < n` and `d >= 1`; and if the next word, word `s`, is
  punctuation that EVALB deletes (`,` `.` `;` `--` `` ` ` ``: `PUNCTUATION_TAGS`)
  only one of those tags (`DELETED_PUNCTUATION_TAGS`); if it is ambiguous
  (`'` is `POS` or `''`) any tag; otherwise none of them (EVALB rejects a
  sentence whose words and tags disagree on what it deletes; the same
  classes as `align_slots`);
- `)` only while `d >= 1`, not right after `(X` (no empty constituent), and
  not closing the root while words are left (`d == 1` and `s < n`);
- EOS only when `s == n` and `d == 0`.

Some token is always allowed, so no hypothesis dies of the constraint; one
that reaches the maximum output length unfinished is repaired by `delinearize`.
"""

from typing import Sequence

import numpy as np
import tensorflow as tf

from t2t_lite.data.vocab import WORD_START
from t2t_lite.errors import T2TError
from t2t_lite.parsing.linearize import (AMBIGUOUS_PUNCTUATION_PATTERN, DELETED_PUNCTUATION_TAGS,
                                        DELETED_PUNCTUATION_WORDS)
from t2t_lite.tensors import NEG_INF

# Token kinds (indices into the per-row table of allowed kinds); PUNCT_SLOT is
# a slot whose tag EVALB deletes.
OTHER, SLOT, PUNCT_SLOT, OPEN, CLOSE, EOS = 0, 1, 2, 3, 4, 5
# Word classes: the next slot's tag must not / must be a deleted punctuation tag, or either.
WORD, PUNCTUATION, EITHER = 0, 1, 2
MAX_OPEN_RUN = 6


def token_kinds(pieces: Sequence[str], whole_target_ids: Sequence[int], eos_id: int = 1) -> np.ndarray:
    """int32 [vocab]: the kind of each id (OTHER, SLOT, PUNCT_SLOT, OPEN, CLOSE or EOS).

    Args:
      pieces: the vocabulary's piece strings, by id.
      whole_target_ids: ids of the whole target tokens (user-defined pieces).

    Raises:
      T2TError: no slot, opening or closing token among `whole_target_ids`
        (a vocabulary without whole target tokens: re-run t2t-datagen).
    """
    kinds = np.full([len(pieces)], OTHER, np.int32)
    for i in whole_target_ids:
        token = pieces[i][1:] if pieces[i].startswith(WORD_START) else pieces[i]
        if token == ")":
            kinds[i] = CLOSE
        elif token.startswith("(") and len(token) > 1:
            kinds[i] = OPEN
        elif token in DELETED_PUNCTUATION_TAGS:
            kinds[i] = PUNCT_SLOT
        elif token and "(" not in token and ")" not in token:
            kinds[i] = SLOT
    kinds[eos_id] = EOS
    if not all((kinds == kind).any() for kind in (SLOT, OPEN, CLOSE)):
        raise T2TError("tree_constraint needs a vocabulary whose tree tokens ('(NP', ')', tags) "
                       "are whole pieces; re-run t2t-datagen for this problem, or decode with "
                       "tree_constraint=False.")
    return kinds


def word_classes(texts: tf.Tensor) -> tf.Tensor:
    """int32 [B, W + 1]: the class (WORD, PUNCTUATION or EITHER) of each
    whitespace-separated word of `texts` tf.string [B], then EITHER as padding
    (so word `n` of a row with `n` words can be looked up)."""
    return _classify(tf.strings.split(texts))


def _classify(words: tf.RaggedTensor) -> tf.Tensor:
    """`word_classes` of words tf.string [B, (W)]."""
    flat = words.flat_values  # [N]
    is_punct = tf.reduce_any(tf.equal(flat[:, tf.newaxis], sorted(DELETED_PUNCTUATION_WORDS)),
                             axis=1)
    ambiguous = tf.strings.regex_full_match(flat, AMBIGUOUS_PUNCTUATION_PATTERN)
    classes = tf.where(is_punct, PUNCTUATION, tf.where(ambiguous, EITHER, WORD))
    classes = words.with_flat_values(classes).to_tensor(default_value=EITHER)  # [B, W]
    return tf.pad(classes, [[0, 0], [0, 1]], constant_values=EITHER)


def initial_state(texts: tf.Tensor) -> dict:
    """The constraint's per-hypothesis state for source `texts` tf.string [B],
    which the search keeps in its cache: beam search reorders the
    counters with the beams; the words' count and classes are the same for
    every beam of an example, so they sit under "static" (tiled, never reordered)."""
    words = tf.strings.split(texts)  # [B, (W)]
    lengths = tf.cast(words.row_lengths(), tf.int32)  # [B]
    zeros = tf.zeros_like(lengths)
    return {"static": {"words": lengths, "classes": _classify(words)},
            "slots": zeros, "depth": zeros, "open_run": zeros}


class TreeConstraint:
    """The parsing problem's `SearchConstraint`: only well-formed trees (rules
    in the module docstring).

    Args:
      kinds: int32 [vocab], `token_kinds` of the vocabulary.
      vocab: the `SubwordVocab`, to read the input words back from model
        inputs in `initial_state` (in-graph, so it works inside a SavedModel).
    """

    # Its initial state splits the input into words with SentencePiece ops,
    # which XLA cannot compile.
    supports_xla = False

    def __init__(self, kinds: np.ndarray, vocab=None):
        self.kinds = tf.constant(kinds)  # [V]
        self.vocab = vocab

    @classmethod
    def from_vocab(cls, vocab) -> "TreeConstraint":
        """The constraint for a vocabulary with whole tree tokens.

        Raises:
          T2TError: the vocabulary has no whole tree tokens (see `token_kinds`).
        """
        return cls(token_kinds(vocab.pieces(), vocab.whole_token_ids), vocab)

    def initial_state(self, inputs: tf.Tensor) -> dict:
        """The state for model inputs int32 [B, S]: `initial_state` of their words."""
        return initial_state(self.vocab.decode(inputs))

    def apply(self, logits, ids, step, state):
        """Masks `logits` [rows, V] for the token after `ids` [rows]; returns
        (masked logits, the state after `ids`)."""
        del step  # the state counts what has been written
        kinds = self.kinds
        last = tf.gather(kinds, ids)  # [rows]; the start id 0 is OTHER
        slots = state["slots"] + tf.cast((last == SLOT) | (last == PUNCT_SLOT), tf.int32)
        depth = (state["depth"] + tf.cast(last == OPEN, tf.int32)
                 - tf.cast(last == CLOSE, tf.int32))
        open_run = tf.where(last == OPEN, state["open_run"] + 1, 0)
        words, classes = state["static"]["words"], state["static"]["classes"]
        next_class = tf.gather(classes, tf.minimum(slots, tf.shape(classes)[1] - 1),
                               batch_dims=1)  # [rows]
        words_left = slots < words
        slot_ok = words_left & (depth >= 1)
        nothing_yet = (slots == 0) & (depth == 0)
        # Which kinds each row may write next, indexed by kind: [rows, 6].
        allowed_kinds = tf.stack([
            tf.zeros_like(words_left),                                      # OTHER
            slot_ok & (next_class != PUNCTUATION),                          # SLOT
            slot_ok & (next_class != WORD),                                 # PUNCT_SLOT
            words_left & ((depth >= 1) | nothing_yet) & (open_run < MAX_OPEN_RUN),  # OPEN
            (depth >= 1) & (last != OPEN) & ~((depth == 1) & words_left),  # CLOSE
            ~words_left & (depth == 0),                                     # EOS
        ], axis=1)
        allowed = tf.gather(allowed_kinds, kinds, axis=1)  # [rows, V]
        logits = tf.where(allowed, logits, tf.constant(NEG_INF, logits.dtype))
        return logits, {"static": state["static"], "slots": slots, "depth": depth,
                        "open_run": open_run}
