"""Assembling a training run from a problem's shards: what t2t-trainer does.

    result = train_problem(problem, "transformer_base", hparams, data_dir, output_dir,
                           TrainOptions(train_steps=1000), strategy)

`make_trainer` builds the parts the `Trainer` takes (model and optimizer in
the strategy's scope, the train and dev pipelines over the shards, a greedy
translator for dev metrics); `train_problem` adds the data (generated if
asked), the model directory, and the log line that starts a run.
"""

import contextlib
import os
from typing import Optional

import keras
import tensorflow as tf

import t2t_lite
from t2t_lite import model_dir, model_dir_writer
from t2t_lite.data import datagen, mixing
from t2t_lite.data.files_problem import FilesProblem
from t2t_lite.data.integrity import check_shards, data_loss_error
from t2t_lite.data.pipeline import make_dataset
from t2t_lite.data.vocab import SubwordVocab
from t2t_lite.decode.search import SearchParams, search_for_problem
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.metrics.bleu import language_tokenizer
from t2t_lite.train.evaluation import Evaluator, dev_dataset_fn
from t2t_lite.train.keras_internals import set_random_seed
from t2t_lite.train.schedule import make_optimizer
from t2t_lite.train.strategy import is_chief
from t2t_lite.train.trainer import Trainer, TrainOptions, TrainResult
from t2t_lite.train.warm_start import WarmStart
from t2t_lite.train import warm_start as warm_start_lib
from t2t_lite.training_lock import TrainingLock


def make_trainer(hparams: HParams, problem_name: str, data_dir: str, output_dir: str,
                 vocab_size: int, options: TrainOptions,
                 strategy: Optional[tf.distribute.Strategy] = None,
                 problem=None, vocab: Optional[SubwordVocab] = None,
                 train_mix: Optional[str] = None) -> Trainer:
    """A `Trainer` over the shards of `problem_name` in `data_dir`.

    Args:
      problem, vocab: the registered problem and its vocabulary, for greedy
        decoding metrics in dev evaluation (`Problem.dev_scores`); without
        them, dev evaluation reports loss, perplexity and accuracy only.
      train_mix: corpora and problems to draw training examples from, with
        weights (`t2t_lite.data.mixing`); None: every corpus of the problem by
        its share. Dev evaluation reads `problem_name`'s dev split either way.
    """
    sources = mixing.train_sources(data_dir, problem_name, train_mix)
    strategy = strategy or tf.distribute.get_strategy()
    set_random_seed(options.random_seed)  # before the weights are created
    with strategy.scope():
        model = t2t_lite.build_model(hparams, vocab_size)
        optimizer = make_optimizer(hparams, options.train_steps)
        if keras.config.dtype_policy().name == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)

    def train_dataset(input_context, seed):
        return make_dataset(data_dir, problem_name, "train", hparams.batch_size,
                            hparams.max_length, training=True, seed=seed,
                            input_context=input_context,
                            pad_to_bucket_boundary=options.jit_compile, sources=sources)

    dev_dataset = dev_dataset_fn(data_dir, problem_name, hparams)
    translator, dev_scores, notes = None, None, {}
    if problem is not None and vocab is not None:
        greedy = SearchParams.for_problem(problem, beam_size=1)
        translator = Translator(search_for_problem(model, problem, vocab, greedy), vocab)
        dev_scores = problem.dev_scores
        # The tokenizer `Problem.dev_scores` scores BLEU with, named in the eval line.
        notes = {"bleu": f"tok:{language_tokenizer(problem.target_language)}"}
    evaluator = Evaluator(model, hparams, dev_dataset, translator, dev_scores, notes)
    return Trainer(hparams, model, optimizer, train_dataset, output_dir, options, strategy,
                   evaluator)


def train_problem(problem, hparams_set: str, hparams: HParams, data_dir: str,
                  output_dir: str, options: TrainOptions,
                  strategy: Optional[tf.distribute.Strategy] = None,
                  generate_data: bool = False, tmp_dir: Optional[str] = None,
                  warm_start: Optional[WarmStart] = None,
                  train_mix: Optional[str] = None) -> TrainResult:
    """Trains `problem` with `hparams` into the model directory `output_dir`.

    Args:
      problem: a registered `Problem`.
      hparams_set: the set's name, for the log.
      generate_data: run datagen first (idempotent: reuses what a previous,
        maybe killed, run wrote); otherwise the train shards must exist. With
        `warm_start`, the data is encoded with its model's vocabulary.
      warm_start: fine-tune: start the weights from another model directory
        (`t2t_lite.train.warm_start`); used until `output_dir` has a checkpoint.
      train_mix: `NAME=WEIGHT,...`: draw training examples from these corpora
        of `problem` and other problems in `data_dir` (`t2t_lite.data.mixing`);
        recorded in `output_dir`, whose recorded mix a resumed run without it uses.

    Raises:
      T2TError: no training data, damaged shards, a model directory of another
        run, or another trainer running in it (`training_lock.TrainingLock`);
        a `warm_start` model the run's hparams or vocabulary do not fit; a
        `train_mix` that is malformed, names unknown corpora or problems, data
        of another vocabulary or missing shards, or differs from the one
        `output_dir` recorded.
    """
    if train_mix is not None:
        mixing.parse_mix(train_mix)  # a malformed mix: refused before anything is written
    strategy = strategy or tf.distribute.get_strategy()
    chief = is_chief(strategy)
    # The lock first: no other trainer can check or write the directory's metadata
    # between this one's check and its training (non-chief workers take none and
    # write no metadata: `model_dir_writer.prepare(write=False)`). A run refused below
    # leaves no directory it created.
    with _claimed(output_dir, chief):
        run = model_dir_writer.existing_run(output_dir)  # None: a new run
        # Reads output_dir only; the source is checked before any data is written.
        load_warm_start = bool(warm_start) and warm_start_lib.prepare(output_dir, run,
                                                                      warm_start)
        source = model_dir.ModelDir.open(warm_start.model_dir) if load_warm_start else None
        if load_warm_start:
            warm_start_lib.check_hparams(source, hparams)
        if generate_data:
            vocab_model = None
            if warm_start:  # a resumed fine-tuning run has its own copy of the source's
                vocab_model = source if load_warm_start else run
            datagen.generate_data(problem, data_dir, tmp_dir, vocab_model=(
                vocab_model.vocab_path if vocab_model else None),
                load_vocab=model_dir.load_vocab_file)
        elif not datagen.read_metadata(data_dir, problem.name).get("splits", {}).get("train"):
            raise T2TError(f"No training data for {problem.name} in {data_dir}; run "
                           "t2t-datagen first or pass --generate_data (and --tmp_dir).")
        meta = datagen.read_metadata(data_dir, problem.name)
        check_shards(data_dir, problem.name, meta, ["train", "dev"])  # sizes: a stat per file
        vocab_file = os.path.join(data_dir, meta["vocab_file"])
        vocab = model_dir.load_vocab_file(vocab_file)
        if load_warm_start:
            warm_start_lib.check_vocab(source, vocab_file)
        recorded = run.train_mix if run is not None else None
        mix = recorded if recorded is not None else train_mix
        sources = mixing.train_sources(data_dir, problem.name, mix)  # its errors: nothing written
        model_dir_writer.prepare(output_dir, hparams, problem.name, vocab_file, vocab.vocab_size,
                                 run, write=chief, train_mix=train_mix,
                                 definition=(problem.definition
                                             if isinstance(problem, FilesProblem) else None),
                                 hparams_set=hparams_set)
        defaults = (warm_start_lib.decode_defaults(source) if load_warm_start
                    else run.decode_defaults if run is not None else None)
        if defaults is not None:  # dev BLEU decodes as the model will (greedily)
            problem.search_defaults = dict(defaults)
        trainer = make_trainer(hparams, problem.name, data_dir, output_dir, vocab.vocab_size,
                               options, strategy, problem, vocab, train_mix=mix)
        if load_warm_start:
            paths = warm_start_lib.load(trainer.model, output_dir, warm_start, source)
            print(f"Weights from {', '.join(paths)} (fine-tuning: optimizer, step, "
                  "learning-rate schedule and data start fresh).", flush=True)
        drawn = mixing.describe(sources, problem.name, data_dir, mix)
        if drawn:
            print(drawn, flush=True)
        print(f"Training {problem.name} with {hparams_set} on "
              f"{trainer.strategy.num_replicas_in_sync} replica(s), {trainer.accumulate} "
              f"micro-batch(es) of {hparams.batch_size} tokens per replica per step, into "
              f"{output_dir}.", flush=True)
        try:
            return trainer.train()
        except tf.errors.DataLossError as e:  # a record corrupt in the middle of a shard
            raise data_loss_error(data_dir, problem.name, meta, e) from None


@contextlib.contextmanager
def _claimed(output_dir: str, chief: bool):
    """Creates `output_dir` if missing and holds its `TrainingLock` (on the chief:
    the workers of a multi-worker run share the directory). A directory this call
    created and that is still empty at the end (a run refused before writing) is
    removed again."""
    created = model_dir_writer.create(output_dir)
    try:
        with TrainingLock(output_dir) if chief else contextlib.nullcontext():
            yield
    finally:
        if created:
            with contextlib.suppress(OSError):  # not empty: the run wrote into it
                os.rmdir(output_dir)
