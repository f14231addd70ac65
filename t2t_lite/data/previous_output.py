"""What an earlier t2t-datagen left in a data directory, and what of it is reused.

Every file datagen writes is first written under a hidden temporary name
(`split_writer.TMP_PREFIX`); the leftovers of a killed run are deleted by the
next one, matched by the problem's full name (`own_temporary`), so another
problem's, which a datagen running at the same time may be writing, are kept.
Train shards of an older layout are written again (`check_layout`); a split
whose shards are complete and as recorded is reused (`reusable`), and each
split, written or reused, is summed up in one line (`split_line`).
"""

import os
import re
from typing import Callable, Dict, List

from t2t_lite.data.corpora import corpora_summary
from t2t_lite.data.integrity import count_records, damaged_shards, shard_records
from t2t_lite.data.layout import LAYOUT_VERSION, SHUFFLED_LAYOUT, SPLITS
from t2t_lite.data.split_writer import STATE_PREFIX, TMP_PREFIX
from t2t_lite.errors import T2TError


def own_temporary(problem_name: str) -> "re.Pattern":
    """Matches (`fullmatch`) the temporary name of each file datagen writes for
    `problem_name`, and of no other problem's, even one whose name starts with it.

    Each kind of file is matched whole, so `translate_ende`'s never match
    `translate_ende_multi30k`'s: shards `P-{split}-NNNNN-of-NNNNN`, text files
    `P-{split}.{suffix}`, the metadata `P.datagen.json`, the vocabulary `P.sp{N}.model`
    and `.vocab`, or t2t's `P.subwords`, `P.bytes` or `P.tokens`, and a split's resumable
    state `.partial.P-{split}.json` and `.chunk-NNNNN`, each under `TMP_PREFIX`.
    """
    name, split = re.escape(problem_name), "(?:" + "|".join(SPLITS) + ")"
    own = [rf"{name}-{split}-\d+-of-\d+",
           # A suffix without a dot (e.g. "trees", "pt-BR"), and not a t2t vocabulary's
           # ("subwords", "bytes", "tokens"): problem "P-dev"'s metadata, vocabularies and
           # t2t vocabularies are "P-dev.<more>".
           rf"{name}-{split}\.(?!(?:subwords|bytes|tokens)$)[^.]+",
           rf"{name}\.datagen\.json", rf"{name}\.sp\d+\.(?:model|vocab)",
           rf"{name}\.(?:subwords|bytes|tokens|marian_vocab\.json)",
           rf"{re.escape(STATE_PREFIX)}{name}-{split}\.(?:json|chunk-\d+)"]
    return re.compile(re.escape(TMP_PREFIX) + "(?:" + "|".join(own) + ")")


def remove_leftovers(data_dir: str, problem_name: str, log: Callable[[str], None]) -> None:
    """Deletes the temporary files a killed run of `problem_name` left (`own_temporary`)."""
    own = own_temporary(problem_name)
    stale = [f for f in os.listdir(data_dir) if own.fullmatch(f)]
    for name in stale:
        os.remove(os.path.join(data_dir, name))
    if stale:
        log(f"  removed {len(stale)} incomplete file(s) left by an interrupted run")


def check_layout(meta: Dict, data_dir: str, log: Callable[[str], None]) -> None:
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


def reusable(meta: Dict, split: str, paths: List[str], data_dir: str, problem_name: str,
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
    log(split_line(split, done, reused=True))
    return True


def split_line(split: str, s: Dict, reused: bool) -> str:
    dropped = sum(s["dropped"].values())
    why = ", ".join(f"{k}: {v:,}" for k, v in s["dropped"].items() if v)
    line = (f"  {split}: {'reusing ' if reused else ''}{s['examples']:,} examples in "
            f"{len(s['shards'])} shard(s); subwords incl. EOS: source {s['source_subwords']:,}, "
            f"target {s['target_subwords']:,} (longest {s['max_source_length']} / "
            f"{s['max_target_length']}); dropped {dropped:,}" + (f" ({why})" if why else ""))
    if s["kept_with_empty_side"]:
        line += f"; kept {s['kept_with_empty_side']:,} with an empty side"
    sampling = s.get("subword_sampling")
    if sampling:
        line += (f"; {sampling['copies']} sampled segmentations of each pair (from the "
                 f"{sampling['nbest']} best, alpha {sampling['alpha']:g})")
    return line + corpora_summary(s)
