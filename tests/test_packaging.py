"""A user's editable installs, with the pip that `python3 -m venv` gives, keep every program working.

The README installs with `python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]'`;
TensorFlow then brings the `wheel` package, and a later `pip install -e '.[serve]'` (or any
other extra) runs in that venv. Without pyproject.toml's [build-system], the pip of Python
3.11's venv (23.2) built that second install with a legacy `setup.py develop`, whose
egg-link cannot map `t2t_lite.bin` to bin/: every program died with `ModuleNotFoundError`.

The test venv gets TensorFlow and the other dependencies from this interpreter's
site-packages through a .pth file and installs the project with `--no-deps`; the project
itself is built as a user's pip builds it (PEP 517 in an isolated build environment, which
pip fills from the package index).
"""

import pathlib
import shutil
import subprocess
import sys

from paths import REPO_ROOT

# What setup.py builds the package from (its package_dir), copied so that the build's
# files (t2t_lite.egg-info) land in the copy, not in the repository.
_SOURCES = ["setup.py", "pyproject.toml", "t2t_lite", "bin", "problems", "hparams"]


def _run(argv, cwd: pathlib.Path) -> str:
    """Runs a command; fails the test with its output when it exits non-zero."""
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"{' '.join(map(str, argv))} exited {done.returncode}:\n"
                                  f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def _copy_sources(to: pathlib.Path) -> pathlib.Path:
    to.mkdir()
    for name in _SOURCES:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, to / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        elif (REPO_ROOT / name).exists():
            shutil.copy2(REPO_ROOT / name, to / name)
    return to


def test_a_second_editable_install_with_wheel_present_keeps_every_program(tmp_path):
    source = _copy_sources(tmp_path / "t2t-lite")
    venv = tmp_path / "venv"
    # This interpreter's venv module makes a venv of the base Python, with its bundled pip.
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    pip, python = venv / "bin" / "pip", venv / "bin" / "python"
    [site_packages] = venv.glob("lib/python3.*/site-packages")
    [pip_version] = [p.name for p in site_packages.glob("pip-*.dist-info")]  # 23.2.1 on 3.11.7

    # 1. The README's install (its dependencies come next, from this interpreter).
    _run([pip, "install", "-q", "--no-deps", "-e", ".[test]"], cwd=source)
    here = [path for path in sys.path if path.endswith("site-packages")]
    (site_packages / "zz_dependencies.pth").write_text("\n".join(here) + "\n", encoding="utf-8")
    # 2. `wheel` in the venv, as TensorFlow's dependencies bring it (already there: no download).
    _run([pip, "install", "-q", "wheel"], cwd=source)
    # 3. A second editable install, as `pip install -e '.[serve]'` runs it.
    _run([pip, "install", "-q", "--no-deps", "-e", ".[serve]"], cwd=source)

    imported = _run([python, "-c", (
        "import t2t_lite.bin.t2t_bleu, t2t_lite.problems, t2t_lite.hparams\n"
        "for m in (t2t_lite.bin.t2t_bleu, t2t_lite.problems, t2t_lite.hparams):\n"
        "    print(m.__file__)")], cwd=tmp_path)
    assert imported.split() == [str(source / "bin" / "t2t_bleu.py"),
                                str(source / "problems" / "__init__.py"),
                                str(source / "hparams" / "__init__.py")], pip_version
    usage = _run([venv / "bin" / "t2t-bleu", "--help"], cwd=tmp_path)
    assert usage.startswith("usage: t2t-bleu "), pip_version
