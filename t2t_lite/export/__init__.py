"""Exporting a model directory: a SavedModel for TF Serving (exporter.py) or a
CTranslate2 model (ctranslate2_export.py), as numbered versions (versions.py)."""
