"""The parts of bench/datagen_scale.py (imported as `datagen` with bench/ on sys.path,
as when the script runs)."""
