"""TensorFlow 1's `tf.gfile` and `tf.logging` for the code of a --usr_dir, and refusals.

t2t user directories call `tf.gfile.Exists/Open/GFile/Glob/MakeDirs` and
`tf.logging.info` most. TensorFlow 2.21 keeps both under `tf.compat.v1`
(`gfile` there is `tf.io.gfile` with TF1's names), so a user module gets a
view of TensorFlow that answers those two from there; everything else is
TensorFlow 2.21's own. The view is what the module's own imports return
(`builtins_for`: its `__import__` answers `tensorflow`, `tensorflow.compat` and
`tensorflow.compat.v1` with views), so it holds from the module's first line:
`tf.logging.set_verbosity(...)` at import time, a default argument
`open_fn=tf.gfile.Open` and a class body work. `adapt_module` swaps any
global still bound to TensorFlow after the module has run (e.g. one from
`importlib.import_module`). `tf.contrib` (gone in TF2), sessions
(`tf.Session`: t2t-lite runs eagerly and in `tf.function`s) and the calls that
switch the process to TF1's graph mode (`disable_v2_behavior`,
`disable_eager_execution`) are refused in one line. TensorFlow itself is never
changed, so other code is unaffected.
"""

import builtins
import sys
import types
from typing import Dict

from t2t_lite import registry
from t2t_lite.errors import T2TError

_TF_NAMES = ("tensorflow", "tensorflow.compat.v1")
_REFUSED = {
    "contrib": "tf.contrib is TensorFlow 1's and does not exist in TensorFlow 2.21; t2t-lite's "
               "tensor2tensor compatibility layer does not provide it.",
    "Session": "tf.Session: TensorFlow 1 sessions are not supported by t2t-lite's tensor2tensor "
               "compatibility layer (its data code runs eagerly).",
    "InteractiveSession": "tf.InteractiveSession: TensorFlow 1 sessions are not supported by "
                          "t2t-lite's tensor2tensor compatibility layer (its data code runs "
                          "eagerly).",
}
for _call in ("disable_v2_behavior", "disable_eager_execution"):
    _REFUSED[_call] = (f"tf.compat.v1.{_call}(): t2t-lite runs TensorFlow 2 (eager execution "
                       "and tf.function) in the whole process, and a --usr_dir cannot switch "
                       "it to TensorFlow 1's graph mode; remove the call (tf.gfile and "
                       "tf.logging work without it).")
_said = set()  # user directories told the one line in this process


class _TF1View(types.ModuleType):
    """TensorFlow (or tf.compat.v1) with TF1's gfile/logging and the refusals above,
    for the code of the user directory `usr_dir`."""

    def __init__(self, tf_module, usr_dir: str):
        super().__init__(tf_module.__name__, tf_module.__doc__)
        self._tf = tf_module
        self._usr_dir = usr_dir

    def __getattr__(self, name):
        if name in _REFUSED:
            raise T2TError(_REFUSED[name])
        if name in ("gfile", "logging"):
            _say(self._usr_dir)
            return getattr(sys.modules["tensorflow"].compat.v1, name)
        if name == "compat":
            return _CompatView(self._tf.compat, self._usr_dir)
        return getattr(self._tf, name)

    def __dir__(self):
        return sorted(set(dir(self._tf)) | {"gfile", "logging"})


class _CompatView(types.ModuleType):
    """`tf.compat`, whose `v1` is a `_TF1View` too."""

    def __init__(self, compat, usr_dir: str):
        super().__init__(compat.__name__)
        self._compat = compat
        self._usr_dir = usr_dir

    def __getattr__(self, name):
        value = getattr(self._compat, name)
        return _TF1View(value, self._usr_dir) if name == "v1" else value


def _is_tensorflow(value) -> bool:
    return (isinstance(value, types.ModuleType) and not isinstance(value, _TF1View)
            and getattr(value, "__name__", None) in _TF_NAMES)


def _view(value, usr_dir: str):
    """The TF1 view of `tensorflow`, `tensorflow.compat` or `tensorflow.compat.v1`
    for `usr_dir`; any other value as it is."""
    if _is_tensorflow(value):
        return _TF1View(value, usr_dir)
    if (isinstance(value, types.ModuleType) and not isinstance(value, _CompatView)
            and value.__name__ == "tensorflow.compat"):
        return _CompatView(value, usr_dir)
    return value


def builtins_for(usr_dir: str) -> Dict:
    """The builtins of a module of `usr_dir`: Python's, with an `__import__` whose
    `tensorflow` names are their TF1 views. Set as the module's `__builtins__`
    before its code runs, they serve its top level, class bodies and functions."""
    def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
        value = builtins.__import__(name, globals, locals, fromlist, level)
        if level == 0 and (name == "tensorflow" or name.startswith("tensorflow.")):
            return _view(value, usr_dir)
        return value

    names = dict(vars(builtins))
    names["__import__"] = tf1_import
    return names


def adapt_module(module: types.ModuleType, usr_dir: str) -> None:
    """Swaps the globals of `module` (of the user directory `usr_dir`) still bound to
    `tensorflow` or `tensorflow.compat.v1` after it has run for their TF1 views."""
    for name, value in list(vars(module).items()):
        if _is_tensorflow(value):
            setattr(module, name, _view(value, usr_dir))


def _say(usr_dir: str) -> None:
    """The one line per user directory, when its code first uses tf.gfile or
    tf.logging (`registry.note`)."""
    if usr_dir not in _said:
        _said.add(usr_dir)
        registry.note("t2t-lite: the --usr_dir's tf.gfile and tf.logging are answered by "
                      "TensorFlow 2.21's tf.compat.v1.gfile (tf.io.gfile) and "
                      "tf.compat.v1.logging.")
