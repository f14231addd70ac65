"""Raw pairs from a tensorflow-datasets builder, failing fast when offline.

`tfds` retries a download for about 200 s before giving up when there is no
network. Here a builder that is not prepared yet is only downloaded after a
3-second reachability check of its download host; otherwise a one-line
`T2TError` says what to do. Prepared data is looked for in tfds' usual place
(`$TFDS_DATA_DIR`, else `~/tensorflow_datasets`); downloads go to
`{tmp_dir}/downloads`.
"""

import socket
import threading
from typing import Iterator, Optional, Tuple

from t2t_lite.errors import T2TError

_PROBE_TIMEOUT_S = 3.0


def host_reachable(host: str, port: int = 443, timeout_s: float = _PROBE_TIMEOUT_S) -> bool:
    """True when a TCP connection to `host` opens within `timeout_s` (DNS included)."""
    result = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            pass

    # A thread bounds the DNS lookup too, which `create_connection` does not time out.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return bool(result)


def tfds_pairs(builder_name: str, split: str, source_key: str, target_key: str,
               download_host: str, tmp_dir: Optional[str],
               local_hint: str, data_dir: Optional[str] = None) -> Iterator[Tuple[str, str]]:
    """Yields (source, target) strings of a tfds translation builder's split, in its order.

    Args:
      builder_name: e.g. "wmt14_translate/de-en".
      split: the tfds split name ("train", "validation", "test").
      source_key, target_key: feature names, e.g. "en", "de".
      download_host: host probed before a download is attempted.
      tmp_dir: where downloads go (`{tmp_dir}/downloads`); None: tfds' default.
      local_hint: what the error message tells the user to put in --tmp_dir.
      data_dir: tfds data dir holding prepared data; None: tfds' default.

    Raises:
      T2TError: the data is not prepared and cannot be downloaded.
    """
    import tensorflow_datasets as tfds  # Lazy: slow import, only WMT problems need it.
    from absl import logging as absl_logging
    absl_logging.set_verbosity(absl_logging.ERROR)

    builder = tfds.builder(builder_name, data_dir=data_dir)
    try:
        dataset = builder.as_dataset(split=split, shuffle_files=False)
    except AssertionError:  # tfds' way of saying "not prepared"
        if not host_reachable(download_host):
            raise T2TError(
                f"{builder_name} split {split!r} is not prepared in {builder.data_dir} and "
                f"cannot be downloaded ({download_host} unreachable: no network). Either run "
                f"`tfds build {builder_name}` on a machine with network and copy its data dir "
                f"here (or set TFDS_DATA_DIR), or {local_hint}.") from None
        download_dir = f"{tmp_dir}/downloads" if tmp_dir else None
        builder.download_and_prepare(download_dir=download_dir)
        dataset = builder.as_dataset(split=split, shuffle_files=False)
    for example in tfds.as_numpy(dataset):
        yield (example[source_key].decode("utf-8"), example[target_key].decode("utf-8"))
