"""The t2t-lite tree whose code the child programs run: its links, its commit, and
the check the children make that every module comes from it."""

import os
import subprocess
import sys
from typing import Dict

# This checkout (bench/datagen/ is two folders down): the tree the venv's editable install maps.
INSTALLED_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAPPED_PACKAGES = ("problems", "hparams", "bin")  # setup.py's package_dir: t2t_lite.<name>

# The child programs, run with `python -c CODE ROOT ARGS...` and PYTHONPATH=ROOT,
# start with this (formatted with the modules to check).
CHECK_ORIGIN = """
import os, sys, importlib.util
root = os.path.realpath(sys.argv[1])
for name in {modules!r}:  # found, not imported: t2t-datagen sets TF's log level first
    origin = os.path.realpath(importlib.util.find_spec(name).origin)
    if not origin.startswith(root + os.sep):
        sys.exit(f"datagen_scale: {{name}} comes from {{origin}}, not from {{root}}")
"""


def installed_root() -> str:
    """The tree whose `t2t_lite` this Python imports without PYTHONPATH (the
    editable install's), which may not be the tree this script is in."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import importlib.util, os; print(os.path."
                           "dirname(os.path.dirname(importlib.util.find_spec('t2t_lite').origin)))"],
                          capture_output=True, text=True, env=env, cwd="/")
    return done.stdout.strip() if done.returncode == 0 else INSTALLED_ROOT


def prepare_code_root(code_root: str) -> None:
    """Links `t2t_lite/{problems,hparams,bin}` in a tree other than the installed one."""
    if os.path.realpath(code_root) == os.path.realpath(installed_root()):
        return  # the editable install maps them
    for name in MAPPED_PACKAGES:
        link = os.path.join(code_root, "t2t_lite", name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", name), link)
            print(f"code: linked {link} -> ../{name} (as setup.py's package_dir installs it)")


def git_info(code_root: str) -> Dict:
    """The tree's commit and how many tracked files differ from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", code_root, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    changed = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD") or None,
            "subject": git("log", "-1", "--format=%s")[:100] or None,
            "changed_tracked_files": len(changed.splitlines()) if changed else 0}


def child_env(code_root: str) -> Dict[str, str]:
    """The environment of a child program: `code_root` on PYTHONPATH, unbuffered."""
    return dict(os.environ, PYTHONPATH=os.path.abspath(code_root), PYTHONUNBUFFERED="1")
