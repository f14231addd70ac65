"""tensor2tensor's own test_data/example_usr_dir, in its shape: it imports and registers;
its datagen (the gutenberg package and a download) and its hparams set (from
basic_params1) are refused in one line each."""

import textwrap

from t2t_lite import registry, usr_dir
from t2t_lite.bin import t2t_datagen, t2t_trainer

import t2t_usr_dirs
from registry_isolation import isolated_registry  # noqa: F401  (fixtures)

# Written for this test after the shape of t2t's example: an hparams set from the
# basic parameters, and a problem pairing consecutive lines of two Gutenberg books.
MY_SUBMODULE = textwrap.dedent('''\
    """Example registrations for T2T."""
    import re

    from tensor2tensor.data_generators import problem
    from tensor2tensor.data_generators import text_problems
    from tensor2tensor.layers import common_hparams
    from tensor2tensor.utils import registry


    @registry.register_hparams
    def my_very_own_hparams():
      hp = common_hparams.basic_params1()
      hp.num_hidden_layers = 2
      hp.add_hparam("filter_size", 2048)
      return hp


    @registry.register_problem
    class PoetryLines(text_problems.Text2TextProblem):
      """The next line of a poem from the previous one (Project Gutenberg)."""

      @property
      def approx_vocab_size(self):
        return 2**13

      @property
      def is_generate_per_split(self):
        return False

      @property
      def dataset_splits(self):
        return [{"split": problem.DatasetSplit.TRAIN, "shards": 9},
                {"split": problem.DatasetSplit.EVAL, "shards": 1}]

      def generate_samples(self, data_dir, tmp_dir, dataset_split):
        del data_dir, tmp_dir, dataset_split
        from gutenberg import acquire
        from gutenberg import cleanup
        for book_id in (19221, 15553):
          text = cleanup.strip_headers(acquire.load_etext(book_id)).strip()
          previous = None
          for line in text.split("\\n"):
            line = re.sub("[^a-z]+", " ", line.strip().lower())
            if previous and line:
              yield {"inputs": previous, "targets": line}
            previous = line
''')


def test_t2t_example_usr_dir_registers_and_refuses_its_two_parts(isolated_registry, tmp_path,
                                                                capsys):
    usr = t2t_usr_dirs.write_usr_dir(tmp_path, "example_usr_dir",
                                     {"my_submodule": MY_SUBMODULE})
    (usr / "requirements.txt").write_text("gutenberg\n")
    usr_dir.import_usr_dir(str(usr))
    assert registry.problem_origin("poetry_lines") == str(usr)
    assert registry.hparams_origin("my_very_own_hparams") == str(usr)
    capsys.readouterr()

    assert t2t_datagen.main([f"--t2t_usr_dir={usr}", "--problem=poetry_lines",
                             f"--data_dir={tmp_path / 'data'}",
                             f"--tmp_dir={tmp_path / 'tmp'}"]) == 1
    line = MY_SUBMODULE.splitlines().index("    from gutenberg import acquire") + 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"t2t-datagen: error: PoetryLines.generate_samples('train') failed: "
        f"{usr}/my_submodule.py:{line}: ModuleNotFoundError: No module named 'gutenberg'")

    assert t2t_trainer.main([f"--t2t_usr_dir={usr}", "--problem=poetry_lines",
                             f"--data_dir={tmp_path / 'data'}",
                             "--hparams_set=my_very_own_hparams",
                             f"--output_dir={tmp_path / 'model'}"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "t2t-trainer: error: hparams set 'my_very_own_hparams': common_hparams.basic_params1() "
        "is t2t's model-agnostic base, not a Transformer set t2t-lite knows: start from "
        "transformer.transformer_base() (or transformer_tiny, transformer_small, "
        "transformer_big, ...).")
