"""Hugging Face Marian (OPUS-MT) models imported as t2t-lite model directories."""
