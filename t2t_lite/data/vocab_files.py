"""A problem's vocabulary file in a data directory: learned, reused or copied.

`build_vocab` loads the vocabulary of a problem's data directory, first writing
it when absent: a SentencePiece model learned from (a seeded reservoir sample
of at most `problem.vocab_sample_pairs`) train pairs, `{problem}.sp{size}.model`
with its readable `.vocab` table, or a copy of a trained model's vocabulary
(`vocab_model`: SentencePiece, or tensor2tensor's `*.subwords`, kept as
`t2t_vocab_path`, or an imported Marian model's `marian_vocab.json`, kept
as `marian_vocab_path` and loaded by the caller's `load_vocab`, since
`t2t_lite.marian` builds on this package); for a t2t compat problem whose vocab_type is CHARACTER
or TOKEN, t2t's ByteTextEncoder / TokenTextEncoder, kept as `{problem}.bytes` /
`{problem}.tokens` (`t2t_text_encoders`: nothing to learn). Files are written
atomically (`split_writer.write_atomically`), the model last, so its presence
means the vocabulary is complete. Which vocabulary datagen encodes with is
decided here too: a tensor2tensor vocabulary file left in the data directory
(`t2t_vocab_file`), and whether the vocabulary is learned (`learned_vocab`).
"""

import os
import random
import time
from typing import Any, Callable, Iterable, List, Optional, Tuple

from t2t_lite.data import t2t_text_encoders
from t2t_lite.data.layout import MARIAN_VOCAB_FILE
from t2t_lite.data.problem import Corpus, Pair, Problem
from t2t_lite.data.progress import Clock, Progress, heartbeat
from t2t_lite.data.split_writer import write_atomically
from t2t_lite.data.t2t_subwords import T2TSubwordVocab
from t2t_lite.data.vocab import SubwordVocab, train_sentencepiece, vocab_path
from t2t_lite.errors import T2TError

_SAMPLE_SEED = 1234
T2T_SUFFIX = ".subwords"
# A vocabulary file path -> the vocabulary (`t2t_lite.model_dir.load_vocab_file`): what
# loads the kinds this package cannot build itself (an imported Marian model's).
VocabLoader = Callable[[str], Any]


def _sample_pairs(corpora: List[Corpus], max_pairs: int,
                  progress: Progress) -> Tuple[List[Pair], List[int]]:
    """Reservoir-samples at most `max_pairs` train pairs (seeded) of the corpora
    read one after the other; returns them and the pairs read of each corpus."""
    counts = [0] * len(corpora)

    def pairs() -> Iterable[Pair]:
        for c, (_, read) in enumerate(corpora):
            for pair in read():
                counts[c] += 1
                yield pair

    rng = random.Random(_SAMPLE_SEED)
    sample: List[Pair] = []
    seen = 0
    for seen, pair in enumerate(pairs(), 1):
        if seen <= max_pairs:
            sample.append(pair)
        else:
            j = rng.randint(0, seen - 1)
            if j < max_pairs:
                sample[j] = pair
        if seen % 4096 == 0:
            progress.update(seen)
    return sample, counts


def build_vocab(problem: Problem, data_dir: str, tmp_dir: Optional[str],
                log: Callable[[str], None] = print,
                vocab_model: Optional[str] = None,
                load_vocab: Optional[VocabLoader] = None) -> SubwordVocab:
    """Loads `problem`'s vocabulary from `data_dir`, learning and writing it first if absent.

    Args:
      vocab_model: a model's vocabulary file (e.g. a trained model's, for
        fine-tuning it on this problem) to use instead of learning one: a
        SentencePiece model, a tensor2tensor `*.subwords` file (a model
        imported with t2t-import), written as `t2t_vocab_path`, or an imported
        Marian model's `marian_vocab.json`, written as `marian_vocab_path`.
      load_vocab: loads a Marian vocabulary file (`VocabLoader`); needed only
        for one.

    Raises:
      T2TError: `data_dir` already holds another vocabulary than `vocab_model`.
    """
    return build_vocab_and_counts(problem, data_dir, problem.train_corpora(tmp_dir), log,
                                  vocab_model, load_vocab=load_vocab)[0]


def build_vocab_and_counts(problem: Problem, data_dir: str, corpora: List[Corpus],
                 log: Callable[[str], None], vocab_model: Optional[str],
                 clock: Clock = time.monotonic,
                 relearn: bool = False,
                 load_vocab: Optional[VocabLoader] = None
                 ) -> Tuple[SubwordVocab, Optional[List[int]]]:
    """`build_vocab` from the train `corpora`, also returning the number of
    train pairs of each when it read them (t2t-datagen's progress lines use them).
    `relearn`: learn the SentencePiece vocabulary again even when it exists (its
    train files changed), replacing it."""
    path = data_vocab_path(data_dir, problem, vocab_model)
    if vocab_model:
        return _copy_vocab(vocab_model, path, log, load_vocab), None
    if is_marian_vocab(path):  # copied by an earlier run with a Marian vocab_model
        vocab = _load_marian(path, load_vocab)
        log(f"  vocabulary: reusing {os.path.basename(path)} (an imported Marian model's: "
            f"{vocab.source_vocab_size} source and {vocab.vocab_size} target ids)")
        return vocab, None
    if t2t_text_encoders.is_text_encoder_file(path):  # t2t's CHARACTER or TOKEN: no learning
        vocab, data = t2t_text_encoders.build(problem, data_dir, path)
        if _file_bytes(path) != data:  # a changed token file or oov_token: written again
            write_atomically(path, data)
        log(f"  vocabulary: {os.path.basename(path)}, tensor2tensor's "
            f"{vocab.t2t_encoder} ({vocab.vocab_size} ids, t2t's)")
        return vocab, None
    if path.endswith(T2T_SUFFIX):  # copied by an earlier run with a t2t vocab_model
        vocab = T2TSubwordVocab.from_file(path)
        log(f"  vocabulary: reusing {os.path.basename(path)} ({vocab.vocab_size} subwords)")
        return vocab, None
    if os.path.isfile(path) and not relearn:
        vocab = SubwordVocab.from_file(path)
        log(f"  vocabulary: reusing {os.path.basename(path)} ({vocab.vocab_size} pieces)")
        return vocab, None
    start = time.time()
    pairs, counts = _sample_pairs(
        corpora, problem.vocab_sample_pairs,
        Progress(log, "  vocabulary: reading the train pairs,", clock=clock))
    train_pairs = sum(counts)
    sentences = [s for pair in pairs for s in pair if s.strip()]
    if not sentences:
        raise T2TError(f"{problem.name}: the train split is empty; cannot learn a vocabulary.")
    whole_words = ({w for _, target in pairs for w in target.split()}
                   if problem.target_tokens_whole else set())
    log(f"  vocabulary: learning {problem.vocab_size} pieces from {len(sentences):,} "
        f"sentences (sampled from {train_pairs:,} train pairs)")
    learn_start = time.time()
    # An upper bound: a small corpus (e.g. the treebank sample for a 16K-piece
    # problem) gets all the pieces SentencePiece can learn, with a note.
    with heartbeat(log, "  vocabulary: learning"):
        proto = train_sentencepiece(sentences, problem.vocab_size, hard_limit=False,
                                    whole_words=whole_words)
    vocab = SubwordVocab(proto)
    if vocab.vocab_size < problem.vocab_size:
        log(f"  note: the train text supports only {vocab.vocab_size} of the "
            f"{problem.vocab_size} pieces {problem.name} asks for; using {vocab.vocab_size}")
    _write_vocab(vocab, path)
    log(f"  vocabulary: learned {os.path.basename(path)} ({vocab.vocab_size} pieces"
        + (f", {len(whole_words)} of them whole target tokens" if whole_words else "")
        + f") from {len(sentences):,} sentences in {time.time() - start:.1f} s "
        f"(learning {time.time() - learn_start:.1f} s)")
    return vocab, counts


def t2t_vocab_path(data_dir: str, problem: Problem) -> str:
    """Where a tensor2tensor SubwordTextEncoder vocabulary is kept in `data_dir`."""
    return os.path.join(data_dir, problem.name + T2T_SUFFIX)


def marian_vocab_path(data_dir: str, problem: Problem) -> str:
    """Where an imported Marian model's vocabulary is kept in `data_dir`
    (`{problem}.marian_vocab.json`: its name ends as the model directory's does)."""
    return os.path.join(data_dir, f"{problem.name}.{MARIAN_VOCAB_FILE}")


def is_marian_vocab(path: str) -> bool:
    """Whether `path` names an imported Marian model's vocabulary (by its name, as
    `t2t_lite.marian.vocab_file.is_vocab_file`)."""
    return os.path.basename(path).endswith(MARIAN_VOCAB_FILE)


def data_vocab_path(data_dir: str, problem: Problem, vocab_model: Optional[str] = None) -> str:
    """The vocabulary file of `problem`'s data in `data_dir`: a t2t subwords file (a
    Marian vocabulary) when `vocab_model` is one or an earlier run copied one, t2t's
    byte or token vocabulary for a CHARACTER or TOKEN problem, else the SentencePiece
    model."""
    t2t_path = t2t_vocab_path(data_dir, problem)
    marian_path = marian_vocab_path(data_dir, problem)
    if vocab_model:
        if is_marian_vocab(vocab_model):
            return marian_path
        return t2t_path if vocab_model.endswith(T2T_SUFFIX) else vocab_path(data_dir, problem)
    text_encoder_path = t2t_text_encoders.data_file(data_dir, problem)
    if text_encoder_path:
        return text_encoder_path
    for copied in (t2t_path, marian_path):
        if os.path.isfile(copied):
            return copied
    return vocab_path(data_dir, problem)


def _file_bytes(path: str) -> Optional[bytes]:
    """The bytes of `path`, or None when it is absent."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def _write_vocab(vocab: SubwordVocab, path: str) -> None:
    """Writes the SentencePiece model to `path` and its readable piece table beside it."""
    table = "".join(f"{piece}\t{i}\n" for i, piece in enumerate(vocab.pieces()))
    write_atomically(os.path.splitext(path)[0] + ".vocab", table.encode("utf-8"))
    write_atomically(path, vocab.model_proto)  # last: its presence means it is complete


def _load_marian(path: str, load_vocab: Optional[VocabLoader]):
    """The Marian vocabulary file `path`, loaded by `load_vocab`."""
    if load_vocab is None:
        raise T2TError(f"{path} is an imported Marian model's vocabulary: reading it needs "
                       "t2t-datagen (or t2t_lite.model_dir.load_vocab_file as load_vocab).")
    return load_vocab(path)


def _copy_vocab(source: str, path: str, log: Callable[[str], None],
                load_vocab: Optional[VocabLoader] = None) -> SubwordVocab:
    """The vocabulary of the model file `source` (SentencePiece, t2t's subwords or an
    imported Marian model's, loaded by `load_vocab`), written as `path` (the same bytes)."""
    try:
        with open(source, "rb") as f:
            proto = f.read()
        if is_marian_vocab(source):
            vocab = _load_marian(source, load_vocab)
        else:
            vocab = (T2TSubwordVocab(proto, source=source) if source.endswith(T2T_SUFFIX)
                     else SubwordVocab(proto))
    except OSError as e:
        raise T2TError(f"Cannot read the vocabulary {source}: {e.strerror}.") from None
    except T2TError:
        raise
    except Exception as e:  # sentencepiece's parse error: RuntimeError, or others by version
        raise T2TError(f"{source} is not a SentencePiece model: {str(e).splitlines()[0]}") \
            from None
    if os.path.isfile(path):
        with open(path, "rb") as f:
            if f.read() != proto:
                raise T2TError(
                    f"{os.path.dirname(path)} already holds another vocabulary "
                    f"({os.path.basename(path)}); use a new --data_dir for data encoded "
                    f"with {source}.")
        log(f"  vocabulary: reusing {os.path.basename(path)} ({vocab.vocab_size} pieces, "
            f"the same as {source})")
        return vocab
    if path.endswith(T2T_SUFFIX) or is_marian_vocab(path):
        write_atomically(path, proto)
    else:
        _write_vocab(vocab, path)
    log(f"  vocabulary: {os.path.basename(path)} copied from {source} "
        f"({vocab.vocab_size} pieces)")
    return vocab


def learned_vocab(problem: Problem, data_dir: str, vocab_model: Optional[str]) -> str:
    """The path of the SentencePiece vocabulary datagen learns (or learned) from the
    train split of `problem`; "" when it is given (`vocab_model`, a t2t file)."""
    path = data_vocab_path(data_dir, problem, vocab_model)
    return path if not vocab_model and path == vocab_path(data_dir, problem) else ""


def t2t_vocab_file(problem: Problem, data_dir: str,
                    log: Callable[[str], None]) -> Optional[str]:
    """The tensor2tensor vocabulary file a t2t problem names (`vocab_filename`, e.g.
    `vocab.P.8192.subwords`), when t2t-datagen left one in `data_dir`: it is used as is,
    as `--vocab_from` would use it, so the ids are t2t's."""
    name = getattr(problem, "vocab_filename", None)  # t2t_lite.t2t_compat problems only
    path = os.path.join(data_dir, name) if isinstance(name, str) else ""
    if not (path.endswith(".subwords") and os.path.isfile(path)):
        return None
    log(f"  vocabulary: tensor2tensor's {name} is in {data_dir}: encoding with it (t2t's ids)")
    return path


def vocab_file_kind(vocab_file: str) -> str:
    """What kind of vocabulary file `vocab_file` is, for a message."""
    if vocab_file.endswith(".json"):
        return "vocabulary of a Hugging Face Marian model imported with t2t-import"
    return "tensor2tensor vocabulary file"
