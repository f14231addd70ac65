"""A crash inside a program (fd 2 filtered by `cli.filtered_native_stderr`) still
prints faulthandler's report on stderr when faulthandler is on."""

import subprocess
import sys
import textwrap

import pytest

# Reads address 0 (a SIGSEGV) inside the filtered block or after it.
CRASH = textwrap.dedent("""
    import ctypes, faulthandler, sys
    faulthandler.enable()
    from t2t_lite.bin import cli
    with cli.filtered_native_stderr():
        print("inside", flush=True)
        if sys.argv[1] == "inside":
            ctypes.string_at(0)
    print("after", flush=True)
    ctypes.string_at(0)
""")


@pytest.mark.parametrize("where", ["inside", "after"])
def test_a_crash_prints_its_stack_on_stderr(where):
    proc = subprocess.run([sys.executable, "-c", CRASH, where], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -11
    assert proc.stdout.split() == ["inside", "after"][:1 + (where == "after")]
    lines = proc.stderr.splitlines()
    assert lines[:1] == ["Fatal Python error: Segmentation fault"], proc.stderr
    # The line of CRASH that crashed: 8 inside the block, 10 after it.
    assert f'  File "<string>", line {8 if where == "inside" else 10} in <module>' in lines
