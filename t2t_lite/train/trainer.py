"""The training loop: strategy, gradient accumulation, checkpoints, resume, evaluation.

    trainer = Trainer(hparams, model, optimizer, dataset_fn, output_dir, options,
                      strategy, evaluator)
    result = trainer.train()

`t2t_lite.train.experiment` builds these parts from a problem's shards.

The loss of an optimizer step is the label-smoothed cross-entropy summed over
every real target token of the step (all replicas, all accumulated
micro-batches) divided by their number, so results do not depend on how
the batch is split. Checkpoints hold the model, the optimizer (with its step
counter) and the position in the input pipeline, so a killed run resumes
exactly where its last checkpoint was written.
"""

import functools
import math
import os
import shutil
import signal
import time
from typing import Callable, Dict, Optional

import keras
import tensorflow as tf

from t2t_lite import best_dir, model_dir
from t2t_lite.data.pipeline import without_autotune_thread
from t2t_lite.errors import T2TError
from t2t_lite.hparams_lib import HParams
from t2t_lite.train.evaluation import metrics_line
from t2t_lite.train.keras_internals import dropout_seed_states
from t2t_lite.train import tokens_seen
from t2t_lite.train.step import apply_global_mean, replica_gradients
from t2t_lite.train.options import (  # noqa: F401  (TrainOptions: callers import it from here)
    TrainOptions, TrainResult, accumulation_steps)
from t2t_lite.train.strategy import LOST_PEER_ERRORS, is_chief, is_multi_worker, lost_workers

# `(input_context, seed) -> tf.data.Dataset` of {"inputs", "targets"} batches for
# one input pipeline (one per worker; see `tf.distribute.InputContext`).
DatasetFn = Callable[[tf.distribute.InputContext, int], tf.data.Dataset]


class Trainer:
    """Trains `model` with `optimizer` on `dataset_fn`'s batches, checkpointing in `output_dir`.

    Args:
      hparams: what is trained (label smoothing, batch and step sizes).
      model, optimizer: built inside `strategy.scope()`.
      dataset_fn: the training batches (`DatasetFn`); called with the seed
        `options.random_seed` (+ the resumed step on several replicas).
      output_dir: the model directory (`t2t_lite.model_dir`): checkpoints,
        TensorBoard events, `best/`.
      options: how to run (`TrainOptions`).
      strategy: the `tf.distribute` strategy (default: the current one).
      evaluator: dev metrics (`evaluation.Evaluator`); None: no evaluation.
    """

    def __init__(self, hparams: HParams, model: keras.Model, optimizer, dataset_fn: DatasetFn,
                 output_dir: str, options: TrainOptions,
                 strategy: Optional[tf.distribute.Strategy] = None,
                 evaluator: Optional[Callable[..., Dict[str, float]]] = None):
        self.hp = hparams
        self.model = model
        self.optimizer = optimizer
        self.output_dir = output_dir
        self.options = options
        self.strategy = strategy or tf.distribute.get_strategy()
        self.chief = is_chief(self.strategy)
        self.train_steps = options.train_steps or hparams.train_steps
        self.accumulate = accumulation_steps(hparams, self.strategy.num_replicas_in_sync)
        self.evaluator = evaluator
        self._signal = None
        self._saved_step: Optional[int] = None  # the step of the last checkpoint written or read
        self._completed_step = 0  # the last step this process finished (restored or trained)

        with self.strategy.scope():
            self.optimizer.build(self.model.trainable_variables)
            if self.accumulate > 1:
                self.accumulators = [
                    tf.Variable(tf.zeros_like(v), trainable=False,
                                synchronization=tf.VariableSynchronization.ON_READ,
                                aggregation=tf.VariableAggregation.SUM)
                    for v in self.model.trainable_variables]
                self.accumulated_tokens = tf.Variable(
                    0.0, trainable=False, synchronization=tf.VariableSynchronization.ON_READ,
                    aggregation=tf.VariableAggregation.SUM)
        self._dataset_fn = dataset_fn
        # Input batches read so far (iterator calls; an optimizer step reads
        # `accumulate`); checkpointed where the iterator itself cannot be.
        self.batches_read = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches_read")
        # Tokens trained on since step 0 (`tokens_seen`), checkpointed so resumes add up.
        self.tokens_seen = tokens_seen.new_counter()
        # The step the counts start at: > 0 once resumed from a checkpoint without counts.
        self.tokens_counted_from = tokens_seen.new_start_step()
        self.dataset = self._distributed_dataset(0)
        self.iterator = iter(self.dataset)
        state = dict(model=self.model, optimizer=self.optimizer,
                     dropout_seeds=dropout_seed_states(self.model))
        state[tokens_seen.CHECKPOINT_KEY] = self.tokens_seen
        state[tokens_seen.START_STEP_KEY] = self.tokens_counted_from
        # A single-device iterator is a checkpointable tf.data.Iterator (shuffle
        # buffer included), so a resumed run continues with the same batches.
        # tf.distribute's multi-replica iterators are not: a resumed run rebuilds
        # the same seeded pipeline and skips the batches already read instead.
        self.exact_data_resume = isinstance(self.iterator, tf.data.Iterator)
        if self.exact_data_resume:
            state["data"] = self.iterator
        else:
            state["batches_read"] = self.batches_read
        self.checkpoint = tf.train.Checkpoint(**state)
        # Saving is collective: every worker writes, the chief into the model
        # directory, the others into a scratch directory removed after each save
        # (TensorFlow's multi-worker pattern). All of them restore the chief's.
        directory = output_dir if self.chief else os.path.join(
            output_dir, f"tmp_worker_{self.strategy.cluster_resolver.task_id}")
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory,
                                                  max_to_keep=options.keep_checkpoint_max or None)
        self._train_step = self._make_train_step()
        self._writers = {
            name: (tf.summary.create_file_writer(os.path.join(output_dir, name)) if self.chief
                   else tf.summary.create_noop_writer())
            for name in ("train", "eval")}

    # -- The compiled step ----------------------------------------------------

    def _make_train_step(self):
        model, optimizer, hp = self.model, self.optimizer, self.hp
        strategy = self.strategy
        gradients = tf.function(functools.partial(replica_gradients, model, optimizer, hp),
                                jit_compile=self.options.jit_compile, autograph=False)

        # Autograph converts only `train_step`'s own loop: the functions it runs per
        # replica are plain TensorFlow, and converting them (and the model and
        # optimizer code they call) costs seconds of start-up in every process.
        @tf.autograph.experimental.do_not_convert
        def single(batch):
            loss_sum, tokens, grads = gradients(batch)
            apply_global_mean(model, optimizer, grads, tokens, hp.clip_grad_norm)
            return loss_sum, tokens, tokens_seen.batch_counts(batch, tokens)

        @tf.autograph.experimental.do_not_convert
        def accumulate(batch):
            loss_sum, tokens, grads = gradients(batch)
            for acc, g in zip(self.accumulators, grads):
                acc.assign_add(g)
            self.accumulated_tokens.assign_add(tokens)
            return loss_sum, tokens, tokens_seen.batch_counts(batch, tokens)

        @tf.autograph.experimental.do_not_convert
        def apply_accumulated():
            # The accumulated gradient is applied (and clipped) once per step.
            apply_global_mean(model, optimizer, [a.read_value() for a in self.accumulators],
                              self.accumulated_tokens.read_value(), hp.clip_grad_norm)
            for acc in self.accumulators:
                acc.assign(tf.zeros_like(acc))
            self.accumulated_tokens.assign(0.0)

        @tf.function
        def train_step(iterator):
            total_loss, total_tokens = tf.constant(0.0), tf.constant(0.0)
            counts = tf.zeros([len(tokens_seen.NAMES)], tf.int64)
            if self.accumulate == 1:
                per_replica = strategy.run(single, args=(next(iterator),))
                total_loss = strategy.reduce("sum", per_replica[0], axis=None)
                total_tokens = strategy.reduce("sum", per_replica[1], axis=None)
                counts = strategy.reduce("sum", per_replica[2], axis=None)
            else:
                for _ in tf.range(self.accumulate):
                    per_replica = strategy.run(accumulate, args=(next(iterator),))
                    total_loss += strategy.reduce("sum", per_replica[0], axis=None)
                    total_tokens += strategy.reduce("sum", per_replica[1], axis=None)
                    counts += strategy.reduce("sum", per_replica[2], axis=None)
                strategy.run(apply_accumulated)
            self.batches_read.assign_add(self.accumulate)  # in the graph, not per step in Python
            self.tokens_seen.assign_add(counts)
            return total_loss / tf.maximum(total_tokens, 1.0), total_tokens

        return train_step

    # -- The loop ---------------------------------------------------------------

    @property
    def step(self) -> int:
        return int(self.optimizer.iterations.numpy())

    def _on_signal(self, signum, frame):
        self._signal = signum

    def _save(self) -> None:
        """Saves a checkpoint of this step unless one was saved or restored at it:
        TensorFlow rewrites `ckpt-N.index` in place, so saving the same step again
        would show a reader of that listed checkpoint a half-written index."""
        if self.step == self._saved_step:
            return  # on every worker alike: saving is collective
        self.manager.save(checkpoint_number=self.step)
        self._saved_step = self.step
        if not self.chief:
            shutil.rmtree(self.manager.directory, ignore_errors=True)

    def _distributed_dataset(self, skip: int):
        """The distributed training batches, after the first `skip` iterator calls.

        Each input pipeline (one per worker) feeds its replicas in turn, so one
        iterator call takes num_replicas / num_pipelines of its batches. The
        pipeline is deterministic for a seed, so skipping lands exactly where
        an uninterrupted run would be.
        """
        seed = self.options.random_seed

        def per_pipeline(input_context):
            replicas = input_context.num_replicas_in_sync // input_context.num_input_pipelines
            # Whatever the dataset function built: its iterators, kept until the
            # trainer is dropped, must not wait for an autotune thread then.
            return (self._dataset_fn(input_context, seed).skip(skip * replicas)
                    .with_options(without_autotune_thread()))

        return self.strategy.distribute_datasets_from_function(per_pipeline)

    def _restore(self) -> Optional[str]:
        """Restores the latest checkpoint of the model directory (the chief's, on
        every worker); returns its path, or None for a new run."""
        latest = tf.train.latest_checkpoint(self.output_dir)
        if latest:
            self.checkpoint.restore(latest)
            self._saved_step = self.step
            if tokens_seen.read(latest) is None:  # written before t2t-lite counted tokens
                self.tokens_counted_from.assign(self.step)
            if not self.exact_data_resume and int(self.batches_read.numpy()):
                self.dataset = self._distributed_dataset(int(self.batches_read.numpy()))
                self.iterator = iter(self.dataset)
        return latest

    def train(self) -> TrainResult:
        """Trains until `train_steps`, a signal, a NaN loss, early stopping or the time limit.

        The time limit (`max_train_minutes`) counts from the start of this
        call, so a resumed run gets the full limit again.

        Raises:
          T2TError: the loss became NaN or infinite; in a multi-worker run,
            another worker was lost (killed, its machine gone): every worker
            stops, and the same commands started again resume.
        """
        restored = self._restore()
        if self.chief:  # best/'s writer: finish a replacement of it a kill cut short
            best_dir.recover_best(self.output_dir)
        self._completed_step = self.step
        if restored:
            print(f"Resumed from {restored} at step {self.step}.", flush=True)
            counted_from = int(self.tokens_counted_from.numpy())
            if counted_from == self.step and counted_from and self.chief:
                print(f"Tokens seen are counted from step {counted_from}: "
                      f"{restored} has no count of the steps before it.", flush=True)
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            return self._loop()
        except LOST_PEER_ERRORS as e:
            if not is_multi_worker(self.strategy):
                raise
            # Collectives cannot continue without every worker: stop, and say how to resume.
            latest = tf.train.latest_checkpoint(self.output_dir) or "none yet"
            raise T2TError(
                f"A worker was lost after step {self._completed_step} ({lost_workers(e)}); "
                "stopping. "
                f"Last complete checkpoint: {latest}. Start the same command on every worker "
                "again to resume from it.") from None
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _loop(self) -> TrainResult:
        opts = self.options
        writer = self._writers["train"]
        start_step, start_time = self.step, time.time()
        last_save_time, window_time, window_tokens = start_time, start_time, 0.0
        loss, metrics, best, bad_evals = float("nan"), {}, None, 0
        while self.step < self.train_steps:
            loss_t, tokens_t = self._train_step(self.iterator)
            loss, step = float(loss_t), self.step
            self._completed_step = step
            window_tokens += float(tokens_t)
            if not math.isfinite(loss):
                latest = self.manager.latest_checkpoint or "none yet"
                raise T2TError(f"Loss became {loss} at step {step}; stopping without saving. "
                               f"Last good checkpoint: {latest}. Try a lower learning rate "
                               "(learning_rate_constant or learning_rate, whichever "
                               "learning_rate_schedule uses) or clip_grad_norm.")
            if (opts.log_every and step % opts.log_every == 0) or step == self.train_steps:
                now = time.time()
                rate = window_tokens / max(now - window_time, 1e-9)
                lr = float(self.optimizer.learning_rate)
                eta = (now - start_time) / max(step - start_step, 1) * (self.train_steps - step)
                print(f"step {step}/{self.train_steps}  loss {loss:.4f}  lr {lr:.3g}  "
                      f"{rate:.0f} tgt tok/s  elapsed {now - start_time:.0f}s  ETA {eta:.0f}s",
                      flush=True)
                with writer.as_default(step=step):
                    tf.summary.scalar("loss", loss)
                    tf.summary.scalar("learning_rate", lr)
                    tf.summary.scalar("target_tokens_per_second", rate)
                    for name, count in zip(tokens_seen.NAMES, self.tokens_seen.numpy()):
                        tf.summary.scalar(f"tokens_seen/{name}", count)
                window_time, window_tokens = now, 0.0
            if ((opts.save_checkpoints_steps and step % opts.save_checkpoints_steps == 0) or
                    (opts.save_checkpoints_secs and
                     time.time() - last_save_time >= opts.save_checkpoints_secs)):
                self._save()
                last_save_time = time.time()
            if self._signal is not None:
                self._save()
                print(f"Stopped by signal {self._signal} at step {step}; checkpoint saved in "
                      f"{self.output_dir}. Run the same command again to resume.", flush=True)
                return self._result(loss, True, metrics)
            if opts.eval_every and step % opts.eval_every == 0 and step < self.train_steps:
                metrics = self.evaluate()
                window_time, window_tokens = time.time(), 0.0  # tokens/s excludes evaluation
                if opts.early_stopping_patience:
                    if best is None or metrics["loss"] < best:
                        best, bad_evals = metrics["loss"], 0
                    else:
                        bad_evals += 1
                    if bad_evals >= opts.early_stopping_patience:
                        print(f"Early stopping at step {step}: dev loss has not improved in "
                              f"{bad_evals} evaluations.", flush=True)
                        break
            if opts.max_train_minutes and time.time() - start_time >= 60 * opts.max_train_minutes:
                print(f"Time limit of {opts.max_train_minutes:g} minutes reached at step {step}.",
                      flush=True)
                break
        self._save()
        if self.evaluator is not None:
            print(f"Final evaluation at step {self.step} on the dev split.", flush=True)
        metrics = self.evaluate()
        return self._result(loss, False, metrics)

    def _result(self, loss: float, interrupted: bool, metrics: Dict[str, float]) -> TrainResult:
        counts = dict(zip(tokens_seen.NAMES, (int(v) for v in self.tokens_seen.numpy())))
        return TrainResult(self.step, loss, interrupted, metrics, counts,
                           int(self.tokens_counted_from.numpy()))

    def evaluate(self) -> Dict[str, float]:
        """Dev loss, perplexity, accuracy and the problem's decoding metrics; logged.
        Without an evaluator: {}."""
        if self.evaluator is None:
            return {}
        metrics = self.evaluator(self.options.eval_steps, self.options.eval_bleu_sentences)
        writer = self._writers["eval"]
        with writer.as_default(step=self.step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        writer.flush()
        if self.chief and "bleu" in metrics:
            self._keep_if_best(metrics["bleu"])
        notes = getattr(self.evaluator, "notes", None)  # an `Evaluator`'s, e.g. BLEU's tokenizer
        print(f"eval step {self.step}: {metrics_line(metrics, notes)}", flush=True)
        return metrics

    def _keep_if_best(self, bleu: float) -> None:
        """Keeps the weights of the best dev BLEU so far in `output_dir/best`.

        `best/` is a weights-only model directory (`best_dir.write_best`,
        replaced as a whole), so `t2t-decoder --output_dir=M/best` decodes with it.
        """
        if not os.path.exists(os.path.join(self.output_dir, model_dir.HPARAMS_FILE)):
            return  # not a model directory written by model_dir_writer.prepare
        best = best_dir.read_best(self.output_dir)
        if best is None or bleu > best["bleu"]:
            best_dir.write_best(self.output_dir, self.model, self.step, bleu)
