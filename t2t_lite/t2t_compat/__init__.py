"""tensor2tensor 1.15's user-directory API, answered by t2t-lite (`--t2t_usr_dir`).

A --usr_dir written for tensor2tensor runs unchanged: `import tensor2tensor...`
is answered by these modules from the moment a user directory is given
(`t2t_lite.t2t_compat_hook`), one module per t2t module:

  problem          DatasetSplit, SpaceID, the Problem base class
  text_problems    Text2TextProblem (a t2t-lite `Problem`), VocabType, the txt iterators
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
(`tf1`). What the layer cannot compute is refused in one line naming the class
and member (`checks`), never ignored.
"""
