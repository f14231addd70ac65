"""Dev losses of a model directory's checkpoints, kept between runs in `M/dev_losses.json`.

    {"dev_data": {"problem", "vocab_sha256", "shards", "shard_sha256"},
     "losses": {"ckpt-1200": 2.3456, ...},
     "index_sha256": {"ckpt-1200": "9f2c...", ...}}

A loss is only valid for the dev data it was computed on: `dev_data` names that
data by what t2t-datagen recorded of it (the vocabulary's and each dev shard's
SHA-256), and a cache of other dev data is discarded whole. A loss is also only
valid for the weights it was computed on: each is kept with the SHA-256 of its
checkpoint's index file (`checkpoint_identity`), and used only while the
checkpoint of that name has the same index. A trainer never rewrites a listed
checkpoint, but a user may delete a run's checkpoints and train again in the
same directory: the new `ckpt-N` has another index (it holds each tensor's
CRC32C), and is scored again. A copy of the directory keeps its index, and its
losses. Losses recorded without an index (an older t2t-lite) are scored again.

The file is replaced atomically after each new loss, so a killed run keeps what
it computed and a reader never sees it half-written.
"""

import json
import os
from typing import Any, Callable, Dict, Iterable, Optional

from t2t_lite import atomic
from t2t_lite.checkpoints import CheckpointGone
from t2t_lite.data import datagen
from t2t_lite.data.integrity import check_shards, file_sha256
from t2t_lite.errors import T2TError

CACHE_FILE = "dev_losses.json"


def checkpoint_identity(prefix: str) -> str:
    """What identifies the weights of the checkpoint `prefix`: its index file's SHA-256.

    The index records each tensor's shape, place in the data files and the CRC32C
    of its bytes, so other weights saved under the same name give another.

    Raises:
      CheckpointGone: the index is gone (the checkpoint was deleted).
    """
    try:
        return file_sha256(prefix + ".index")
    except FileNotFoundError:
        raise CheckpointGone(f"Checkpoint {prefix} does not exist (no {prefix}.index).") from None


def dev_data_identity(data_dir: str, problem_name: str, vocab_file: str) -> Dict[str, Any]:
    """What t2t-datagen recorded of `problem_name`'s dev split in `data_dir`.

    Args:
      vocab_file: the model's vocabulary; the dev shards must have been encoded with it.

    Returns:
      {"problem", "vocab_sha256", "shards" (file names), "shard_sha256"}.

    Raises:
      T2TError: no dev split recorded, an empty one, shards of another
        vocabulary, or shards missing or of another size than written.
    """
    meta = datagen.read_metadata(data_dir, problem_name)
    dev = meta.get("splits", {}).get("dev")
    if not dev or not dev.get("shards"):
        raise T2TError(f"{data_dir} holds no dev split of {problem_name} (its "
                       f"{os.path.basename(datagen.metadata_path(data_dir, problem_name))} "
                       f"records none): pass the data dir t2t-datagen --problem={problem_name} "
                       "wrote for this model.")
    if not dev.get("examples"):
        raise T2TError(f"The dev split of {problem_name} in {data_dir} is empty: "
                       "no loss to choose checkpoints by.")
    model_vocab = file_sha256(vocab_file)
    if meta.get("vocab_sha256") != model_vocab:
        raise T2TError(f"The shards of {problem_name} in {data_dir} were encoded with another "
                       f"vocabulary than the model's ({os.path.basename(vocab_file)}): pass "
                       "the data dir the model was trained on.")
    check_shards(data_dir, problem_name, meta, ["dev"])
    return {"problem": problem_name, "vocab_sha256": model_vocab,
            "shards": list(dev["shards"]), "shard_sha256": list(dev["shard_sha256"])}


class DevLossCache:
    """The dev losses of `model_dir`'s checkpoints on the dev data `dev_data`.

    Args:
      model_dir: the model directory; the cache is `model_dir/dev_losses.json`.
      dev_data: `dev_data_identity` of the dev split the losses are computed on.
      log: prints a line (why a cache was discarded or cannot be written).
    """

    def __init__(self, model_dir: str, dev_data: Dict[str, Any],
                 log: Callable[[str], None] = print):
        self.path = os.path.join(model_dir, CACHE_FILE)
        self.dev_data = dev_data
        self.log = log
        self.losses: Dict[str, float] = {}
        self.identities: Dict[str, str] = {}  # name -> `checkpoint_identity` scored
        self._read()
        self._writable = True

    def _read(self) -> None:
        """Loads the file's losses that hold for `dev_data`, each with its identity."""
        if not os.path.exists(self.path):
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError) as e:
            self.log(f"{self.path} is unreadable ({e}): evaluating every checkpoint again.")
            return
        losses = saved.get("losses") if isinstance(saved, dict) else None
        identities = saved.get("index_sha256", {}) if isinstance(saved, dict) else None
        if not isinstance(losses, dict) or not isinstance(identities, dict) or not all(
                isinstance(v, (int, float)) for v in losses.values()):
            self.log(f"{self.path} is not a dev-loss cache: evaluating every checkpoint again.")
            return
        if saved.get("dev_data") != self.dev_data:
            self.log(f"{self.path} holds losses on other dev data: evaluating every "
                     "checkpoint again.")
            return
        known = [name for name in losses if isinstance(identities.get(name), str)]
        if len(known) < len(losses):
            self.log(f"{self.path} holds {len(losses) - len(known)} loss(es) without their "
                     "checkpoint's index (an older t2t-lite): evaluating those again.")
        self.losses = {name: float(losses[name]) for name in known}
        self.identities = {name: identities[name] for name in known}

    def get(self, name: str, identity: str) -> Optional[float]:
        """The cached loss of checkpoint `name` ("ckpt-N") if it was computed on the
        checkpoint of this `identity` (`checkpoint_identity`), else None."""
        return self.losses.get(name) if self.identities.get(name) == identity else None

    def put(self, name: str, identity: str, loss: float, listed: Iterable[str]) -> None:
        """Records `loss` for checkpoint `name` of `identity` (`checkpoint_identity`) and
        rewrites the file, keeping the checkpoints `listed` only (the others were
        deleted by the trainer).

        A model directory this process cannot write (another user's run) only
        loses the cache: one line says so, and the losses stay in memory.
        """
        keep = set(listed) | {name}
        self.losses = {n: v for n, v in self.losses.items() if n in keep}
        self.identities = {n: v for n, v in self.identities.items() if n in keep}
        self.losses[name], self.identities[name] = loss, identity
        if not self._writable:
            return
        text = json.dumps({"dev_data": self.dev_data, "losses": self.losses,
                           "index_sha256": self.identities}, indent=2)
        try:
            atomic.write_text(self.path, text + "\n")
        except OSError as e:
            self._writable = False
            self.log(f"Cannot write {self.path} ({e.strerror}): dev losses are not kept "
                     "for the next run.")
