"""docs/code-layout.md stays true: every package and module of t2t_lite/ has its line.

The page's "Folders" table has a row per package (`t2t_lite/data/`: each of its
modules named in the row) and rows for the top-level modules (first cell starting
with `t2t_lite/`). A module added without a line, or a line naming a module that
is gone, fails here.
"""

import re

from paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "code-layout.md"
PACKAGE = REPO_ROOT / "t2t_lite"


def folder_rows(text: str):
    """[(first cell, second cell)] of the table under "## Folders"."""
    section = text.split("## Folders", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines()
            if line.startswith("| `")]
    return [(cells[0].lstrip("| "), " | ".join(cells[1:])) for cells in rows]


def _compare(folder, described: str, key: str):
    """(modules of `folder` that `described` does not name as `name.py` (or
    `t2t_lite/name.py`), names in `described` that `folder` does not hold),
    each prefixed with `key`."""
    named = set(re.findall(r"`(?:t2t_lite/)?(\w+\.py)`", described))
    held = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
    return ([key + n for n in sorted(held - named)],
            [key + n for n in sorted(named - held)])


def missing_and_gone(text: str, package_root=PACKAGE):
    """(modules of `package_root` without a line, modules named on the page that are gone)."""
    rows = folder_rows(text)
    top_cells = " ".join(where for where, _ in rows if where.startswith("`t2t_lite/")
                         and not where.rstrip("`").endswith("/"))
    missing, gone = _compare(package_root, top_cells, "t2t_lite/")
    rows_by_package = {where.strip("`"): what for where, what in rows
                       if where.startswith("`t2t_lite/") and where.endswith("/`")}
    packages = {f"t2t_lite/{p.name}/": p for p in package_root.iterdir()
                if (p / "__init__.py").is_file()}
    for key in sorted(packages.keys() | rows_by_package.keys()):
        if key not in rows_by_package:
            missing.append(key)
        elif key not in packages:
            gone.append(key)
        else:
            more_missing, more_gone = _compare(packages[key], rows_by_package[key], key)
            missing += more_missing
            gone += more_gone
    return missing, gone


def test_every_package_and_module_has_its_line():
    missing, gone = missing_and_gone(PAGE.read_text(encoding="utf-8"))
    assert (missing, gone) == ([], []), (
        f"docs/code-layout.md: add a line for {missing}; drop the lines of {gone}")


def test_a_module_without_a_line_or_a_line_without_a_module_is_found(tmp_path):
    """The check itself, on a copy of the package with one module added and one removed."""
    import shutil
    copy = tmp_path / "t2t_lite"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "data" / "brand_new.py").write_text('"""New."""\n', encoding="utf-8")
    (copy / "fresh.py").write_text('"""New."""\n', encoding="utf-8")
    (copy / "decode" / "tuning.py").unlink()
    missing, gone = missing_and_gone(PAGE.read_text(encoding="utf-8"), copy)
    assert (missing, gone) == (["t2t_lite/fresh.py", "t2t_lite/data/brand_new.py"],
                               ["t2t_lite/decode/tuning.py"])
