"""t2t CHARACTER and TOKEN vocabularies: t2t's ByteTextEncoder and TokenTextEncoder ids.

A t2t user directory's Text2TextProblem with `vocab_type = VocabType.CHARACTER`
or `VocabType.TOKEN` runs unchanged through t2t-datagen -> t2t-trainer ->
t2t-decoder -> t2t-exporter (SavedModel). The ids are pinned against t2t's
rules computed here independently (bytes of the UTF-8 + 2; a token's line in
t2t's vocabulary file, the oov_token's for unknown words), in the written
shards, eagerly and in a tf.function; the exported SavedModel translates as
t2t-decoder does; CTranslate2 export is refused in one line.
"""

import json
import os
import textwrap

import pytest
import tensorflow as tf

from t2t_lite import model_dir as model_dir_lib
from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.data import datagen
from t2t_lite.data.t2t_text_encoders import T2TByteVocab, T2TTokenVocab, token_file_bytes
from t2t_lite.errors import T2TError

import t2t_usr_dirs
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)

PROBLEMS = textwrap.dedent('''\
    """Copy a sentence, with t2t's byte and token vocabularies."""
    import os

    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.utils import registry


    class _Copy(text_problems.Text2TextProblem):

      @property
      def is_generate_per_split(self):
        return False

      @property
      def dataset_splits(self):
        return [{"split": "train", "shards": 3}, {"split": "eval", "shards": 1}]

      def generate_samples(self, data_dir, tmp_dir, dataset_split):
        with open(os.path.join(tmp_dir, "words.txt")) as f:
          for line in f:
            yield {"inputs": line.strip(), "targets": line.strip()}


    @registry.register_problem
    class CopyBytes(_Copy):

      @property
      def vocab_type(self):
        return text_problems.VocabType.CHARACTER


    @registry.register_problem
    class CopyTokens(_Copy):

      @property
      def vocab_type(self):
        return text_problems.VocabType.TOKEN

      @property
      def oov_token(self):
        return "<UNK>"
''')

# t2t's token file: reserved tokens first, then one token a line ("zwei" twice: the
# later line's id wins in t2t's dict); "zehn" and "fünf" are left out (unknown words).
TOKEN_LINES = ["<pad>", "<EOS>", "<UNK>", "zwei", "eins", "drei", "vier", "zwei",
               "sechs", "sieben", "acht", "neun"]


def t2t_byte_ids(text):
    """t2t's ByteTextEncoder.encode (+ t2t-lite's EOS)."""
    return [b + 2 for b in text.encode("utf-8")] + [1]


def t2t_token_ids(text):
    """t2t's TokenTextEncoder(file, replace_oov="<UNK>").encode (+ EOS)."""
    last = {token: i for i, token in enumerate(TOKEN_LINES)}
    return [last.get(word, TOKEN_LINES.index("<UNK>")) for word in text.strip().split()] + [1]


def test_byte_and_token_ids_are_t2t_s():
    text = "zwei fünf\tzehn  acht"
    assert T2TByteVocab().encode_texts([text, ""]) == [t2t_byte_ids(text), [1]]
    assert t2t_byte_ids("fü")[:-1] == [104, 197, 190]  # f, then ü's two UTF-8 bytes, + 2
    tokens = T2TTokenVocab(token_file_bytes("\n".join(TOKEN_LINES).encode(), "<UNK>"))
    assert tokens.vocab_size == 12 and tokens.unk_id == 2
    # [7, 2, 2, 10], 12 ids and ByteTextEncoder's [104, 197, 190] for "fü" (258 ids) are what
    # tensor2tensor 1.15.7's own text_encoder gives for these inputs (run beside t2t's
    # reference venv, ../shared/t2t-reference/README.md); t2t-lite adds EOS (1).
    assert tokens.encode_texts([text]) == [t2t_token_ids(text)] == [[7, 2, 2, 10, 1]]
    assert tokens.decode_ids([[7, 2, 10, 1, 4], [0, 99, 4]]) == ["zwei <UNK> acht", "eins"]
    # Bytes decode as t2t's decode("utf-8", "replace"); ids past 257 are dropped.
    assert T2TByteVocab().decode_ids([[104, 197, 190, 1, 50], [104, 197, 300]]) == \
        ["fü", "f\ufffd"]
    no_oov = T2TTokenVocab(token_file_bytes("\n".join(TOKEN_LINES).encode(), None))
    with pytest.raises(T2TError, match="no oov_token"):
        no_oov.encode_texts(["zehn"])
    with pytest.raises(T2TError, match="lines 1 and 2"):
        T2TTokenVocab(token_file_bytes(b"a\nb\n", None))


def shard_examples(data, problem):
    meta = datagen.read_metadata(str(data), problem)
    features = {"inputs": tf.io.VarLenFeature(tf.int64), "targets": tf.io.VarLenFeature(tf.int64)}
    for shard in meta["splits"]["train"]["shards"]:
        for record in tf.data.TFRecordDataset(str(data / shard)):
            example = tf.io.parse_single_example(record, features)
            yield (tf.sparse.to_dense(example["inputs"]).numpy().tolist(),
                   tf.sparse.to_dense(example["targets"]).numpy().tolist())


@pytest.mark.parametrize("problem, ids, vocab_file", [
    ("copy_bytes", t2t_byte_ids, "copy_bytes.bytes"),
    ("copy_tokens", t2t_token_ids, "copy_tokens.tokens"),
])
def test_a_char_or_token_problem_runs_datagen_trainer_decoder_exporter(
        isolated_registry, tmp_path, capfd, problem, ids, vocab_file):
    usr = t2t_usr_dirs.write_usr_dir(tmp_path, "my_t2t_problems", {
        "copy": PROBLEMS, "toy_hparams": t2t_usr_dirs.HPARAMS})
    tmp, data, model = tmp_path / "tmp", tmp_path / "data", tmp_path / "model"
    tmp.mkdir()
    lines = t2t_usr_dirs.sentences(30) + ["fünf zehn zwei"]
    (tmp / "words.txt").write_text("".join(line + "\n" for line in lines))
    data.mkdir()
    (data / "vocab.copy_tokens.tokens").write_text("\n".join(TOKEN_LINES) + "\n")
    assert t2t_datagen.main([f"--t2t_usr_dir={usr}", f"--problem={problem}",
                             f"--data_dir={data}", f"--tmp_dir={tmp}"]) == 0
    meta = datagen.read_metadata(str(data), problem)
    assert meta["vocab_file"] == vocab_file
    examples = list(shard_examples(data, problem))
    assert examples and all(inputs == targets for inputs, targets in examples)
    # t2t deals every 4th sample to eval: the train shards hold the others, t2t's ids.
    train = [line for i, line in enumerate(lines) if i % 4 != 3]
    assert sorted(inputs for inputs, _ in examples) == sorted(ids(line) for line in train)

    assert t2t_trainer.main([f"--t2t_usr_dir={usr}", f"--problem={problem}",
                             f"--data_dir={data}", "--hparams_set=transformer_toy",
                             f"--output_dir={model}", "--train_steps=2",
                             "--eval_bleu_sentences=0"]) == 0
    vocab = model_dir_lib.ModelDir.open(str(model)).vocab()
    assert type(vocab) is (T2TByteVocab if problem == "copy_bytes" else T2TTokenVocab)
    assert json.loads((model / "problem.json").read_text())["vocab_size"] == vocab.vocab_size
    assert vocab.encode_texts([lines[-1]]) == [ids(lines[-1])]
    in_graph = tf.function(vocab.encode_inputs, autograph=False)  # as the SavedModel runs it
    assert in_graph(tf.constant([" zehn eins "])).to_list() == [ids("zehn eins")]

    (tmp_path / "in.txt").write_text("eins zwei\nzehn\n")
    assert t2t_decoder.main([f"--usr_dir={usr}", f"--output_dir={model}",
                             f"--decode_from_file={tmp_path / 'in.txt'}",
                             f"--decode_to_file={tmp_path / 'out.txt'}",
                             "--decode_hparams=beam_size=1,extra_length=3"]) == 0
    decoded = (tmp_path / "out.txt").read_text().splitlines()
    assert len(decoded) == 2

    from t2t_lite.bin import t2t_exporter
    export = tmp_path / "export"
    assert t2t_exporter.main([f"--usr_dir={usr}", f"--output_dir={model}",
                              f"--export_dir={export}",
                              "--decode_hparams=beam_size=1,extra_length=3"]) == 0
    served = tf.saved_model.load(str(export / "1"))
    assert os.path.isfile(export / "1" / "assets" / vocab_file)
    # The SavedModel encodes and decodes in graph as the decoder did (same greedy search).
    result = served.signatures["serving_default"](inputs=tf.constant(["eins zwei", "zehn"]))
    assert [t.decode("utf-8") for t in result["outputs"].numpy()] == decoded
    capfd.readouterr()
    assert t2t_exporter.main([f"--usr_dir={usr}", f"--output_dir={model}",
                              f"--export_dir={tmp_path / 'ct2'}", "--format=ctranslate2"]) != 0
    err = capfd.readouterr().err
    assert "cannot be exported for CTranslate2" in err and "SavedModel instead" in err
