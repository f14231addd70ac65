"""tensor2tensor.data_generators.generator_utils: maybe_download, gunzip_file.

`maybe_download` returns a file already in the directory and downloads only
when the network answers; otherwise it refuses in one line naming the file
to place there (t2t-lite never waits minutes for a network that is not there).
"""

import gzip
import os
import shutil
import urllib.error
import urllib.request

import tensorflow as tf

from t2t_lite.errors import T2TError

DOWNLOAD_TIMEOUT_S = 20


def maybe_download(directory: str, filename: str, uri: str) -> str:
    """`directory/filename`, downloaded from `uri` (a URL or a local/gfile path) when absent.

    Raises:
      T2TError: absent and `uri` cannot be read (no network, a bad address),
        naming the file to place in `directory`.
    """
    tf.io.gfile.makedirs(directory)
    path = os.path.join(directory, filename)
    if tf.io.gfile.exists(path):
        return path
    partial = path + ".incomplete"
    try:
        if uri.startswith(("http://", "https://")):
            with urllib.request.urlopen(uri, timeout=DOWNLOAD_TIMEOUT_S) as response, \
                    open(partial, "wb") as f:
                shutil.copyfileobj(response, f)
        else:
            tf.io.gfile.copy(uri, partial, overwrite=True)
    except (OSError, urllib.error.URLError, tf.errors.OpError) as e:
        if os.path.exists(partial):
            os.remove(partial)
        reason = getattr(e, "reason", None) or getattr(e, "message", None) or e
        raise T2TError(f"Cannot download {uri} ({reason}): place {filename} in {directory} "
                       "and run again.") from None
    os.replace(partial, path)
    return path


def gunzip_file(gz_path: str, new_path: str) -> None:
    """Unzips `gz_path` into `new_path` unless `new_path` exists (t2t's rule)."""
    if tf.io.gfile.exists(new_path):
        return
    with gzip.open(gz_path, "rb") as source, open(new_path + ".incomplete", "wb") as target:
        shutil.copyfileobj(source, target)
    os.replace(new_path + ".incomplete", new_path)


def __getattr__(name: str):
    raise AttributeError(
        f"tensor2tensor.data_generators.generator_utils.{name} is not provided by t2t-lite's "
        "compatibility layer (it provides maybe_download and gunzip_file; t2t-lite's datagen "
        "builds vocabularies and writes shards itself).")
