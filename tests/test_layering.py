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


def string_import(node) -> str:
    """The module a call `importlib.import_module("t2t_lite...")` or
    `__import__("t2t_lite...")` names ("" for any other node): a constant string,
    or the constant start of an f-string up to its last dot (`f"t2t_lite.x.{name}"`
    names t2t_lite.x)."""
    if not isinstance(node, ast.Call) or not node.args:
        return ""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called not in ("import_module", "__import__"):
        return ""
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    if isinstance(first, ast.JoinedStr) and first.values \
            and isinstance(first.values[0], ast.Constant):
        return first.values[0].value.rpartition(".")[0]
    return ""


def module_imports(tree, modules=()):
    """Every t2t_lite module name `tree` imports (module level, inside functions, or by
    an importlib string). `from package import module` names the module when
    `modules` (all module names) holds it, else the package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = [f"{node.module}.{a.name}" for a in node.names]
            found = [name for name in submodules if name in modules]
            yield from found or [node.module]
            if not modules:
                yield from submodules
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif string_import(node):
            yield string_import(node)


def modules_of_roots():
    """{module name: path} of every module of the installed packages (a package's
    `__init__.py` is the package's name)."""
    modules = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            relative = path.relative_to(root).with_suffix("").parts
            if relative and relative[-1] == "__init__":
                relative = relative[:-1]
            modules[".".join((package, *relative))] = path
    return modules


def imports_by_unit():
    graph = {}
    for module, path in modules_of_roots().items():
        targets = graph.setdefault(unit(module), set())
        for name in module_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if name.startswith("t2t_lite.") and unit(name) != unit(module):
                targets.add(unit(name))
    return graph


def imports_within_packages(modules=None):
    """{module: the modules of its own package it imports}, for every package."""
    modules = modules or modules_of_roots()
    graph = {}
    for module, path in modules.items():
        package = module.rpartition(".")[0] if not path.name == "__init__.py" else module
        targets = graph.setdefault(module, set())
        for name in module_imports(ast.parse(path.read_text(encoding="utf-8")), modules):
            if name in modules and name != module and name.rpartition(".")[0] == package:
                targets.add(name)
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


def test_no_import_cycle_inside_a_package():
    """A lazy import inside a function hides such a circle from Python, not from here."""
    cycle = find_cycle(imports_within_packages())
    assert cycle is None, " -> ".join(cycle)


def test_a_cycle_inside_a_package_and_an_importlib_cycle_are_found(tmp_path):
    """The checks themselves, on made-up modules: a circle of two modules of one
    package (one import inside a function), and an importlib string that closes a
    circle between packages."""
    (tmp_path / "a.py").write_text("from t2t_lite.data import b\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from t2t_lite.data import a\n",
                                   encoding="utf-8")
    (tmp_path / "c.py").write_text(
        "import importlib\nimportlib.import_module(f't2t_lite.train.{name}')\n",
        encoding="utf-8")
    made_up = {"t2t_lite.data.a": tmp_path / "a.py", "t2t_lite.data.b": tmp_path / "b.py"}
    assert find_cycle(imports_within_packages(made_up)) == [
        "t2t_lite.data.a", "t2t_lite.data.b", "t2t_lite.data.a"]
    named = set(module_imports(ast.parse((tmp_path / "c.py").read_text(encoding="utf-8"))))
    assert "t2t_lite.train" in named  # data -> train, while train imports data: a cycle
    graph = imports_by_unit()
    graph["data"] = graph["data"] | {unit(name) for name in named if name.startswith("t2t_lite.")}
    assert find_cycle(graph) is not None


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
