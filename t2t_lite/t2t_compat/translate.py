"""tensor2tensor.data_generators.translate: TranslateProblem and compile_data.

A TranslateProblem lists its corpora per split in `source_data_files`:
`[url, (source_file, target_file)]` or `[url, ("tsv", source_column,
target_column, glob)]`, files named relative to tmp_dir. `compile_data`
concatenates them into `tmp_dir/{problem}-compiled-{train|dev}.lang1/.lang2`
as t2t does (and reuses those files when present, as t2t does). Files already
in tmp_dir are read as they are; otherwise the archive the URL names is
unpacked (.tar.gz, .tgz, .zip), downloaded first when absent and the network
answers (`generator_utils.maybe_download`, else one line naming the file to
place there). .gz files are unzipped, SGM tags stripped, each side stripped,
and pairs with an empty side dropped. A TSV line is split at every TAB before
its columns are stripped, as t2t does: an empty first or last column keeps the
other columns in their places. TMX corpora and t2t's cleaning
(`datatypes_to_clean`) are refused in one line.
"""

import os
import tarfile
import zipfile
from typing import Sequence

import tensorflow as tf

from t2t_lite.errors import T2TError
from t2t_lite.t2t_compat import generator_utils, problem, text_problems


class TranslateProblem(text_problems.Text2TextProblem):
    """t2t's base of translation problems: `source_data_files` per split."""

    @property
    def is_generate_per_split(self) -> bool:
        return True

    @property
    def approx_vocab_size(self) -> int:
        return 2**15

    @property
    def datatypes_to_clean(self):
        return None

    def source_data_files(self, dataset_split):
        raise T2TError(f"{type(self).__name__} does not define source_data_files.")

    def vocab_data_files(self):
        return self.source_data_files(problem.DatasetSplit.TRAIN)

    def generate_samples(self, data_dir, tmp_dir, dataset_split,
                         custom_iterator=text_problems.text2text_txt_iterator):
        is_train = dataset_split == problem.DatasetSplit.TRAIN
        if is_train and self.datatypes_to_clean:
            raise T2TError(f"{type(self).__name__}.datatypes_to_clean: t2t's corpus cleaning "
                           "(cleaner_en_xx) is not provided by t2t-lite's compatibility layer.")
        data_path = compile_data(tmp_dir, self.source_data_files(dataset_split),
                                 f"{self.name}-compiled-{'train' if is_train else 'dev'}")
        return custom_iterator(data_path + ".lang1", data_path + ".lang2")


def compile_data(tmp_dir: str, datasets: Sequence, filename: str,
                 datatypes_to_clean=None) -> str:
    """Concatenates `datasets` into `tmp_dir/filename.lang1/.lang2`; returns that prefix.

    Raises:
      T2TError: a file neither in tmp_dir nor downloadable, a TMX corpus, cleaning.
    """
    if datatypes_to_clean:
        raise T2TError("compile_data(datatypes_to_clean=...): t2t's corpus cleaning "
                       "(cleaner_en_xx) is not provided by t2t-lite's compatibility layer.")
    if not tmp_dir:
        raise T2TError("This problem reads its corpora from --tmp_dir: give --tmp_dir.")
    prefix = os.path.join(tmp_dir, filename)
    if tf.io.gfile.exists(prefix + ".lang1") and tf.io.gfile.exists(prefix + ".lang2"):
        return prefix
    # Written under temporary names: t2t reuses compiled files, so a partial one must not stay.
    with open(prefix + ".lang1.incomplete", "w", encoding="utf-8") as out1, \
            open(prefix + ".lang2.incomplete", "w", encoding="utf-8") as out2:
        for dataset in datasets:
            for source, target in _dataset_pairs(tmp_dir, dataset):
                if source and target:
                    out1.write(source + "\n")
                    out2.write(target + "\n")
    for suffix in (".lang1", ".lang2"):
        os.replace(prefix + suffix + ".incomplete", prefix + suffix)
    return prefix


def _dataset_pairs(tmp_dir: str, dataset):
    """The (source, target) lines of one `source_data_files` entry."""
    url, files = dataset[0], dataset[1]
    if files[0] == "tmx":
        raise T2TError(f"{url}: TMX corpora are not provided by t2t-lite's compatibility layer.")
    if files[0] == "tsv":
        _, source_column, target_column, pattern = files
        glob = lambda: tf.io.gfile.glob(os.path.join(tmp_dir, pattern))  # noqa: E731
        if not glob():
            _fetch(url, tmp_dir, pattern)
        for path in glob():
            yield from _tsv_columns(_gunzipped(path), source_column, target_column)
        return
    path1, path2 = (os.path.join(tmp_dir, f) for f in files)
    if not (tf.io.gfile.exists(path1) and tf.io.gfile.exists(path2)):
        _fetch(url, tmp_dir, f"{files[0]} and {files[1]}")
    is_sgm = path1.endswith("sgm") and path2.endswith("sgm")
    for sample in text_problems.text2text_txt_iterator(_gunzipped(path1), _gunzipped(path2)):
        yield _strip_sgm(sample["inputs"], is_sgm), _strip_sgm(sample["targets"], is_sgm)


def _tsv_columns(path: str, source_column: int, target_column: int):
    """Two columns of each line of a TSV file holding a TAB, as t2t's compile_data reads
    them: the raw line is split and each column stripped, so an empty first column keeps
    its place and an empty last column gives an empty side (a pair compile_data drops).

    Raises:
      T2TError: a line with fewer columns than asked for (t2t stops with an IndexError).
    """
    with tf.io.gfile.GFile(path) as f:
        for number, line in enumerate(f, 1):
            if "\t" not in line:
                continue
            parts = line.split("\t")
            try:
                source, target = parts[source_column], parts[target_column]
            except IndexError:
                raise T2TError(f"{path}, line {number}: {len(parts)} TAB-separated columns, "
                               f"but columns {source_column} and {target_column} are read "
                               "(tensor2tensor stops there with an IndexError).") from None
            yield source.strip(), target.strip()


def _fetch(url: str, tmp_dir: str, wanted: str) -> None:
    """Unpacks the archive `url` names into tmp_dir, downloading it first when it is
    absent (files already in tmp_dir need neither: t2t-lite reads local files first)."""
    name = os.path.basename(url)
    archive = os.path.join(tmp_dir, name)
    if not os.path.isfile(archive):
        if not url.startswith("http"):
            raise T2TError(f"Neither {wanted} nor {name} is in {tmp_dir}: place them there "
                           "and run again.")
        generator_utils.maybe_download(tmp_dir, name, url)
    if name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(tmp_dir)
        return
    with tarfile.open(archive, "r:gz" if archive.endswith("gz") else "r") as tar:
        tar.extractall(tmp_dir, filter="data")


def _gunzipped(path: str) -> str:
    if not path.endswith(".gz"):
        return path
    generator_utils.gunzip_file(path, path[:-3])
    return path[:-3]


def _strip_sgm(line: str, is_sgm: bool) -> str:
    """t2t's SGM rule: document and paragraph tag lines become empty, <seg> tags go."""
    if not is_sgm:
        return line
    if line.startswith(("<srcset", "</srcset", "<doc", "</doc", "<p>", "</p>")):
        return ""
    line = line.strip()
    if line.startswith("<seg") and line.endswith("</seg>"):
        return line[line.index(">") + 1:-6]
    return ""  # t2t keeps only <seg> lines of an SGM file
