"""Exporting a model directory as a SavedModel for TF Serving (see exporter.py)."""
