"""TensorFlow 1's `tf.gfile` and `tf.logging` for the code of a --usr_dir, and refusals.

t2t user directories call `tf.gfile.Exists/Open/GFile/Glob/MakeDirs` and
`tf.logging.info` most. TensorFlow 2.21 keeps both under `tf.compat.v1`
(`gfile` there is `tf.io.gfile` with TF1's names), so a user module's
`tf` is swapped for a view of TensorFlow that answers those two from there
(`adapt_module`, run by the import hook after each user module); everything
else is TensorFlow 2.21's own. `tf.contrib` (gone in TF2) and sessions
(`tf.Session`: t2t-lite runs eagerly and in `tf.function`s) are refused in
one line. TensorFlow itself is never changed, so other code is unaffected.
"""

import sys
import types

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
_said = set()  # user directories told the one line in this process


class _TF1View(types.ModuleType):
    """TensorFlow (or tf.compat.v1) with TF1's gfile/logging and the refusals above."""

    def __init__(self, tf_module):
        super().__init__(tf_module.__name__, tf_module.__doc__)
        self._tf = tf_module

    def __getattr__(self, name):
        if name in _REFUSED:
            raise T2TError(_REFUSED[name])
        if name in ("gfile", "logging"):
            return getattr(sys.modules["tensorflow"].compat.v1, name)
        if name == "compat":
            return _CompatView(self._tf.compat)
        return getattr(self._tf, name)

    def __dir__(self):
        return sorted(set(dir(self._tf)) | {"gfile", "logging"})


class _CompatView(types.ModuleType):
    """`tf.compat`, whose `v1` refuses sessions too."""

    def __init__(self, compat):
        super().__init__(compat.__name__)
        self._compat = compat

    def __getattr__(self, name):
        value = getattr(self._compat, name)
        return _TF1View(value) if name == "v1" else value


def _is_tensorflow(value) -> bool:
    return (isinstance(value, types.ModuleType) and not isinstance(value, _TF1View)
            and getattr(value, "__name__", None) in _TF_NAMES)


def adapt_module(module: types.ModuleType, usr_dir: str) -> None:
    """Swaps the globals of `module` (of the user directory `usr_dir`) bound to
    `tensorflow` or `tensorflow.compat.v1` for their TF1 views, saying so once per
    user directory (`registry.note`)."""
    names = [name for name, value in vars(module).items() if _is_tensorflow(value)]
    for name in names:
        setattr(module, name, _TF1View(getattr(module, name)))
    if names and usr_dir not in _said:
        _said.add(usr_dir)
        registry.note("t2t-lite: the --usr_dir's tf.gfile and tf.logging are answered by "
                      "TensorFlow 2.21's tf.compat.v1.gfile (tf.io.gfile) and "
                      "tf.compat.v1.logging.")
