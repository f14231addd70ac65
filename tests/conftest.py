"""Shared test setup: quiet TensorFlow and locate ../shared/data."""

import os
import pathlib

import pytest

from paths import SHARED_DATA

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.fixture
def shared_data() -> pathlib.Path:
    """../shared/data beside the repository; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data samples not found at {SHARED_DATA}")
    return SHARED_DATA
