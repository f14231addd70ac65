"""WSJ constituency parsing (the paper's section 6.3) from a local Penn Treebank.

`--tmp_dir` is a treebank directory, nothing is downloaded:

  - the full LDC treebank (`.../wsj/SS/wsj_SSNN.mrg`): sections 02-21 train,
    22 dev, 23 test (the standard split);
  - the NLTK 10% sample (`../shared/data/ptb_sample/combined`, `wsj_0001.mrg`
    ... `wsj_0199.mrg`): files 0001-0159 train, 0160-0179 dev, 0180-0199 test
    (3,396 / 273 / 245 trees).

Each tree is cleaned (`trees.clean_tree`: traces, emptied constituents and
function tags removed, root `TOP`) and linearized (`linearize.linearize`, POS
tags as word slots): source = the words joined by spaces, target =
`(S (NP NNP NNP ) (VP VBZ (NP NNP ) ) . )`.

Scoring: the decoder de-linearizes each output over its input words and
scores with EVALB's rules (`COLLINS.prm`) against *cleaned* gold trees. Datagen
writes them beside the shards, one per line, with the words to decode:

  - `{data_dir}/parsing_wsj-dev.words`, `parsing_wsj-dev.trees`
  - `{data_dir}/parsing_wsj-test.words`, `parsing_wsj-test.trees`

so that `t2t-decoder --decode_from_file=D/parsing_wsj-test.words
--decode_reference=D/parsing_wsj-test.trees` reports F1. (Any bracketed gold
file works as `--decode_reference`, raw `.mrg` text included: the decoder
cleans it the same way.)

Vocabulary: 16,000 pieces as in the paper (t2t's `parsing_english_ptb16k`).
SentencePiece can learn only about 7,000 from the sample's train text; datagen
then uses all it can learn and says so (`build_vocab`), so the sample's
vocabulary is smaller while the full WSJ gets 16,000. Every token of the train
targets (`(NP`, `NNP`, `)`, ...: 72 on the sample) is one piece
(`target_tokens_whole`): learned from the shared text alone, the vocabulary
split tags by the words' statistics (`DT` -> `▁D` `T`, `(S` -> `▁(` `S`), and
targets were 1.5x longer (312,417 train target pieces on the sample, now 212,967).

Decoding writes only well-formed trees (`search_constraint`, see
`t2t_lite.parsing.tree_constraint`): one word slot per input word, balanced
brackets, punctuation tags exactly on punctuation words. A model trained for
30 minutes on the sample does not keep count by itself: unconstrained, 214 of
273 dev outputs (greedy) had a slot too many or too few or a punctuation tag on
a word, and EVALB rejects such a sentence. `--decode_hparams=tree_constraint=False`
turns it off; the decoder's repair rule then aligns slots to words, and 42 of
the 273 dev trees of the same model stay rejected.
"""

from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from t2t_lite import registry
from t2t_lite.data.layout import check_split
from t2t_lite.data.problem import Pair, Problem
from t2t_lite.errors import T2TError
from t2t_lite.parsing import outputs, trees
from t2t_lite.parsing.linearize import linearize


@registry.register_problem("parsing_wsj", aliases=["parsing_english_ptb16k"])
class ParsingWsj(Problem):
    """Words -> linearized constituency tree (POS tags as word slots), metric EVALB F1."""

    source_language = "en"
    target_language = "en_ptb_tree"
    vocab_size = 16000
    target_tokens_whole = True  # `(NP`, `NNP`, `)`: one piece each, never `▁D` + `T`
    num_train_shards = 4

    # The paper's parsing decode settings: beam 21, alpha 0.3, output <= input + 300.
    beam_size = 21
    alpha = 0.3
    extra_length = 300

    def split_trees(self, split: str, tmp_dir: Optional[str]) -> List[trees.Tree]:
        """The cleaned trees of `split`, in treebank order.

        Raises:
          T2TError: no `tmp_dir`, or no treebank found there.
        """
        check_split(split)
        if not tmp_dir:
            raise T2TError(f"{self.name} reads a Penn Treebank: pass --tmp_dir=DIR with the WSJ "
                           ".mrg files (e.g. ../shared/data/ptb_sample/combined).")
        return trees.read_wsj_split(tmp_dir, split)

    def raw_pairs(self, split: str, tmp_dir: Optional[str]) -> Iterator[Pair]:
        for tree in self.split_trees(split, tmp_dir):
            yield linearize(tree)

    def text_files(self, split: str, tmp_dir: Optional[str]) -> Dict[str, Iterable[str]]:
        """For dev and test: `words` (decoder input) and `trees` (cleaned gold, EVALB's reference)."""
        check_split(split)
        if split == "train":
            return {}
        gold = self.split_trees(split, tmp_dir)
        return {"words": [" ".join(t.leaves()) for t in gold], "trees": [str(t) for t in gold]}

    # -- After training: EVALB instead of BLEU, trees over the input words --

    def dev_scores(self, hypotheses: Sequence[str], references: Sequence[str],
                   sources: Sequence[str]) -> Dict[str, float]:
        """BLEU and exact match of the linearized trees, and their EVALB F1."""
        scores = super().dev_scores(hypotheses, references, sources)
        scores["evalb_f1"] = outputs.linearized_f1(hypotheses, references, sources)
        return scores

    def postprocess(self, output: str, source: str) -> str:
        """The decoded linearized tree as a one-line tree over the input's words
        (repaired when malformed; "" for an input without words)."""
        return outputs.output_tree(output, source)

    def report(self, trees_out: Sequence[str], reference_path: str) -> str:
        """EVALB's summary (COLLINS.prm) against the gold trees in `reference_path`."""
        return outputs.evalb_report(trees_out, reference_path)[1]

    def report_score(self, trees_out: Sequence[str], reference_path: str) -> Tuple[str, float]:
        """("F1", EVALB's bracketing FMeasure over all sentences) of `report`."""
        return "F1", outputs.evalb_report(trees_out, reference_path)[0].f1

    def search_constraint(self, vocab):
        """Only well-formed trees, one word slot per input word (`TreeConstraint`)."""
        # Imported here: it needs TensorFlow, which listing problems does not.
        from t2t_lite.parsing.tree_constraint import TreeConstraint
        return TreeConstraint.from_vocab(vocab)
