"""The user directory that made tensor2tensor's reference model A (../shared/t2t-reference,
tools/usr) runs as it is: its `translate_ende_multi30k` replaces t2t-lite's problem of
that name, said in one line, and encodes with model A's own vocabulary file."""

import shutil

import pytest
import tensorflow as tf

from paths import T2T_REFERENCE
from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen
from t2t_lite.data import datagen
from t2t_lite.data.t2t_subwords_text import T2TSubwordText
from registry_isolation import isolated_registry, notes  # noqa: F401  (fixtures)

USR = T2T_REFERENCE / "tools" / "usr"
VOCAB = T2T_REFERENCE / "model_a" / "data_dir" / "vocab.translate_ende_multi30k.8192.subwords"


@pytest.fixture
def reference_usr(isolated_registry, tmp_path, monkeypatch):
    if not (USR / "m30k.py").is_file() or not VOCAB.is_file():
        pytest.skip(f"tensor2tensor's reference user directory not found under {T2T_REFERENCE}")
    usr = shutil.copytree(USR, tmp_path / "usr")
    raw = tmp_path / "multi30k"  # its problem reads $M30K_DIR/{train,val}.{en,de}
    raw.mkdir()
    for split, count in (("train", 40), ("val", 5)):
        (raw / f"{split}.en").write_text("".join(f"A dog runs {i} times.\n" for i in range(count)))
        (raw / f"{split}.de").write_text("".join(f"Ein Hund läuft {i} Mal.\n"
                                                 for i in range(count)))
    monkeypatch.setenv("M30K_DIR", str(raw))
    return usr


def test_model_a_s_user_directory_replaces_the_built_in_and_uses_t2t_s_vocabulary(
        reference_usr, tmp_path, notes):
    usr_dir.import_usr_dir(str(reference_usr))
    assert (f"The problem 'translate_ende_multi30k' of --usr_dir {reference_usr} replaces the "
            "built-in one.") in notes
    assert type(registry.problem("translate_ende_multi30k")).__module__ == "usr.m30k"

    data = tmp_path / "data"
    assert t2t_datagen.main(["--t2t_usr_dir", str(reference_usr),
                             "--problem=translate_ende_multi30k", f"--data_dir={data}",
                             f"--vocab_from={VOCAB}"]) == 0
    meta = datagen.read_metadata(str(data), "translate_ende_multi30k")
    assert (meta["vocab_file"], meta["vocab_size"]) == ("translate_ende_multi30k.subwords", 8079)
    assert (meta["splits"]["train"]["examples"], meta["splits"]["dev"]["examples"]) == (40, 5)
    dev = [tf.train.Example.FromString(r).features.feature for r in
           tf.data.TFRecordDataset(str(data / meta["splits"]["dev"]["shards"][0]))
           .as_numpy_iterator()]
    subwords = T2TSubwordText.from_file(str(VOCAB))
    eos = [1]
    assert list(dev[0]["inputs"].int64_list.value) == subwords.encode("A dog runs 0 times.") + eos
    assert list(dev[0]["targets"].int64_list.value) == \
        subwords.encode("Ein Hund läuft 0 Mal.") + eos
