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


def missing_and_gone(text: str, package_root=PACKAGE):
    """(modules of `package_root` without a line, modules named on the page that are gone)."""
    rows = folder_rows(text)
    missing, gone = [], []
    top_cells = " ".join(where for where, _ in rows if where.startswith("`t2t_lite/")
                         and not where.rstrip("`").endswith("/"))
    for path in sorted(package_root.glob("*.py")):
        if path.name != "__init__.py" and f"{path.name}`" not in top_cells:
            missing.append(f"t2t_lite/{path.name}")
    for name in re.findall(r"`(?:t2t_lite/)?(\w+\.py)`", top_cells):
        if not (package_root / name).is_file():
            gone.append(f"t2t_lite/{name}")
    packages = sorted(p for p in package_root.iterdir()
                      if (p / "__init__.py").is_file())
    rows_by_package = {where.strip("`"): what for where, what in rows}
    for package in packages:
        key = f"t2t_lite/{package.name}/"
        if key not in rows_by_package:
            missing.append(key)
            continue
        described = rows_by_package[key]
        for path in sorted(package.glob("*.py")):
            if path.name != "__init__.py" and f"`{path.name}`" not in described:
                missing.append(f"{key}{path.name}")
        for name in re.findall(r"`(\w+\.py)`", described):
            if not (package / name).is_file():
                gone.append(f"{key}{name}")
    for where, _ in rows:
        folder = where.strip("`")
        if folder.startswith("t2t_lite/") and folder.endswith("/") \
                and not (REPO_ROOT / folder / "__init__.py").is_file():
            gone.append(folder)
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
