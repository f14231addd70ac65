"""Shared by the tests of t2t's user-directory compatibility layer (t2t_lite.t2t_compat)."""

import sys

import pytest

from t2t_lite import registry, usr_dir


@pytest.fixture
def isolated_registry(tmp_path):
    """Restores both registries and the imported user directory after the test,
    and forgets the modules imported from the test's user directories (as
    tests/test_usr_dir.py does). The tensor2tensor names stay answered: the hook
    lasts until the process ends, as it does for a program."""
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
    """The one-line notes of the registry and the layer, as a list."""
    lines = []
    monkeypatch.setattr(registry, "note", lines.append)
    return lines
