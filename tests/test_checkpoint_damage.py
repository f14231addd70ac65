"""A checkpoint whose data file was cut short is a one-line error, not a traceback."""

import glob
import os

import pytest
import tensorflow as tf

from t2t_lite import checkpoints
from t2t_lite.errors import T2TError


class _Weights(tf.Module):
    def __init__(self):
        super().__init__()
        self.kernel = tf.Variable(tf.range(4096, dtype=tf.float32))


def test_a_data_file_cut_short_is_a_one_line_error(tmp_path):
    path = tf.train.Checkpoint(model=_Weights()).write(str(tmp_path / "ckpt-1"))
    (data,) = glob.glob(path + ".data-*")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    with pytest.raises(T2TError) as error:
        checkpoints.restore_weights(_Weights(), path)
    message = str(error.value)
    assert message.startswith(f"Checkpoint {path} is damaged: ") and "\n" not in message
