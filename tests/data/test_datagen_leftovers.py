"""Datagen's clean-up of a killed run's temporary files takes the problem's own only:
another problem of the same data directory keeps its in-progress files, even when
its name starts with this one's (translate_ende and translate_ende_multi30k), so two
datagens of two problems can run in one directory at once."""

import os

from t2t_lite.data import datagen, previous_output
from t2t_lite.problems.translate_numbers import TranslateEndeNumbers

# The temporary files a run of a problem P writes: shards, text files, the metadata,
# the vocabulary (SentencePiece, t2t's subwords, bytes or tokens), a split's resumable state and chunk.
TEMPORARY = [".incomplete.{}-train-00003-of-00100", ".incomplete.{}-test.trees",
             ".incomplete.{}-dev.pt-BR",
             ".incomplete.{}.datagen.json", ".incomplete.{}.sp37000.model",
             ".incomplete.{}.sp37000.vocab", ".incomplete.{}.subwords",
             ".incomplete.{}.bytes", ".incomplete.{}.tokens",
             ".incomplete..partial.{}-train.json", ".incomplete..partial.{}-train.chunk-00002"]
# Complete files and resumable state of P: never the clean-up's.
COMPLETE = ["{}-train-00000-of-00100", "{}.datagen.json", ".partial.{}-train.json",
            ".partial.{}-train.chunk-00000"]


def make_files(data_dir, names):
    for name in names:
        with open(os.path.join(data_dir, name), "wb") as f:
            f.write(name.encode())


def test_only_the_problems_own_temporary_files_are_removed(tmp_path):
    own = [n.format("translate_ende") for n in TEMPORARY]
    others = ([n.format(p) for p in ("translate_ende_multi30k", "translate_endefr")
               for n in TEMPORARY + COMPLETE]
              + [n.format("translate_ende") for n in COMPLETE]
              # problem "translate_ende-dev"'s, not translate_ende's dev text files
              + [".incomplete.translate_ende-dev.subwords",
                 ".incomplete.translate_ende-dev.datagen.json",
                 ".incomplete.translate_ende-dev.sp300.model",
                 ".incomplete.translate_ende-dev.bytes",
                 ".incomplete.translate_ende-dev.tokens"])
    make_files(tmp_path, own + others)
    log = []
    previous_output.remove_leftovers(str(tmp_path), "translate_ende", log.append)
    assert sorted(os.listdir(tmp_path)) == sorted(others)
    assert log == ["  removed 11 incomplete file(s) left by an interrupted run"]


class PrefixOfMulti30k(TranslateEndeNumbers):
    """A small problem named translate_ende, whose name starts translate_ende_multi30k's."""
    name = "translate_ende"
    vocab_size = 300

    def __init__(self):
        super().__init__(train_size=1000, dev_size=10, test_size=10)


def test_a_datagen_leaves_another_problems_run_in_progress(tmp_path):
    """translate_ende_multi30k's datagen is part-way (its chunk state and a shard being
    written) when translate_ende's starts in the same directory."""
    in_progress = [".partial.translate_ende_multi30k-train.json",
                   ".partial.translate_ende_multi30k-train.chunk-00000",
                   ".incomplete..partial.translate_ende_multi30k-train.chunk-00001",
                   ".incomplete.translate_ende_multi30k-train-00000-of-00003"]
    killed = ".incomplete.translate_ende-train-00000-of-00001"  # translate_ende's own
    make_files(tmp_path, in_progress + [killed])
    log = []
    datagen.generate_data(PrefixOfMulti30k(), str(tmp_path), None, log.append, threads=1)
    assert log[1] == "  removed 1 incomplete file(s) left by an interrupted run"
    for name in in_progress:
        with open(os.path.join(tmp_path, name), "rb") as f:
            assert f.read() == name.encode(), name
    assert sorted(n for n in os.listdir(tmp_path) if "multi30k" in n) == sorted(in_progress)
    assert not os.path.exists(os.path.join(tmp_path, killed))
    assert os.path.isfile(os.path.join(tmp_path, "translate_ende.datagen.json"))
