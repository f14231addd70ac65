"""The self-describing model directory: what training writes and everything else reads.

Everything the decoder and the exporter need is written here when training
starts, so they rebuild the model from this directory alone:

    hparams.json   the resolved HParams (set + overrides)
    problem.json   {"problem": name, "vocab_file": file name, "vocab_size": n}, and for
                   a problem defined by files its "definition"
                   (`data.problem_definition`, checked when the directory is opened)
    usr_dir.json   the --usr_dir of the run, if given (`t2t_lite.usr_dir`)
    train_mix.json {"train_mix": spec}: the run's t2t-trainer --train_mix, if given
    decode_defaults.json {"decode_hparams": {...}, "from": path}: the decoding defaults a
                   model fine-tuned from an imported Marian model keeps (its generation
                   settings, `train.warm_start.decode_defaults`), over its problem's
    <vocab file>   a copy of the problem's subword model
    checkpoint, ckpt-N.*   weights (tf.train.CheckpointManager)
    train/, eval/  TensorBoard event files
    best/          a weights-only model directory of the best dev BLEU so far

Readers open a model directory once (`ModelDir.open`): the metadata files are
read and checked there, once, and the vocabulary, the problem and the model are
built from that value. The writers (`create`, `prepare`, `write_weights`: a
weights-only copy such as `best/` or an average) are functions of
`t2t_lite.model_dir_writer`, which says how readers never see a file
half-written.
"""

import json
import os
from typing import Any, Dict, List, Optional, Tuple

import keras

import t2t_lite
from t2t_lite import atomic, averaging, usr_dir
from t2t_lite.data.problem_definition import ProblemDefinition
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.marian import vocab_file as marian_vocab_file

HPARAMS_FILE = "hparams.json"
PROBLEM_FILE = "problem.json"
IMPORT_FILE = "t2t_import.json"  # in a directory written by t2t-import
MARIAN_FILE = "marian_import.json"  # in a directory written by t2t-import --marian_dir
TRAIN_MIX_FILE = "train_mix.json"  # the --train_mix of a training run given one
WARM_START_FILE = "warm_start.json"  # where a fine-tuning run started (`train.warm_start`)
DECODE_FILE = "decode_defaults.json"  # decoding defaults kept from the model fine-tuned
# Read when present; hparams.json and problem.json are required.
_OPTIONAL_FILES = (usr_dir.USR_DIR_FILE, IMPORT_FILE, MARIAN_FILE, TRAIN_MIX_FILE,
                   WARM_START_FILE, DECODE_FILE)
PRECISIONS = ("float32", "bfloat16")


def _parse_json(data: bytes, path: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as e:  # JSONDecodeError, bad UTF-8, an integer over 4,300 digits
        raise T2TError(f"Corrupt {path}: {e}") from None


_PROBLEM_KEYS = {"problem", "vocab_file", "vocab_size"}


class ModelDir:
    """A model directory opened once: its metadata read, checked and kept.

    `ModelDir.open(path)` reads each metadata file once (one `open()` each) and
    raises every "Corrupt ..." error there (a recorded problem definition
    included); the values built from them (the vocabulary, the problem, whose
    building registers a recorded definition) are built on first use and kept. Programs open a
    model directory once and hand this value down, instead of each function
    reading the files again by path. Checkpoints are not metadata: they are
    listed when weights are loaded, since a trainer may be writing new ones.

    Attributes:
      path: the directory as given.
      hparams: the resolved `HParams` it was trained with.
      info: problem.json: {"problem", "vocab_file", "vocab_size"[, "definition"]}, as
        stored (the definition's JSON).
      definition: the typed `ProblemDefinition` of a problem defined by files, or None.
      usr_dir_record: usr_dir.json (`usr_dir.record`), or None.
      import_record: t2t_import.json (a model imported from tensor2tensor), or None.
      marian_record: marian_import.json (a Hugging Face Marian model imported by
        t2t-import --marian_dir: `t2t_lite.t2t_import.marian_importer`), or None.
      train_mix: the --train_mix of its training run, or None.
      warm_start_record: warm_start.json (`train.warm_start`), or None.
      decode_defaults: decode_defaults.json's decode hparams (`SearchParams` fields a
        model fine-tuned from an imported Marian model decodes with by default), or None.
    """

    def __init__(self, path: str, readable: str, raw: Dict[str, bytes]):
        self.path = path
        self._readable = readable
        self._raw = dict(raw)  # file name -> the bytes read (hashes, provenance copies)
        self.hparams = HParams.from_dict(self._parsed(HPARAMS_FILE))
        self.info = self._checked_info(self._parsed(PROBLEM_FILE))
        self.definition: Optional[ProblemDefinition] = (
            ProblemDefinition.from_json(self.info["definition"], self.file_path(PROBLEM_FILE))
            if self.info.get("definition") is not None else None)
        self.usr_dir_record = (usr_dir.check_record(self._parsed(usr_dir.USR_DIR_FILE),
                                                    self.file_path(usr_dir.USR_DIR_FILE))
                               if usr_dir.USR_DIR_FILE in raw else None)
        self.import_record = self._parsed(IMPORT_FILE) if IMPORT_FILE in raw else None
        self.marian_record = (self._checked_marian(self._parsed(MARIAN_FILE))
                              if MARIAN_FILE in raw else None)
        self.train_mix = (self._checked_train_mix(self._parsed(TRAIN_MIX_FILE))
                          if TRAIN_MIX_FILE in raw else None)
        self.warm_start_record = (self._parsed(WARM_START_FILE)
                                  if WARM_START_FILE in raw else None)
        self.decode_defaults = (self._checked_decode(self._parsed(DECODE_FILE))
                                if DECODE_FILE in raw else None)
        self._vocab = None
        self._problem = None

    @classmethod
    def open(cls, path: str) -> "ModelDir":
        """Reads the metadata of the model directory `path`.

        While `path` is being replaced (a `best/` or an average), its complete
        previous copy is read (`atomic.readable_dir`).

        Raises:
          T2TError: no such directory, not a model directory (no hparams.json or
            problem.json), or a metadata file that cannot be read or parsed.
        """
        readable = atomic.readable_dir(path)
        if not os.path.isdir(readable):
            raise T2TError(f"Model directory {path!r} does not exist: it is not a t2t-lite "
                           "model directory; train with t2t-trainer --output_dir first.")
        raw = {}
        for name in (PROBLEM_FILE, HPARAMS_FILE) + _OPTIONAL_FILES:
            full = os.path.join(readable, name)
            try:
                with open(full, "rb") as f:
                    raw[name] = f.read()
            except FileNotFoundError:
                if name in _OPTIONAL_FILES:
                    continue
                raise T2TError(f"{path} is not a t2t-lite model directory (no {name}); "
                               "train with t2t-trainer --output_dir first.") from None
            except OSError as e:
                raise T2TError(f"Corrupt {full}: {e.strerror}") from None
        return cls(path, readable, raw)

    def file_path(self, name: str) -> str:
        """The path of `name` in the directory read (the complete previous copy while
        it was being replaced)."""
        return os.path.join(self._readable, name)

    def raw(self, name: str) -> Optional[bytes]:
        """The bytes of the metadata file `name` as read, or None if it was absent."""
        return self._raw.get(name)

    def _parsed(self, name: str) -> Any:
        return _parse_json(self._raw[name], self.file_path(name))

    def _checked_info(self, info: Any) -> Dict[str, Any]:
        if not isinstance(info, dict) or not _PROBLEM_KEYS <= set(info) \
                or not set(info) <= _PROBLEM_KEYS | {"definition"} \
                or not isinstance(info["problem"], str) \
                or not isinstance(info["vocab_file"], str) \
                or type(info["vocab_size"]) is not int:
            raise T2TError(f"Corrupt {self.file_path(PROBLEM_FILE)}.")
        return info

    def _checked_marian(self, record: Any) -> Dict[str, Any]:
        if not isinstance(record, dict) or not isinstance(record.get("decode_hparams"), dict):
            raise T2TError(f"Corrupt {self.file_path(MARIAN_FILE)}.")
        return record

    def _checked_decode(self, record: Any) -> Dict[str, Any]:
        if not isinstance(record, dict) or not isinstance(record.get("decode_hparams"), dict):
            raise T2TError(f"Corrupt {self.file_path(DECODE_FILE)}.")
        return record["decode_hparams"]

    def _checked_train_mix(self, value: Any) -> str:
        if not isinstance(value, dict) or not isinstance(value.get("train_mix"), str):
            raise T2TError(f"Corrupt {self.file_path(TRAIN_MIX_FILE)}.")
        return value["train_mix"]

    @property
    def problem_name(self) -> str:
        return self.info["problem"]

    @property
    def vocab_size(self) -> int:
        return self.info["vocab_size"]


    @property
    def is_imported(self) -> bool:
        """Whether it holds a model imported from tensor2tensor (`t2t-import`)."""
        return self.import_record is not None

    @property
    def vocab_path(self) -> str:
        """The copy of the subword model inside the directory.

        Raises:
          T2TError: the file is missing.
        """
        path = self.file_path(self.info["vocab_file"])
        if not os.path.exists(path):
            raise T2TError(f"Vocabulary {path} is missing from the model directory.")
        return path

    def vocab(self):
        """The vocabulary (`load_vocab_file`), loaded once."""
        if self._vocab is None:
            self._vocab = load_vocab_file(self.vocab_path)
        return self._vocab

    def problem(self):
        """The registered `Problem` the model was trained on, built once.

        For a model imported from tensor2tensor, an `ImportedProblem` of its t2t
        problem's name (t2t-decoder's decoding defaults; t2t-lite's problem of the
        same name, if any, is another data preparation). A problem defined by
        files is registered from its recorded definition; one of a --usr_dir
        needs that directory imported (`usr_dir.check_model`). A model fine-tuned
        from an imported Marian model gets its `decode_defaults` as the problem's
        `search_defaults` (`SearchParams.for_problem`).

        Raises:
          T2TError: an unknown problem, or one of a user directory not given.
        """
        if self._problem is None:
            if self.is_imported:
                from t2t_lite.data.imported_problem import ImportedProblem
                self._problem = ImportedProblem(self.problem_name)
            elif self.marian_record is not None:
                from t2t_lite.marian.problem import MarianProblem
                self._problem = MarianProblem(self.problem_name, self.marian_record)
            else:
                self.check_usr_dir()
                if self.definition is not None:
                    from t2t_lite.data import definitions
                    definitions.register(self.definition)
                self._problem = t2t_lite.registry.problem(self.problem_name)
                if self.decode_defaults is not None:  # this instance's, not the class's
                    self._problem.search_defaults = dict(self.decode_defaults)
        return self._problem

    def check_usr_dir(self) -> None:
        """Refuses the model when its problem came from a user directory this process
        did not import (`usr_dir.check_model`)."""
        usr_dir.check_model(self._readable, self.usr_dir_record)

    def build_model(self, precision: str = "float32") -> keras.Model:
        """The model, built with fresh weights.

        Args:
          precision: "float32", or "bfloat16" to compute in bfloat16 (Keras'
            mixed_bfloat16 policy: float32 weights, bfloat16 matmuls and cache,
            float32 softmax and logits), as in training with --precision.
        """
        if precision not in PRECISIONS:
            raise T2TError(f"precision must be one of {PRECISIONS}, got {precision!r}.")
        previous_policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy("mixed_bfloat16" if precision == "bfloat16" else "float32")
        try:
            return t2t_lite.build_model(self.hparams, self.vocab_size)
        finally:
            keras.config.set_dtype_policy(previous_policy)

    def load_model(self, checkpoint_path: Optional[str] = None, checkpoint_average: int = 1,
                   precision: str = "float32") -> Tuple[keras.Model, List[str]]:
        """Builds the model and restores (or averages) its weights.

        A trainer may be writing the directory: only complete checkpoints are read.

        Args:
          checkpoint_path: a specific `ckpt-N` prefix; default: the latest.
          checkpoint_average: average the last N checkpoints (up to the chosen one).
          precision: "float32" or "bfloat16" (see `build_model`).
        Returns:
          (model, the checkpoint prefixes read).
        """
        model = self.build_model(precision)
        used = averaging.restore_latest(model, self.path, checkpoint_path or "",
                                        checkpoint_average)
        return model, used


def load_vocab_file(path: str):
    """`load_vocab` for a vocabulary file path."""
    if marian_vocab_file.is_vocab_file(path):  # t2t-import --marian_dir
        from t2t_lite.marian.vocabulary import MarianVocab
        return MarianVocab.from_file(path)
    if path.endswith(".subwords"):
        from t2t_lite.data.t2t_subwords import T2TSubwordVocab
        return T2TSubwordVocab.from_file(path)
    if path.endswith((".bytes", ".tokens")):  # t2t's ByteTextEncoder / TokenTextEncoder
        from t2t_lite.data import t2t_text_encoders
        return t2t_text_encoders.load_file(path)
    return SubwordVocab.from_file(path)


def load_ensemble(model_dirs: List[ModelDir], checkpoint_average: int = 1,
                  precision: str = "float32") -> List[keras.Model]:
    """Loads several model directories to decode together (`t2t_lite.decode.search`).

    Each model is restored from its latest checkpoint (or the average of its
    last `checkpoint_average`); they may differ in hparams but must share the
    problem and the vocabulary file, byte for byte.

    Returns:
      The models, in the order given (their shared vocabulary and problem are
      the first directory's).

    Raises:
      T2TError: no directory, or directories of different problems or vocabularies.
    """
    if not model_dirs:
        raise T2TError("No model directory given.")
    first = model_dirs[0]
    with open(first.vocab_path, "rb") as f:
        first_vocab = f.read()
    for other in model_dirs[1:]:
        if other.problem_name != first.problem_name:
            raise T2TError(f"{other.path} was trained on {other.problem_name}, {first.path} on "
                           f"{first.problem_name}: an ensemble needs one problem.")
        with open(other.vocab_path, "rb") as f:
            if f.read() != first_vocab:
                raise T2TError(f"{other.path} and {first.path} have different vocabularies: "
                               "an ensemble needs models trained on the same t2t-datagen output.")
    return [directory.load_model(None, checkpoint_average, precision)[0]
            for directory in model_dirs]
