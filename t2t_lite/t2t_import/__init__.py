"""Importing tensor2tensor (1.x) Transformer models: hparams, checkpoint names, the importer."""
