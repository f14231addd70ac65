"""Runs t2t_run.py as a TF 1.15-era user would: `import tensorflow as tf` has gfile/logging."""
import runpy, sys
import tensorflow as tf
tf.gfile = tf.compat.v1.gfile
tf.logging = tf.compat.v1.logging
TOOLS = sys.argv.pop(1)  # ../shared/t2t-reference/tools
sys.path.insert(0, TOOLS)
sys.argv = ["t2t_run.py"] + sys.argv[1:]
runpy.run_path(TOOLS + "/t2t_run.py", run_name="__main__")
