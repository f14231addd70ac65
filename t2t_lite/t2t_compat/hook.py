"""The import hook that answers `import tensor2tensor...` inside a --usr_dir.

`install(path)` (called by `t2t_lite.usr_dir.import_usr_dir` just before it
imports a user directory) puts one finder at the front of `sys.meta_path`,
for the rest of the process. It does two things:

  - `tensor2tensor` and the t2t modules user directories import
    (`MODULES`) are answered by the modules of `t2t_lite.t2t_compat`; any other
    `tensor2tensor.*` module is a `ModuleNotFoundError` that lists what is
    provided. No top-level `tensor2tensor` package is installed, so nothing
    else the user runs is shadowed before a user directory is given.
  - The modules of the user directory get TensorFlow 1's `tf.gfile` and
    `tf.logging` (`t2t_lite.t2t_compat.tf1`) before their code runs: their
    `import tensorflow` (or `tensorflow.compat.v1`) binds a view of it that
    answers them, said in one line per directory; TensorFlow itself is left as
    it is for every other module.

The compatibility modules are named here as data and imported on first use
(importing them all would cost every program that only might get a user
directory), from this package: `t2t_lite.usr_dir` depends on this package,
which depends on nothing that reads a user directory.
"""

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from typing import Dict, List, Optional

from t2t_lite.t2t_compat import tf1

# t2t module -> the t2t_lite.t2t_compat module answering it (None: a package).
MODULES: Dict[str, Optional[str]] = {
    "tensor2tensor": None,
    "tensor2tensor.data_generators": None,
    "tensor2tensor.data_generators.problem": "problem",
    "tensor2tensor.data_generators.text_problems": "text_problems",
    "tensor2tensor.data_generators.translate": "translate",
    "tensor2tensor.data_generators.generator_utils": "generator_utils",
    "tensor2tensor.data_generators.text_encoder": "text_encoder",
    "tensor2tensor.data_generators.multi_problem": "multi_problem",
    "tensor2tensor.utils": None,
    "tensor2tensor.utils.registry": "registry",
    "tensor2tensor.utils.hparam": "hparam",
    "tensor2tensor.models": None,
    "tensor2tensor.models.transformer": "transformer",
    "tensor2tensor.layers": None,
    "tensor2tensor.layers.common_hparams": "common_hparams",
    "tensor2tensor.layers.modalities": "modalities",
}
COMPAT_PACKAGE = __name__.rpartition(".")[0]  # t2t_lite.t2t_compat


class _Alias(importlib.abc.Loader):
    """Loads a t2t name as an already imported module (or an empty package)."""

    def __init__(self, target: Optional[str]):
        self.target = target

    def create_module(self, spec):
        if self.target is None:
            package = types.ModuleType(spec.name, "tensor2tensor names answered by t2t-lite's "
                                                  "compatibility layer (t2t_lite.t2t_compat).")
            package.__path__ = []
            return package
        return importlib.import_module(f"{COMPAT_PACKAGE}.{self.target}")

    def exec_module(self, module):
        pass  # the module ran when it was first imported


class _UsrDirLoader(importlib.abc.Loader):
    """Runs a user-directory module with its own loader, its imports of TensorFlow
    answered by TF1 views (`tf1.builtins_for`)."""

    def __init__(self, loader, usr_dir: str):
        self.loader = loader
        self.usr_dir = usr_dir

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__builtins__ = tf1.builtins_for(self.usr_dir)
        self.loader.exec_module(module)
        tf1.adapt_module(module, self.usr_dir)

    def __getattr__(self, name):  # get_source, get_filename, ...: the real loader's
        return getattr(self.loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Answers t2t's names, and wraps the loaders of user-directory modules."""

    def __init__(self):
        self.usr_dirs: Dict[str, str] = {}  # package name -> its directory

    def find_spec(self, fullname, path, target=None):
        if fullname == "tensor2tensor" or fullname.startswith("tensor2tensor."):
            if fullname not in MODULES:
                raise ModuleNotFoundError(
                    f"No module named {fullname!r}: t2t-lite's tensor2tensor compatibility "
                    f"layer provides {', '.join(provided())}.")  # no name=: `from
                # tensor2tensor.models import lstm` would swallow it and say less
            return importlib.machinery.ModuleSpec(fullname, _Alias(MODULES[fullname]),
                                                  is_package=MODULES[fullname] is None)
        top = fullname.split(".")[0]
        if top not in self.usr_dirs:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        directory = self.usr_dirs[top]
        if (spec is None or spec.loader is None or not spec.origin
                or not os.path.abspath(spec.origin).startswith(directory + os.sep)):
            return None  # another module of that name: the other finders' business
        spec.loader = _UsrDirLoader(spec.loader, directory)
        return spec


_finder: Optional[_Finder] = None


def provided() -> List[str]:
    """The t2t modules the layer answers (not the packages holding them)."""
    return [name for name, target in MODULES.items() if target]


def install(usr_dir: str) -> None:
    """Answers `tensor2tensor` from now on, and gives the modules of the package at
    `usr_dir` (an absolute path) TF1's `tf.gfile` and `tf.logging` (see module doc)."""
    global _finder
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
    _finder.usr_dirs[os.path.basename(usr_dir)] = usr_dir
