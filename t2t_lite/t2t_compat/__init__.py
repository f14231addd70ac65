"""tensor2tensor 1.15's user-directory API, answered by t2t-lite (`--t2t_usr_dir`).

A --usr_dir written for tensor2tensor runs unchanged: `import tensor2tensor...`
is answered by these modules from the moment a user directory is given
(`hook`), one module per t2t module:

  problem          DatasetSplit, SpaceID, the Problem base class
  text_problems    Text2TextProblem (a t2t-lite `Problem`), Text2textTmpdir, VocabType,
                   the txt iterators
  translate        TranslateProblem, compile_data
  generator_utils  maybe_download, gunzip_file
  text_encoder     the reserved ids and tokens, SubwordTextEncoder
  registry         register_problem, register_hparams
  hparam           HParams (t2t's names and values)
  transformer      t2t's Transformer sets (transformer_base() ...)
  common_hparams   basic_params1, refused
  modalities       ModalityType's names
  multi_problem    MultiProblem, refused

and a user module's `tf.gfile` / `tf.logging` by TensorFlow 2.21
(`tf1`). Behind them: `samples` (t2t's splits of generate_samples),
`hparams_sets` (t2t's values -> t2t-lite's fields, by t2t-import's mapping),
`checks` (what is refused, in one line naming the class and member, never
ignored) and `locate` (where a user's code failed).
"""
