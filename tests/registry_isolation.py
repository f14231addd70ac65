"""Fixtures for tests that import user directories: the registries restored afterwards.

Not a conftest.py: the suite's modules import `conftest` by name (tests/conftest.py), and a
second conftest module would take that name; a test module imports what it uses from here.
"""

import sys

import pytest

from t2t_lite import registry, usr_dir


@pytest.fixture
def isolated_registry(tmp_path):
    """Restores both registries and the imported user directory after the test, and
    forgets the modules imported from the test's user directories. The tensor2tensor
    names stay answered: the hook lasts until the process ends, as in a program."""
    registry.discover_all()
    saved = [(r, dict(r._entries), dict(r._aliases), dict(r._origins))
             for r in (registry._problems, registry._hparams)]
    imported = usr_dir._imported
    yield
    for r, entries, aliases, origins in saved:
        r._entries, r._aliases, r._origins = entries, aliases, origins
    usr_dir._imported = imported
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def notes(monkeypatch):
    """The one-line notes of the registry and the t2t compatibility layer, as a list."""
    lines = []
    monkeypatch.setattr(registry, "note", lines.append)
    return lines
