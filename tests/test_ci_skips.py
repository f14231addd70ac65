"""In CI a skipped test fails the run (tests/conftest.py); elsewhere it stays a skip."""

import os
import subprocess
import sys

import pytest

from conftest import skips_fail
from paths import REPO_ROOT

PROBE = "import pytest\n\ndef test_needs_something_absent():\n    pytest.skip('no such thing')\n"


@pytest.mark.parametrize("env, fails", [
    ({}, False), ({"CI": "true"}, True), ({"CI": "1"}, True), ({"CI": "false"}, False),
    ({"CI": "0"}, False), ({"T2T_LITE_NO_SKIPS": "1"}, True),
])
def test_who_counts_as_ci(monkeypatch, env, fails):
    for name in ("CI", "T2T_LITE_NO_SKIPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert skips_fail() is fails


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one_process", "two_workers"])
def test_a_skip_fails_a_ci_run_and_is_named(tmp_path, workers):
    """pytest in its own process, with this suite's conftest as a plugin, on one
    test that skips: exit 1 and the skipped test named with its reason under CI=1,
    also when pytest-xdist runs the test on a worker (as pytest.ini does)."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "T2T_LITE_NO_SKIPS")}
    env.update(CI="1", PYTHONPATH=str(REPO_ROOT / "tests"), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
         "--rootdir", str(tmp_path), *workers, str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("SKIPPED IN CI (not allowed): test_probe.py::test_needs_something_absent: "
            "Skipped: no such thing") in result.stdout, result.stdout
