"""Every pinned install requirement is imported by the package, or is named here with its reason.

A dependency installed for every user but imported nowhere (keras-hub was one:
README, "Why not keras-hub") costs install size and, once imported, start-up
time; this test fails when one is added without a reason.
"""

import ast
import importlib.metadata
import re

from paths import REPO_ROOT

# Pins the package needs without importing them itself (the same reasons as in setup.py).
NOT_IMPORTED = {
    "importlib-resources": "tensorflow-datasets imports it without declaring it",
    "tensorboard": "tf.summary writes TensorBoard event files with it",
    "protobuf": "sentencepiece_model_pb2 (read in vocab.py) is built on it",
}


def normalized(distribution: str) -> str:
    """A distribution name as pip compares them (PEP 503): `importlib_resources` -> `importlib-resources`."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def setup_literals() -> dict:
    """setup.py's INSTALL_REQUIRES and `package_dir`, read without running setup()."""
    tree = ast.parse((REPO_ROOT / "setup.py").read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["INSTALL_REQUIRES"]:
            found["install_requires"] = ast.literal_eval(node.value)
        elif isinstance(node, ast.keyword) and node.arg == "package_dir":
            found["package_dir"] = ast.literal_eval(node.value)
    return found


def imported_top_level_names(folders) -> set:
    """Top-level module names imported anywhere (module level or in a function) in `folders`."""
    names = set()
    for folder in folders:
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module.split(".")[0])
    return names


def unimported_pins(requirements) -> set:
    """The pinned distributions (normalized) that no module of the package imports."""
    pinned = {normalized(requirement.split("==")[0]) for requirement in requirements}
    providers = importlib.metadata.packages_distributions()  # import name -> distributions
    folders = set(setup_literals()["package_dir"].values())
    imported = {normalized(dist) for name in imported_top_level_names(folders)
                for dist in providers.get(name, ())}
    return pinned - imported


def test_every_pin_is_imported_or_has_a_reason():
    assert unimported_pins(setup_literals()["install_requires"]) == set(NOT_IMPORTED)


def test_keras_hub_pinned_again_would_fail_the_check():
    requirements = setup_literals()["install_requires"] + ["keras-hub==0.32.0"]
    assert unimported_pins(requirements) == set(NOT_IMPORTED) | {"keras-hub"}


def test_normalized_names():
    assert normalized("importlib_resources") == "importlib-resources"
    assert normalized("Keras.Hub") == "keras-hub"
