"""Runs t2t-trainer and SIGKILLs it at a chosen moment of its training.

    python tests/kill_trainer_at.py MOMENT N [--keep_bleu=S:B,...] [t2t-trainer flags...]

The kill is real (SIGKILL, sent by the process to itself, so nothing of the
trainer runs after it) and lands at a reproducible moment, the N-th one of
its kind in this process:

  step      the N-th training step: killed from a second thread once the step
            has started (a step writes nothing to disk, so what a kill during
            it leaves is what any moment of it leaves)
  merge     the N-th checkpoint of the model directory has its tensors written
            (`ckpt-S_temp/`) but not yet merged into ckpt-S.index and .data
  list      the N-th checkpoint is written in full, but the `checkpoint` file
            does not list it yet
  sweep     an old checkpoint is being deleted (--keep_checkpoint_max), for the
            N-th time: its .index is gone, its data files not yet
  evaluate  during the N-th evaluation, once the dev metrics are computed and
            before anything is logged or kept
  best      at the N-th file operation on the temporary directory in which the
            trainer writes `best/`, or on the one it moves the previous `best/`
            aside to (`t2t_lite.atomic.write_dir`; see tests/kill_at.py for what
            counts)
  none      never: the trainer runs to its end (with --keep_bleu, the run to
            compare a killed one with)

`--keep_bleu=S:B,...` makes the trainer keep `best/` as if evaluation at step
S had measured a dev BLEU of B (the metrics it logs are the measured ones), so
that a test can have `best/` replaced cheaply.

The places patched are TensorFlow's and t2t-lite's own functions on the path
of a save or an evaluation; the program otherwise runs unchanged
(`t2t_lite.bin.t2t_trainer`).
"""

import os
import signal
import sys
import threading

from kill_at import install as kill_at_file_operation


def kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def counting(n: int, what, applies=lambda *args, **kwargs: True):
    """`what` wrapped: the N-th call for which `applies` holds kills the process first."""
    seen = [0]

    def wrapper(*args, **kwargs):
        if applies(*args, **kwargs):
            seen[0] += 1
            if seen[0] == n:
                kill()
        return what(*args, **kwargs)
    return wrapper


def in_model_dir(output_dir: str):
    """Whether a checkpoint path argument lies in the model directory itself
    (not in best/ or an average, which write checkpoints too)."""
    model_dir = os.path.abspath(output_dir)
    return lambda path: os.path.dirname(os.path.abspath(os.fsdecode(path))) == model_dir


def install(moment: str, n: int, output_dir: str) -> None:
    from tensorflow.python.checkpoint import checkpoint_management, functional_saver
    from t2t_lite.train import trainer

    ours = in_model_dir(output_dir)
    if moment == "step":
        make_step = trainer.Trainer._make_train_step

        def make_killed_step(self):
            step = make_step(self)
            calls = [0]

            def killed_step(iterator):
                calls[0] += 1
                if calls[0] == n:
                    threading.Thread(target=kill, daemon=True).start()
                return step(iterator)
            return killed_step
        trainer.Trainer._make_train_step = make_killed_step
    elif moment == "merge":
        io_ops = functional_saver.gen_io_ops
        io_ops.merge_v2_checkpoints = counting(
            n, io_ops.merge_v2_checkpoints,
            lambda prefixes, prefix, **kw: ours(prefix.numpy()))
    elif moment == "list":
        checkpoint_management.update_checkpoint_state_internal = counting(
            n, checkpoint_management.update_checkpoint_state_internal,
            lambda save_dir, *a, **kw: ours(os.path.join(save_dir, "x")))
    elif moment == "sweep":
        checkpoint_management._delete_file_if_exists = counting(
            n, checkpoint_management._delete_file_if_exists,
            lambda pattern: ".data-" in pattern and ours(pattern))
    elif moment == "evaluate":
        from t2t_lite.train import evaluation
        evaluate = evaluation.Evaluator.__call__

        def killed_evaluation(self, *args, **kwargs):
            metrics = evaluate(self, *args, **kwargs)
            killed_evaluation.calls += 1
            if killed_evaluation.calls == n:
                kill()
            return metrics
        killed_evaluation.calls = 0
        evaluation.Evaluator.__call__ = killed_evaluation
    elif moment == "best":
        kill_at_file_operation(".best.tmp-best-,.best.replaced-", n)
    elif moment != "none":
        raise SystemExit(f"kill_trainer_at.py: unknown moment {moment!r}")


def keep_bleu(scores: str) -> None:
    """Has the trainer keep `best/` by the dev BLEU `scores` = "S:B,..." gives step S."""
    from t2t_lite.train import trainer

    bleu_at = {int(s): float(b) for s, b in (pair.split(":") for pair in scores.split(","))}
    keep = trainer.Trainer._keep_if_best
    trainer.Trainer._keep_if_best = lambda self, bleu: keep(self, bleu_at[self.step])


def main() -> None:
    moment, n, *argv = sys.argv[1:]
    if argv and argv[0].startswith("--keep_bleu="):
        keep_bleu(argv.pop(0).split("=", 1)[1])
    output_dir = next(a.split("=", 1)[1] for a in argv if a.startswith("--output_dir="))
    install(moment, int(n), output_dir)
    from t2t_lite.bin import t2t_trainer
    sys.exit(t2t_trainer.main(argv))


if __name__ == "__main__":
    main()
