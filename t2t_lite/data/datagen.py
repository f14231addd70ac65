"""Datagen: a problem's raw pairs -> a subword vocabulary and encoded TFRecord shards.

Output in `data_dir` (the input pipeline relies on these names and features; the
ids, split names and shard names are defined in `t2t_lite.data.layout`):

  - `{problem}.sp{size}.model` (+ `.vocab`, readable): the SentencePiece vocabulary,
    learned from (a seeded sample of at most `problem.vocab_sample_pairs`) train pairs,
    or a copy of a trained model's (`vocab_model`, to fine-tune that model)
    (`t2t_lite.data.vocab_files`); an imported Marian model's is copied as
    `{problem}.marian_vocab.json`, and the sources are then encoded with its source
    side (`vocab.encode_sources`), a multilingual model's checked for their language
    token (`encoding.checked_pairs`: a pair without one stops datagen, named);
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
    name, shard range and example count; per split ("raw_files") and for a learned
    vocabulary ("vocab_raw_files"), the size and SHA-256 of each raw file read
    (`Problem.raw_files`, `t2t_lite.data.raw_files`);
  - `{problem}-{split}.{suffix}`: plain-text files a problem asks for
    (`Problem.text_files`, e.g. parsing's gold trees), written once, and again
    when the split's raw files changed.

The vocabulary size is an upper bound: `{size}` in the file name is the
problem's, the learned size (smaller when the train text cannot support
more pieces; a note is printed) is in the metadata.

Every file is written under a hidden temporary name (`.incomplete.<name>`) and
renamed when complete, so a killed run never leaves a half-written shard or
vocabulary; leftovers of a killed run are deleted by the next one, matched by the
problem's full name (`previous_output.own_temporary`): another problem in the same data dir, even
one whose name starts with this one's, keeps its own, which a datagen running at
the same time may be writing. A split
killed part-way resumes from the chunks it had encoded and the shards it had
written (`t2t_lite.data.split_writer`). A second run reuses the vocabulary and
every split whose shards and metadata are complete and whose shards have the
sizes it recorded, and says so (`previous_output`); a split with a missing or resized shard is
written again, and so are train shards of an older t2t-datagen (written in
corpus order, or without their corpora recorded: layout 1 or 2); delete the
files to regenerate them. Raw files whose size or SHA-256 differ from the
record are named in one line each: a split read from them is written again,
and a vocabulary learned from them (never one given) is learned again, which
re-encodes every split. Files that cannot be read are not compared, and data
of a t2t-datagen that recorded no files is reused, saying so, and recorded.

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
import time
from typing import Callable, Dict, Iterable, List, Optional, Union

from t2t_lite import registry
from t2t_lite.data.corpora import count_pairs, write_train_split
from t2t_lite.data.encoding import checked_pairs, make_encoder
from t2t_lite.data.integrity import check_shards
from t2t_lite.data.layout import EOS_ID, LAYOUT_VERSION, PAD_ID, SPLITS, metadata_path, shard_name
from t2t_lite.data.previous_output import check_layout, remove_leftovers, reusable, split_line
from t2t_lite.data.problem import Pair, Problem
from t2t_lite.data.progress import Clock, keep_alive
from t2t_lite.data.raw_files import RawFiles, changed_file, record_if_missing, split_changed
from t2t_lite.data.subword_sampling import SubwordSampling
from t2t_lite.data.split_writer import (  # EMPTY_SIDE: datagen.EMPTY_SIDE for callers
    EMPTY_SIDE, remove_state, state_prefix, write_atomically, write_split)
from t2t_lite.data.vocab_files import (VocabLoader, build_vocab_and_counts, data_vocab_path,
                                       learned_vocab, t2t_vocab_file, vocab_file_kind)
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.errors import T2TError

SHUFFLE_SEED = 1234  # train shards' permutations (recorded in the metadata)


def shard_paths(data_dir: str, problem_name: str, split: str, num_shards: int) -> List[str]:
    """The shard files of a split, e.g. `D/translate_ende-train-00000-of-00100`."""
    return [os.path.join(data_dir, shard_name(problem_name, split, i, num_shards))
            for i in range(num_shards)]


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


def text_file_path(data_dir: str, problem_name: str, split: str, suffix: str) -> str:
    """A plain-text file of `Problem.text_files`, e.g. `D/parsing_wsj-test.trees`."""
    return os.path.join(data_dir, f"{problem_name}-{split}.{suffix}")


def _write_text_files(problem: Problem, split: str, data_dir: str, tmp_dir: Optional[str],
                      log: Callable[[str], None], again: bool) -> None:
    """Writes the split's `Problem.text_files` that are absent (all of them `again`:
    its raw files changed)."""
    for suffix, lines in problem.text_files(split, tmp_dir).items():
        path = text_file_path(data_dir, problem.name, split, suffix)
        if again or not os.path.isfile(path):
            write_atomically(path, "".join(line + "\n" for line in lines).encode("utf-8"))
            log(f"  {split}: wrote {os.path.basename(path)}")


def generate_data(problem: Union[str, Problem], data_dir: str, tmp_dir: Optional[str] = None,
                  log: Callable[[str], None] = print,
                  vocab_model: Optional[str] = None, *, threads: Optional[int] = None,
                  clock: Clock = time.monotonic,
                  subword_sampling: Optional[SubwordSampling] = None,
                  load_vocab: Optional[VocabLoader] = None) -> Dict:
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
      subword_sampling: write the train split as copies segmented by sampling
        (`t2t_lite.data.subword_sampling`; `SubwordSampling()`: none); dev and
        test are unchanged. A train split written with other settings is written
        again. None (t2t-trainer --generate_data): the setting recorded in
        `data_dir`, if any, else none.
      load_vocab: loads an imported Marian model's vocabulary file (`vocab_model`, or
        the copy in `data_dir`): `t2t_lite.model_dir.load_vocab_file`.

    Returns:
      The metadata written to `{problem}.datagen.json`.

    Raises:
      T2TError: unknown problem, unreadable or mismatched raw data, data that
        would need a download without network, a data directory of a newer
        t2t-datagen.
    """
    with keep_alive(log) as log:  # no silence longer than 10 s, whatever the step
        return _generate_data(problem, data_dir, tmp_dir, log, vocab_model, threads, clock,
                              subword_sampling, load_vocab)


def _generate_data(problem: Union[str, Problem], data_dir: str, tmp_dir: Optional[str],
                   log: Callable[[str], None], vocab_model: Optional[str],
                   threads: Optional[int], clock: Clock,
                   sampling: Optional[SubwordSampling],
                   load_vocab: Optional[VocabLoader]) -> Dict:
    """`generate_data`'s work, logging through `keep_alive`'s log."""
    if isinstance(problem, str):
        problem = registry.problem(problem)
    os.makedirs(data_dir, exist_ok=True)
    log(f"t2t-datagen: {problem.name} ({problem.source_language}->{problem.target_language}) "
        f"into {data_dir}")
    remove_leftovers(data_dir, problem.name, log)
    meta = read_metadata(data_dir, problem.name)
    check_layout(meta, data_dir, log)
    if sampling is None:
        sampling = SubwordSampling.from_record(
            meta.get("splits", {}).get("train", {}).get("subword_sampling"),
            metadata_path(data_dir, problem.name))
    corpora = problem.train_corpora(tmp_dir)
    vocab_model = vocab_model or t2t_vocab_file(problem, data_dir, log)
    raw_files = RawFiles()
    learned = learned_vocab(problem, data_dir, vocab_model)
    train_files = raw_files.records(problem.raw_files("train", tmp_dir)) if learned else []
    changed = (train_files and os.path.isfile(learned)
               and changed_file(meta.get("vocab_raw_files", train_files), train_files))
    if changed:
        log(f"  vocabulary: {changed} changed since {os.path.basename(learned)} was learned "
            "from it; learning it again")
    vocab, counts = build_vocab_and_counts(problem, data_dir, corpora, log, vocab_model, clock,
                                           relearn=bool(changed), load_vocab=load_vocab)
    vocab_file = data_vocab_path(data_dir, problem, vocab_model)
    if not learned:
        meta.pop("vocab_raw_files", None)
    elif train_files:  # else kept: the files are gone, nothing was compared
        meta["vocab_raw_files"] = train_files
    digest = hashlib.sha256(vocab.model_proto).hexdigest()
    written = dict(meta.get("splits", {}))  # their raw files: to rewrite changed text files
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
    if sampling.enabled and not isinstance(vocab, SubwordVocab):
        raise T2TError("Subword sampling (--subword_samples) needs a SentencePiece "
                       f"vocabulary; this problem's is {os.path.basename(vocab_file)} (a "
                       f"{vocab_file_kind(vocab_file)}).")
    corpora = [(name, _checked(vocab, read, f"{problem.name}, train split, corpus {name}"))
               for name, read in corpora]
    for split in SPLITS:
        num_shards = problem.num_shards(split)
        if split == "train":  # at least one per corpus
            num_shards = max(num_shards, len(corpora))
        paths = shard_paths(data_dir, problem.name, split, num_shards)
        files = raw_files.records(problem.raw_files(split, tmp_dir))
        changed = split_changed(written.get(split), split, files, log)
        _write_text_files(problem, split, data_dir, tmp_dir, log, again=changed)
        prefix = state_prefix(data_dir, problem.name, split)
        wanted = sampling.as_dict() if split == "train" and sampling.enabled else None
        if (not changed and meta["splits"].get(split, {}).get("subword_sampling") == wanted
                and reusable(meta, split, paths, data_dir, problem.name, log)):
            record_if_missing(meta["splits"][split], split, files, log)
            remove_state(prefix)  # left if killed after recording the split
            continue
        old = meta["splits"].pop(split, None)
        _write_metadata(data_dir, meta)  # the old shards are no longer vouched for
        total = sum(counts) if split == "train" and counts else None
        if old and total is None:
            total = old["examples"] + sum(old["dropped"].values())
        start = time.time()
        key = {"vocab_sha256": digest, "layout_version": LAYOUT_VERSION}
        if wanted:
            key["subword_sampling"] = wanted
        if split == "train":
            if len(corpora) > 1 and not counts:
                counts = count_pairs(corpora, log, clock)
            train_encode = make_encoder(vocab, threads, sampling) if wanted else encode
            stats = write_train_split(corpora, counts, train_encode, paths, prefix, key,
                                      shuffle_seed=SHUFFLE_SEED, log=log, clock=clock,
                                      total_pairs=total)
        else:
            stats = write_split(
                _checked(vocab, lambda split=split: problem.raw_pairs(split, tmp_dir),
                         f"{problem.name}, {split} split"), encode, paths, prefix,
                key, shuffle_seed=None, drop_empty=False, log=log, label=f"  {split}",
                total_pairs=total, clock=clock)
        if wanted:
            stats["subword_sampling"] = wanted
        if files:
            stats["raw_files"] = files
        meta["splits"][split] = stats
        _write_metadata(data_dir, meta)
        remove_state(prefix)
        log(split_line(split, stats, reused=False) + f" [{time.time() - start:.1f} s]")
    _write_metadata(data_dir, meta)
    return meta


def _checked(vocab, read: Callable[[], Iterable[Pair]],
             where: str) -> Callable[[], Iterable[Pair]]:
    """`read`, its pairs' sources checked by `vocab` (`encoding.checked_pairs`)."""
    return lambda: checked_pairs(vocab, read(), where)


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
