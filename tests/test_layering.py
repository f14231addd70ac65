"""The data path runs one way: no import cycle between t2t_lite's packages.

Every `import` of t2t_lite code is counted, at module level or inside a
function (a lazy import hides a cycle from Python, not from this test).
"""

import ast

from paths import REPO_ROOT

# Folder of each installed package (setup.py's package_dir).
ROOTS = {"t2t_lite": REPO_ROOT / "t2t_lite", "t2t_lite.problems": REPO_ROOT / "problems",
         "t2t_lite.hparams": REPO_ROOT / "hparams", "t2t_lite.bin": REPO_ROOT / "bin"}
# The units of layering: a subpackage, or a top-level module of t2t_lite.
PACKAGES = ("data", "model", "train", "decode", "export", "parsing", "metrics", "problems",
            "hparams", "bin")


def unit(module: str) -> str:
    """t2t_lite.decode.search -> "decode"; t2t_lite.model_dir -> "model_dir"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_by_unit():
    graph = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            relative = path.relative_to(root).with_suffix("").parts
            module = ".".join((package, *relative))
            targets = graph.setdefault(unit(module), set())
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for name in names:
                    if name.startswith("t2t_lite.") and unit(name) != unit(module):
                        targets.add(unit(name))
    return graph


def find_cycle(graph):
    """A list of units forming an import cycle, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [nxt])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


def test_no_import_cycle_between_packages():
    graph = imports_by_unit()
    assert set(PACKAGES) <= set(graph), sorted(graph)
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_library_does_not_import_the_programs_or_tests():
    graph = imports_by_unit()
    assert not any("bin" in targets for name, targets in graph.items() if name != "bin")


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_setup_installs_every_package_folder():
    """A folder missing from setup.py's `packages` works in an editable install
    and is absent from a wheel."""
    setup_text = (REPO_ROOT / "setup.py").read_text(encoding="utf-8")
    folders = {"t2t_lite." + ".".join(p.parent.relative_to(ROOTS["t2t_lite"]).parts)
               for p in ROOTS["t2t_lite"].rglob("__init__.py") if p.parent != ROOTS["t2t_lite"]}
    missing = sorted(name for name in folders if f'"{name}"' not in setup_text)
    assert folders and not missing, missing
