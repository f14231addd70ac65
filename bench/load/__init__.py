"""The parts of bench/http_load.py (imported as `load` with bench/ on sys.path,
as when the script runs)."""
