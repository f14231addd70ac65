"""What the compatibility layer cannot run is refused in one line naming the class and
the member (or the call), when it is used; the rest of the directory keeps working."""

import textwrap

import pytest

from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen
from t2t_lite.errors import T2TError

import t2t_usr_dirs
from registry_isolation import isolated_registry, notes  # noqa: F401  (fixtures)

HEADER = textwrap.dedent('''\
    import tensorflow as tf
    from tensor2tensor.data_generators import multi_problem
    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.layers import modalities
    from tensor2tensor.models import transformer
    from tensor2tensor.utils import hparam
    from tensor2tensor.utils import registry


    class _Base(text_problems.Text2TextProblem):
      is_generate_per_split = False

      def generate_samples(self, data_dir, tmp_dir, dataset_split):
        for i in range(20):
          yield {"inputs": "a b %d" % i, "targets": "b a %d" % i}

''')


def import_module(tmp_path, *bodies: str, name="refused_usr"):
    source = HEADER + "".join(textwrap.dedent(body) for body in bodies)
    path = t2t_usr_dirs.write_usr_dir(tmp_path, name, {"refused": source})
    usr_dir.import_usr_dir(str(path))
    return path


PROBLEM_REFUSALS = [
    ("""
     @registry.register_problem
     class MixedTasks(multi_problem.MultiProblem):
       pass
     """, "mixed_tasks",
     "MixedTasks is a t2t MultiProblem: not supported by t2t-lite's compatibility layer "
     "(t2t-lite weighs the train corpora of one problem instead: t2t-trainer --train_mix)."),
    ("""
     @registry.register_problem
     class SentimentLabels(text_problems.Text2ClassProblem):
       pass
     """, "sentiment_labels",
     "SentimentLabels is a t2t Text2ClassProblem, not a text-to-text problem: t2t-lite's "
     "compatibility layer runs Text2TextProblem and TranslateProblem subclasses."),
    ("""
     @registry.register_problem
     class RawProblem(problem.Problem):
       pass
     """, "raw_problem",
     "RawProblem is a t2t Problem, not a text-to-text problem: t2t-lite's compatibility "
     "layer runs Text2TextProblem and TranslateProblem subclasses."),
    ("""
     @registry.register_problem
     class TwoVocabs(_Base):
       def feature_encoders(self, data_dir):
         return {}
     """, "two_vocabs",
     "TwoVocabs.feature_encoders is overridden: not supported (t2t-lite's problems have one "
     "vocabulary, shared by inputs and targets, that datagen builds)."),
    ("""
     @registry.register_problem
     class Lowercased(_Base):
       def preprocess_example(self, example, mode, hparams):
         return example
     """, "lowercased",
     "Lowercased.preprocess_example is overridden: not supported (t2t-lite's input pipeline "
     "does not call per-example preprocessing)."),
    ("""
     @registry.register_problem
     class OwnMetrics(_Base):
       def eval_metrics(self):
         return ["accuracy"]
     """, "own_metrics",
     "OwnMetrics.eval_metrics is overridden: not supported (t2t-lite's dev evaluation "
     "computes BLEU and chrF (t2t-trainer --eval_bleu_sentences))."),
    ("""
     @registry.register_problem
     class Hooked(_Base):
       @property
       def decode_hooks(self):
         return [print]
     """, "hooked",
     "Hooked.decode_hooks is overridden: not supported (t2t-decoder here scores with the "
     "problem's BLEU report, not t2t's hooks)."),
    ("""
     @registry.register_problem
     class ImageInputs(_Base):
       def hparams(self, defaults, unused_model_hparams):
         defaults.modality = {"inputs": modalities.ModalityType.IMAGE,
                              "targets": modalities.ModalityType.SYMBOL}
     """, "image_inputs",
     "ImageInputs.hparams sets modality {'inputs': 'image'}: custom modalities are not "
     "supported (t2t-lite's Transformer has t2t's SYMBOL modality only)."),
    ("""
     @registry.register_problem
     class Pieces(_Base):
       vocab_type = "pieces"
     """, "pieces",
     "Pieces.vocab_type is 'pieces': not a t2t VocabType (SUBWORD, CHARACTER or TOKEN)."),
]


@pytest.mark.parametrize("body, name, message", PROBLEM_REFUSALS,
                         ids=[name for _, name, _ in PROBLEM_REFUSALS])
def test_a_problem_the_layer_cannot_run_is_refused_when_used(isolated_registry, tmp_path,
                                                             capsys, body, name, message):
    import_module(tmp_path, body, """
        @registry.register_problem
        class StillFine(_Base):
          pass
        """)
    assert name in registry.list_problems()  # registered: the directory imports
    assert t2t_datagen.main([f"--t2t_usr_dir={tmp_path / 'refused_usr'}", f"--problem={name}",
                             f"--data_dir={tmp_path / 'data'}"]) == 1
    assert capsys.readouterr().err.endswith(f"t2t-datagen: error: {message}\n")
    # t2t's default dataset_splits: 100 train shards, 1 dev shard: 20 samples are all train.
    assert len(list(registry.problem("still_fine").raw_pairs("train", None))) == 20


HPARAMS_REFUSALS = [
    ("""
     from tensor2tensor.layers import common_hparams

     @registry.register_hparams
     def my_basic():
       hp = common_hparams.basic_params1()
       hp.num_hidden_layers = 2
       return hp
     """, "my_basic",
     "hparams set 'my_basic': common_hparams.basic_params1() is t2t's model-agnostic base, not "
     "a Transformer set t2t-lite knows: start from transformer.transformer_base() (or "
     "transformer_tiny, transformer_small, transformer_big, ...)."),
    ("""
     @registry.register_hparams
     def by_hand():
       return hparam.HParams(hidden_size=64)
     """, "by_hand",
     "hparams set 'by_hand' does not return t2t HParams built from a Transformer set t2t-lite "
     "knows (transformer.transformer_base(), transformer_tiny(), ...)."),
    ("""
     @registry.register_hparams
     def conv_ffn():
       hparams = transformer.transformer_base()
       hparams.ffn_layer = "conv_hidden_relu"
       return hparams
     """, "conv_ffn",
     "hparams set 'conv_ffn' (from t2t's transformer_base): t2t hparam "
     "ffn_layer='conv_hidden_relu' is not supported by t2t-lite's Transformer; this model "
     "cannot be imported."),
    ("""
     @registry.register_hparams
     def twice():
       hparams = transformer.transformer_tiny()
       hparams.add_hparam("filter_size", 2048)
       return hparams
     """, "twice",
     "hparams set 'twice': HParams.add_hparam('filter_size'): hparam name is already taken "
     "(it is 512); assign it instead."),
    ("""
     @registry.register_hparams
     def relative():
       return transformer.transformer_relative()
     """, "relative",
     "hparams set 'relative' failed: {usr}/refused.py:{line}: AttributeError: "
     "tensor2tensor.models.transformer.transformer_relative is not provided by t2t-lite's "
     "compatibility layer; it provides transformer_base, transformer_base_v1/v2/v3, "
     "transformer_big, transformer_tiny, transformer_small, transformer_base_single_gpu, "
     "transformer_big_single_gpu and transformer_big_enfr."),
]


@pytest.mark.parametrize("body, name, message", HPARAMS_REFUSALS,
                         ids=[name for _, name, _ in HPARAMS_REFUSALS])
def test_an_hparams_set_the_layer_cannot_map_is_refused_when_used(isolated_registry, tmp_path,
                                                                  body, name, message):
    usr = import_module(tmp_path, body)
    line = 1 + (HEADER + textwrap.dedent(body)).splitlines().index(
        "  return transformer.transformer_relative()")  if name == "relative" else 0
    with pytest.raises(T2TError) as raised:
        registry.hparams(name)
    assert str(raised.value) == message.format(usr=usr, line=line)


@pytest.mark.parametrize("call, message", [
    ("tf.contrib.training.HParams()",
     "tf.contrib is TensorFlow 1's and does not exist in TensorFlow 2.21; t2t-lite's "
     "tensor2tensor compatibility layer does not provide it."),
    ("tf.Session()",
     "tf.Session: TensorFlow 1 sessions are not supported by t2t-lite's tensor2tensor "
     "compatibility layer (its data code runs eagerly)."),
    ("tf.compat.v1.Session()",
     "tf.Session: TensorFlow 1 sessions are not supported by t2t-lite's tensor2tensor "
     "compatibility layer (its data code runs eagerly)."),
])
def test_tf1_calls_beyond_gfile_and_logging_are_refused(isolated_registry, tmp_path, call,
                                                        message):
    import_module(tmp_path, f"""
        @registry.register_problem
        class OldStyle(_Base):
          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            {call}
            yield {{"inputs": "a", "targets": "b"}}
        """)
    with pytest.raises(T2TError) as raised:
        list(registry.problem("old_style").raw_pairs("train", None))
    assert str(raised.value) == message
    import tensorflow
    assert not hasattr(tensorflow, "gfile")  # TensorFlow itself is left as it is


def test_a_tensor2tensor_module_not_provided_fails_the_import_in_one_line(
        isolated_registry, tmp_path):
    path = t2t_usr_dirs.write_usr_dir(tmp_path, "lstm_usr", {
        "models": "from tensor2tensor.models import lstm\n"})
    with pytest.raises(T2TError) as raised:
        usr_dir.import_usr_dir(str(path))
    assert str(raised.value).startswith(
        f"--usr_dir={path} failed to import: {path}/models.py:1: ModuleNotFoundError: No "
        "module named 'tensor2tensor.models.lstm': t2t-lite's tensor2tensor compatibility "
        "layer provides tensor2tensor.data_generators.problem, ")


def test_a_download_without_network_names_the_file_to_place(isolated_registry, tmp_path):
    import_module(tmp_path, """
        from tensor2tensor.data_generators import translate

        @registry.register_problem
        class TranslateFar(translate.TranslateProblem):
          def source_data_files(self, dataset_split):
            return [["http://127.0.0.1:9/far-corpus.tgz", ("far.xx", "far.yy")]]
        """)
    (tmp_path / "tmp").mkdir()
    with pytest.raises(T2TError) as raised:
        list(registry.problem("translate_far").raw_pairs("train", str(tmp_path / "tmp")))
    message = str(raised.value)
    assert message.startswith("Cannot download http://127.0.0.1:9/far-corpus.tgz (")
    assert message.endswith(f"): place far-corpus.tgz in {tmp_path / 'tmp'} and run again.")
    assert "\n" not in message


def test_a_tsv_line_with_fewer_columns_than_read_stops_in_one_line(isolated_registry,
                                                                   tmp_path):
    # t2t's compile_data stops at such a line with an IndexError; a shorter line
    # without a TAB is no row and is skipped, as t2t skips it.
    import_module(tmp_path, """
        from tensor2tensor.data_generators import translate

        @registry.register_problem
        class TranslateThirdColumn(translate.TranslateProblem):
          def source_data_files(self, dataset_split):
            return [["http://127.0.0.1:9/c.tgz", ("tsv", 0, 2, "c.tsv")]]
        """)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "c.tsv").write_text("1\ta\tb\nno tab\n2\tc\n")
    with pytest.raises(T2TError) as raised:
        list(registry.problem("translate_third_column").raw_pairs("train", str(tmp_path / "tmp")))
    assert str(raised.value) == (
        f"{tmp_path / 'tmp' / 'c.tsv'}, line 3: 2 TAB-separated columns, but columns 0 and 2 "
        "are read (tensor2tensor stops there with an IndexError).")


def test_changes_t2t_lite_has_no_setting_for_are_said_not_to_be_used(isolated_registry,
                                                                     tmp_path, notes):
    import_module(tmp_path, """
        @registry.register_hparams
        def adafactor_set():
          hparams = transformer.transformer_small()
          hparams.optimizer = "adafactor"
          hparams.weight_decay = 0.0  # t2t's value already
          hparams.add_hparam("my_extra", 3)
          return hparams
        """)
    hparams = registry.hparams("adafactor_set")
    assert (hparams.hidden_size, hparams.filter_size, hparams.num_hidden_layers) == (256, 1024, 2)
    assert notes[-1] == ("hparams set 'adafactor_set': t2t-lite has no setting for "
                         "my_extra=3, optimizer='adafactor'; not used.")


def test_a_set_built_from_another_by_registry_hparams(isolated_registry, tmp_path):
    import_module(tmp_path, """
        @registry.register_hparams
        def my_base():
          hparams = registry.hparams("transformer_tiny")
          hparams.num_heads = 2
          return hparams

        @registry.register_hparams
        def my_wide():
          hparams = registry.hparams("my_base")
          hparams.filter_size = 1024
          return hparams

        @registry.register_hparams
        def from_lite():
          return registry.hparams("transformer_multi30k")
        """)
    wide = registry.hparams("my_wide")
    assert (wide.hidden_size, wide.num_heads, wide.filter_size) == (128, 2, 1024)
    with pytest.raises(T2TError, match=r"^hparams set 'from_lite': registry.hparams\("
                                       r"'transformer_multi30k'\): not a t2t hparams set"):
        registry.hparams("from_lite")
