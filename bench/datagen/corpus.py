"""The synthetic WMT-sized corpus: the news test sets' pairs repeated, each
repetition's lines rotated, as translate_ende's train split; dev and test linked."""

import glob
import json
import os
import sys
import time
from typing import Dict, List, Tuple

PROBLEM = "translate_ende"
STEM = "synthnews.en-de"
CORPUS_VERSION = 1  # the stamp's format and the rotation rule


def rotate(line: str, r: int) -> str:
    """`line`'s words rotated left by r modulo its word count (r = 0: the line as is)."""
    words = line.split()
    if r == 0 or not words:
        return line
    k = r % len(words)
    return " ".join(words[k:] + words[:k])


def _read_lines(path: str) -> List[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") or not text else lines


def base_pairs(data: str) -> Tuple[List[str], List[str], List[str]]:
    """The news sets' (English lines, German lines, file stems), files in name order."""
    folder = os.path.join(data, "wmt_newstest_2008_2012")
    stems = sorted(os.path.basename(p)[:-len(".en")]
                   for p in glob.glob(os.path.join(folder, "*.en-de.en")))
    english, german = [], []
    for stem in stems:
        en, de = (_read_lines(os.path.join(folder, f"{stem}.{lang}")) for lang in ("en", "de"))
        if len(en) != len(de):
            sys.exit(f"datagen_scale: {stem}.en and .de differ in length ({len(en)}, {len(de)})")
        english += en
        german += de
    if not english:
        sys.exit(f"datagen_scale: no *.en-de.en files in {folder}")
    return english, german, stems


def build_corpus(data: str, corpus_dir: str, pairs: int) -> Dict:
    """Writes (or reuses) the synthetic corpus and dev/test links; returns its stamp."""
    os.makedirs(corpus_dir, exist_ok=True)
    stamp_path = os.path.join(corpus_dir, STEM + ".json")
    paths = {lang: os.path.join(corpus_dir, f"{STEM}.{lang}") for lang in ("en", "de")}
    english, german, stems = base_pairs(data)
    want = {"version": CORPUS_VERSION, "pairs": pairs, "base_pairs": len(english),
            "base_files": stems}
    try:
        with open(stamp_path, encoding="utf-8") as f:
            stamp = json.load(f)
        if ({k: stamp.get(k) for k in want} == want
                and all(os.path.getsize(paths[lang]) == stamp["bytes"][lang] for lang in paths)):
            print(f"corpus: reusing {corpus_dir} ({pairs:,} pairs)")
            _link_dev_test(data, corpus_dir)
            return stamp
    except (OSError, ValueError, KeyError):
        pass
    start = time.perf_counter()
    sizes = {}
    for lang, lines in (("en", english), ("de", german)):
        tmp = paths[lang] + ".incomplete"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            left, r = pairs, 0
            while left > 0:
                part = lines[:left]
                f.write("".join(rotate(line, r) + "\n" for line in part))
                left, r = left - len(part), r + 1
        os.replace(tmp, paths[lang])
        sizes[lang] = os.path.getsize(paths[lang])
    stamp = dict(want, bytes=sizes, build_s=round(time.perf_counter() - start, 1))
    with open(stamp_path, "w", encoding="utf-8") as f:
        json.dump(stamp, f, indent=2)
    print(f"corpus: wrote {pairs:,} pairs ({sum(sizes.values()) / 1e9:.2f} GB) to {corpus_dir} "
          f"in {stamp['build_s']} s")
    _link_dev_test(data, corpus_dir)
    return stamp


def _link_dev_test(data: str, corpus_dir: str) -> None:
    for stem in ("newstest2013.en-de", "newstest2014-full.en-de"):
        for lang in ("en", "de"):
            target = os.path.abspath(os.path.join(data, "wmt14", f"{stem}.{lang}"))
            link = os.path.join(corpus_dir, f"{stem}.{lang}")
            if not os.path.isfile(target):
                sys.exit(f"datagen_scale: missing {target}")
            if not os.path.lexists(link):
                os.symlink(target, link)
