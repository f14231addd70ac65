"""Datagen: a problem's raw pairs -> a subword vocabulary and encoded TFRecord shards.

Output in `data_dir` (the input pipeline relies on these names and features; the
ids, split names and shard names are defined in `t2t_lite.data.layout`):

  - `{problem}.sp{size}.model` (+ `.vocab`, readable): the SentencePiece vocabulary,
    learned from (a seeded sample of at most `problem.vocab_sample_pairs`) train pairs,
    or a copy of a trained model's (`vocab_model`, to fine-tune that model);
  - `{problem}-{split}-{i:05d}-of-{n:05d}` for split in train, dev, test: TFRecord
    files of `tf.train.Example` with int64-list features "inputs" (source ids)
    and "targets" (target ids), each ending with EOS=1. Example k of a split goes
    to shard k % n, in the problem's order; each train shard is then shuffled
    (seeded), so any prefix of it samples the whole corpus, while dev and test
    keep the problem's order (`t2t_lite.data.split_writer`). A train split of
    several corpora (`Problem.train_corpora`) gives each a contiguous range of
    the shards, written the same way (`t2t_lite.data.corpora`);
  - `{problem}.datagen.json`: vocabulary file and size, special ids, the layout
    version (`t2t_lite.data.layout.LAYOUT_VERSION`) and shuffle seed, and per
    split the shard files with their sizes and SHA-256 (`t2t_lite.data.integrity`),
    example and subword counts, and what was dropped; for train, each corpus's
    name, shard range and example count;
  - `{problem}-{split}.{suffix}`: plain-text files a problem asks for
    (`Problem.text_files`, e.g. parsing's gold trees), written once.

The vocabulary size is an upper bound: `{size}` in the file name is the
problem's, the learned size (smaller when the train text cannot support
more pieces; a note is printed) is in the metadata.

Every file is written under a hidden temporary name (`.incomplete.<name>`) and
renamed when complete, so a killed run never leaves a half-written shard or
vocabulary; leftovers of a killed run are deleted by the next one. A split
killed part-way resumes from the chunks it had encoded and the shards it had
written (`t2t_lite.data.split_writer`). A second run reuses the vocabulary and
every split whose shards and metadata are complete and whose shards have the
sizes it recorded, and says so; a split with a missing or resized shard is
written again, and so are train shards of an older t2t-datagen (written in
corpus order, or without their corpora recorded: layout 1 or 2); delete the
files to regenerate them.

Long steps print a progress line about every 9 seconds, and no two lines are
more than 10 seconds apart (`progress`).
Encoding (tokenization and serialization, one graph call a batch) runs on a
thread pool, one thread per core (`encoding`), with the same output as on one:
100,000 WMT news pairs at 43k pairs/s on one thread and 54k on two on the
2-core Intel host of README's "Datagen at WMT scale", where the whole of a
4.5M-pair datagen is timed against the code before it.

Dropping policy: pairs with an empty or whitespace-only side are dropped from
train and counted; dev and test keep all pairs (counted) so that they line up
with their reference files. Nothing else is dropped (long examples are the
pipeline's business).
"""

import hashlib
import json
import os
import random
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

from t2t_lite import registry
from t2t_lite.data.corpora import corpora_summary, count_pairs, write_train_split
from t2t_lite.data.encoding import make_encoder
from t2t_lite.data.integrity import (check_shards, count_records, damaged_shards,
                                     shard_records)
from t2t_lite.data.layout import (EOS_ID, LAYOUT_VERSION, PAD_ID, SHUFFLED_LAYOUT, SPLITS,
                                   shard_name)
from t2t_lite.data.problem import Corpus, Pair, Problem
from t2t_lite.data.progress import Clock, Progress, heartbeat, keep_alive
from t2t_lite.data.split_writer import (  # EMPTY_SIDE: datagen.EMPTY_SIDE for callers
    EMPTY_SIDE, STATE_PREFIX, TMP_PREFIX, remove_state, state_prefix, write_atomically,
    write_split)
from t2t_lite.data.t2t_subwords import T2TSubwordVocab
from t2t_lite.data.vocab import SubwordVocab, train_sentencepiece, vocab_path
from t2t_lite.errors import T2TError

_SAMPLE_SEED = 1234
SHUFFLE_SEED = 1234  # train shards' permutations (recorded in the metadata)


def shard_paths(data_dir: str, problem_name: str, split: str, num_shards: int) -> List[str]:
    """The shard files of a split, e.g. `D/translate_ende-train-00000-of-00100`."""
    return [os.path.join(data_dir, shard_name(problem_name, split, i, num_shards))
            for i in range(num_shards)]


def metadata_path(data_dir: str, problem_name: str) -> str:
    """The datagen metadata file, `D/{problem}.datagen.json`."""
    return os.path.join(data_dir, f"{problem_name}.datagen.json")


def read_metadata(data_dir: str, problem_name: str) -> Dict:
    """The metadata written by datagen, or {} when there is none yet."""
    path = metadata_path(data_dir, problem_name)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write_metadata(data_dir: str, meta: Dict) -> None:
    text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
    write_atomically(metadata_path(data_dir, meta["problem"]), text.encode("utf-8"))


def _remove_leftovers(data_dir: str, problem_name: str, log: Callable[[str], None]) -> None:
    stale = [f for f in os.listdir(data_dir)
             if f.startswith((TMP_PREFIX + problem_name, TMP_PREFIX + STATE_PREFIX + problem_name))]
    for name in stale:
        os.remove(os.path.join(data_dir, name))
    if stale:
        log(f"  removed {len(stale)} incomplete file(s) left by an interrupted run")


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
                vocab_model: Optional[str] = None) -> SubwordVocab:
    """Loads `problem`'s vocabulary from `data_dir`, learning and writing it first if absent.

    Args:
      vocab_model: a model's vocabulary file (e.g. a trained model's, for
        fine-tuning it on this problem) to use instead of learning one: a
        SentencePiece model, or a tensor2tensor `*.subwords` file (a model
        imported with t2t-import), written as `t2t_vocab_path`.

    Raises:
      T2TError: `data_dir` already holds another vocabulary than `vocab_model`.
    """
    return _build_vocab(problem, data_dir, problem.train_corpora(tmp_dir), log, vocab_model)[0]


def _build_vocab(problem: Problem, data_dir: str, corpora: List[Corpus],
                 log: Callable[[str], None], vocab_model: Optional[str],
                 clock: Clock = time.monotonic) -> Tuple[SubwordVocab, Optional[List[int]]]:
    """`build_vocab` from the train `corpora`, also returning the number of
    train pairs of each when it read them."""
    path = data_vocab_path(data_dir, problem, vocab_model)
    if vocab_model:
        return _copy_vocab(vocab_model, path, log), None
    if path.endswith(T2T_SUFFIX):  # copied by an earlier run with a t2t vocab_model
        vocab = T2TSubwordVocab.from_file(path)
        log(f"  vocabulary: reusing {os.path.basename(path)} ({vocab.vocab_size} subwords)")
        return vocab, None
    if os.path.isfile(path):
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


T2T_SUFFIX = ".subwords"


def t2t_vocab_path(data_dir: str, problem: Problem) -> str:
    """Where a tensor2tensor SubwordTextEncoder vocabulary is kept in `data_dir`."""
    return os.path.join(data_dir, problem.name + T2T_SUFFIX)


def data_vocab_path(data_dir: str, problem: Problem, vocab_model: Optional[str] = None) -> str:
    """The vocabulary file of `problem`'s data in `data_dir`: a t2t subwords file when
    `vocab_model` is one or an earlier run copied one, else the SentencePiece model."""
    t2t_path = t2t_vocab_path(data_dir, problem)
    if vocab_model:
        return t2t_path if vocab_model.endswith(T2T_SUFFIX) else vocab_path(data_dir, problem)
    return t2t_path if os.path.isfile(t2t_path) else vocab_path(data_dir, problem)


def _write_vocab(vocab: SubwordVocab, path: str) -> None:
    """Writes the SentencePiece model to `path` and its readable piece table beside it."""
    table = "".join(f"{piece}\t{i}\n" for i, piece in enumerate(vocab.pieces()))
    write_atomically(os.path.splitext(path)[0] + ".vocab", table.encode("utf-8"))
    write_atomically(path, vocab.model_proto)  # last: its presence means it is complete


def _copy_vocab(source: str, path: str, log: Callable[[str], None]) -> SubwordVocab:
    """The vocabulary of the model file `source` (SentencePiece, or t2t's subwords),
    written as `path`."""
    try:
        with open(source, "rb") as f:
            proto = f.read()
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
    if path.endswith(T2T_SUFFIX):
        write_atomically(path, proto)
    else:
        _write_vocab(vocab, path)
    log(f"  vocabulary: {os.path.basename(path)} copied from {source} "
        f"({vocab.vocab_size} pieces)")
    return vocab


def _split_line(split: str, s: Dict, reused: bool) -> str:
    dropped = sum(s["dropped"].values())
    why = ", ".join(f"{k}: {v:,}" for k, v in s["dropped"].items() if v)
    line = (f"  {split}: {'reusing ' if reused else ''}{s['examples']:,} examples in "
            f"{len(s['shards'])} shard(s); subwords incl. EOS: source {s['source_subwords']:,}, "
            f"target {s['target_subwords']:,} (longest {s['max_source_length']} / "
            f"{s['max_target_length']}); dropped {dropped:,}" + (f" ({why})" if why else ""))
    if s["kept_with_empty_side"]:
        line += f"; kept {s['kept_with_empty_side']:,} with an empty side"
    return line + corpora_summary(s)


def text_file_path(data_dir: str, problem_name: str, split: str, suffix: str) -> str:
    """A plain-text file of `Problem.text_files`, e.g. `D/parsing_wsj-test.trees`."""
    return os.path.join(data_dir, f"{problem_name}-{split}.{suffix}")


def _write_text_files(problem: Problem, split: str, data_dir: str, tmp_dir: Optional[str],
                      log: Callable[[str], None]) -> None:
    for suffix, lines in problem.text_files(split, tmp_dir).items():
        path = text_file_path(data_dir, problem.name, split, suffix)
        if not os.path.isfile(path):
            write_atomically(path, "".join(line + "\n" for line in lines).encode("utf-8"))
            log(f"  {split}: wrote {os.path.basename(path)}")


def generate_data(problem: Union[str, Problem], data_dir: str, tmp_dir: Optional[str] = None,
                  log: Callable[[str], None] = print,
                  vocab_model: Optional[str] = None, *, threads: Optional[int] = None,
                  clock: Clock = time.monotonic) -> Dict:
    """Builds the vocabulary and the train/dev/test shards of `problem` in `data_dir`.

    Args:
      problem: a registered problem name (aliases resolve) or a `Problem` instance.
      data_dir: output directory (created if needed).
      tmp_dir: where the problem looks for raw files (see each problem's docs).
      log: receives the progress and summary lines (no two lines more than
        10 seconds apart: `progress.keep_alive`).
      vocab_model: a SentencePiece model file to encode with instead of
        learning a vocabulary (`t2t-datagen --vocab_from=M`: fine-tuning M).
      threads: encoding threads (default: every core); the shards are the
        same for any number.
      clock: monotonic seconds, for the progress lines (tests pass a fake one).

    Returns:
      The metadata written to `{problem}.datagen.json`.

    Raises:
      T2TError: unknown problem, unreadable or mismatched raw data, data that
        would need a download without network, a data directory of a newer
        t2t-datagen.
    """
    with keep_alive(log) as log:  # no silence longer than 10 s, whatever the step
        return _generate_data(problem, data_dir, tmp_dir, log, vocab_model, threads, clock)


def _generate_data(problem: Union[str, Problem], data_dir: str, tmp_dir: Optional[str],
                   log: Callable[[str], None], vocab_model: Optional[str],
                   threads: Optional[int], clock: Clock) -> Dict:
    """`generate_data`'s work, logging through `keep_alive`'s log."""
    if isinstance(problem, str):
        problem = registry.problem(problem)
    os.makedirs(data_dir, exist_ok=True)
    log(f"t2t-datagen: {problem.name} ({problem.source_language}->{problem.target_language}) "
        f"into {data_dir}")
    _remove_leftovers(data_dir, problem.name, log)
    meta = read_metadata(data_dir, problem.name)
    _check_layout(meta, data_dir, log)
    corpora = problem.train_corpora(tmp_dir)
    vocab, counts = _build_vocab(problem, data_dir, corpora, log, vocab_model, clock)
    vocab_file = data_vocab_path(data_dir, problem, vocab_model)
    digest = hashlib.sha256(vocab.model_proto).hexdigest()
    if meta.get("vocab_sha256") != digest:
        meta["splits"] = {}  # shards encoded with another vocabulary are not reused
    meta.update(vocab_sha256=digest, problem=problem.name, source_language=problem.source_language,
                target_language=problem.target_language,
                vocab_file=os.path.basename(vocab_file),
                vocab_size=vocab.vocab_size, pad_id=PAD_ID, eos_id=EOS_ID,
                features={"inputs": "int64 source ids + EOS", "targets": "int64 target ids + EOS"},
                layout_version=LAYOUT_VERSION, shuffle_seed=SHUFFLE_SEED)
    meta.setdefault("splits", {})
    encode = make_encoder(vocab, threads)
    for split in SPLITS:
        num_shards = problem.num_shards(split)
        if split == "train":  # at least one per corpus
            num_shards = max(num_shards, len(corpora))
        paths = shard_paths(data_dir, problem.name, split, num_shards)
        _write_text_files(problem, split, data_dir, tmp_dir, log)
        prefix = state_prefix(data_dir, problem.name, split)
        if _reusable(meta, split, paths, data_dir, problem.name, log):
            remove_state(prefix)  # left if killed after recording the split
            continue
        old = meta["splits"].pop(split, None)
        _write_metadata(data_dir, meta)  # the old shards are no longer vouched for
        total = sum(counts) if split == "train" and counts else None
        if old and total is None:
            total = old["examples"] + sum(old["dropped"].values())
        start = time.time()
        key = {"vocab_sha256": digest, "layout_version": LAYOUT_VERSION}
        if split == "train":
            if len(corpora) > 1 and not counts:
                counts = count_pairs(corpora, log, clock)
            stats = write_train_split(corpora, counts, encode, paths, prefix, key,
                                      shuffle_seed=SHUFFLE_SEED, log=log, clock=clock,
                                      total_pairs=total)
        else:
            stats = write_split(
                lambda split=split: problem.raw_pairs(split, tmp_dir), encode, paths, prefix,
                key, shuffle_seed=None, drop_empty=False, log=log, label=f"  {split}",
                total_pairs=total, clock=clock)
        meta["splits"][split] = stats
        _write_metadata(data_dir, meta)
        remove_state(prefix)
        log(_split_line(split, stats, reused=False) + f" [{time.time() - start:.1f} s]")
    _write_metadata(data_dir, meta)
    return meta


def _check_layout(meta: Dict, data_dir: str, log: Callable[[str], None]) -> None:
    """Drops train shards of an older layout from `meta`, saying so: layout 1
    (corpus order), layout 2 (corpora not recorded); refuses a data directory
    of a newer layout."""
    version = meta.get("layout_version", 1)
    if version > LAYOUT_VERSION:
        raise T2TError(f"{data_dir} holds data of a newer t2t-datagen (layout {version}; this "
                       f"one writes layout {LAYOUT_VERSION}): use a new --data_dir.")
    if version < LAYOUT_VERSION and meta.get("splits", {}).pop("train", None):
        if version < SHUFFLED_LAYOUT:
            log("  train: the shards hold the corpus in order (an older t2t-datagen); "
                "writing them again, each shuffled")
        else:
            log("  train: the shards do not record their corpora (an older t2t-datagen); "
                "writing them again, a range of shards per corpus")


def _reusable(meta: Dict, split: str, paths: List[str], data_dir: str, problem_name: str,
              log: Callable[[str], None]) -> bool:
    """Whether the split's shards in `meta` are complete and as recorded (says so);
    records sizes and checksums for metadata from before they were recorded."""
    done = meta["splits"].get(split)
    if not (done and done["shards"] == [os.path.basename(p) for p in paths]
            and all(os.path.isfile(p) for p in paths)):
        return False
    if "shard_bytes" not in done:  # written before sizes were recorded
        # Record sizes and checksums only of shards that read back whole:
        # recording damaged bytes would make the damage look intended.
        found = count_records(paths)
        if found == done["examples"]:
            done.update(shard_records(paths))
            log(f"  {split}: recorded the sizes and checksums of the existing shards "
                f"({found:,} examples read back)")
        else:
            what = "unreadable records" if found is None else f"{found:,} examples"
            log(f"  {split}: the existing shards hold {what}, not the "
                f"{done['examples']:,} t2t-datagen wrote; writing the split again")
            return False
    damaged = damaged_shards(data_dir, problem_name, done)
    if damaged:
        log(f"  {split}: {damaged[0]}; writing the split again")
        return False
    log(_split_line(split, done, reused=True))
    return True


def verify_data(problem: Union[str, Problem], data_dir: str,
                log: Callable[[str], None] = print) -> None:
    """Checks every shard of `problem` in `data_dir` against the sizes and SHA-256
    checksums datagen recorded (t2t-datagen --verify).

    Raises:
      T2TError: no data, or a missing, resized or corrupt shard (naming it).
    """
    if isinstance(problem, str):
        problem = registry.problem(problem)
    meta = read_metadata(data_dir, problem.name)
    if not meta.get("splits"):
        raise T2TError(f"No t2t-datagen output for {problem.name} in {data_dir}.")
    for split, split_meta in meta["splits"].items():
        check_shards(data_dir, problem.name, meta, [split], checksums=True)
        log(f"  {split}: {len(split_meta['shards'])} shard(s), sizes and SHA-256 as written")
