"""A user module's `tf.gfile` and `tf.logging` work from its first line: at import time,
in default arguments, in class bodies and in functions, however it imports TensorFlow;
the calls that would switch the process to TF1's graph mode stop the import in one line."""

import textwrap

import pytest

from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen
from t2t_lite.errors import T2TError

import t2t_usr_dirs
from registry_isolation import isolated_registry, notes  # noqa: F401  (fixtures)

# TF1-era module code that runs at import time: the module's top level, a default
# argument and a class body use tf.logging / tf.gfile before any function is called.
TOP_LEVEL = textwrap.dedent('''\
    {import_line}
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.utils import registry

    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.info("registering %s", __name__)


    def read_lines(path, open_fn=tf.gfile.Open):
      with open_fn(path) as f:
        return [line.strip() for line in f]


    @registry.register_problem
    class EarlyNames(text_problems.Text2TextProblem):
      root_exists = tf.gfile.Exists("/")
      is_generate_per_split = True

      def generate_samples(self, data_dir, tmp_dir, dataset_split):
        import tensorflow as tf_in_function
        path = tf_in_function.gfile.Glob(tmp_dir + "/*.txt")[0]
        assert self.root_exists and tf.gfile.Exists(path)
        for line in read_lines(path):
          yield {{"inputs": line, "targets": line.upper()}}
''')


@pytest.mark.parametrize("import_line", [
    "import tensorflow as tf",
    "import tensorflow.compat.v1 as tf",
    "from tensorflow.compat import v1 as tf",
])
def test_gfile_and_logging_at_import_time(isolated_registry, tmp_path, notes, import_line):
    path = t2t_usr_dirs.write_usr_dir(tmp_path, "early_usr", {
        "early": TOP_LEVEL.format(import_line=import_line)})
    usr_dir.import_usr_dir(str(path))
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "lines.txt").write_text("a b\nc\n")
    pairs = list(registry.problem("early_names").raw_pairs("dev", str(tmp_path / "tmp")))
    assert pairs == [("a b", "A B"), ("c", "C")]
    assert notes == ["t2t-lite: the --usr_dir's tf.gfile and tf.logging are answered by "
                     "TensorFlow 2.21's tf.compat.v1.gfile (tf.io.gfile) and "
                     "tf.compat.v1.logging."]
    import tensorflow
    assert not hasattr(tensorflow, "gfile")  # TensorFlow itself is left as it is


@pytest.mark.parametrize("import_line, call", [
    ("import tensorflow as tf", "tf.compat.v1.disable_v2_behavior()"),
    ("import tensorflow as tf", "tf.compat.v1.disable_eager_execution()"),
    ("import tensorflow.compat.v1 as tf", "tf.disable_v2_behavior()"),
    ("from tensorflow.compat.v1 import disable_eager_execution", "disable_eager_execution()"),
])
def test_switching_to_tf1_graph_mode_is_refused_in_one_line(isolated_registry, tmp_path,
                                                            capsys, import_line, call):
    path = t2t_usr_dirs.write_usr_dir(tmp_path, "graph_usr", {
        "graph": f"{import_line}\n{call}\n"})
    name = call.split("(")[0].split(".")[-1]
    message = (f"tf.compat.v1.{name}(): t2t-lite runs TensorFlow 2 (eager execution and "
               "tf.function) in the whole process, and a --usr_dir cannot switch it to "
               "TensorFlow 1's graph mode; remove the call (tf.gfile and tf.logging work "
               "without it).")
    with pytest.raises(T2TError) as raised:
        usr_dir.import_usr_dir(str(path))
    assert str(raised.value) == message
    assert t2t_datagen.main([f"--t2t_usr_dir={path}", "--problem=x",
                             f"--data_dir={tmp_path / 'data'}"]) == 1
    assert capsys.readouterr().err == f"t2t-datagen: error: {message}\n"
    import tensorflow
    assert tensorflow.executing_eagerly()
