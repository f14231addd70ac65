"""Scores of outputs against references, owned by neither training nor decoding.

`bleu` wraps sacreBLEU (BLEU with the tokenizer that suits the target language,
chrF); `translation` combines them with exact match for dev evaluation and the
decoder's report. Parsing's EVALB F1 lives with the trees it scores
(`t2t_lite.parsing.outputs`). A problem chooses its metrics (`Problem.dev_scores`,
`Problem.report`).
"""
