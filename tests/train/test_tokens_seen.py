"""Tokens trained on: counted per step, kept in checkpoints, added up across resumes."""

import numpy as np

from t2t_lite import registry

VOCAB = 30


def fixed_batches():
    """Three padded batches of different shapes (id 0 = padding), cycled in this order."""
    rng = np.random.RandomState(3)
    batches = []
    for rows, source_len, target_len in ((4, 6, 5), (2, 3, 7), (3, 8, 8)):
        inputs = rng.randint(3, VOCAB, size=(rows, source_len)).astype("int32")
        targets = rng.randint(3, VOCAB, size=(rows, target_len)).astype("int32")
        inputs[0, -2:] = 0
        targets[-1, -3:] = 0  # 3 padding positions in the last row
        batches.append({"inputs": inputs, "targets": targets})
    return batches


def expected_counts(num_batches, first=0):
    """The counts written out from the batches themselves, batch i = batches[i % 3]."""
    batches = fixed_batches()
    padded = padded_targets = real = 0
    for i in range(first, first + num_batches):
        b = batches[i % 3]
        rows, s, t = b["inputs"].shape[0], b["inputs"].shape[1], b["targets"].shape[1]
        padded += rows * max(s, t)
        padded_targets += rows * t
        real += int(np.count_nonzero(b["targets"]))
    return {"padded": padded, "padded_targets": padded_targets, "targets": real}


def make_trainer(output_dir, steps, tokens_per_step=0):
    import tensorflow as tf

    import t2t_lite
    from t2t_lite.train.schedule import make_optimizer
    from t2t_lite.train.trainer import Trainer, TrainOptions
    batches = fixed_batches()

    def dataset_fn(input_context, seed):
        dataset = tf.data.Dataset.from_tensors(batches[0])
        for batch in batches[1:]:
            dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch))
        return dataset.repeat()

    # batch_size=16 with tokens_per_step=32: two micro-batches per step.
    hp = registry.hparams("transformer_tiny").parse(
        f"hidden_size=16,filter_size=32,num_heads=2,batch_size=16,"
        f"tokens_per_step={tokens_per_step}")
    options = TrainOptions(train_steps=steps, eval_every=0, log_every=1000,
                           save_checkpoints_steps=0, save_checkpoints_secs=0)
    return Trainer(hp, t2t_lite.build_model(hp, VOCAB), make_optimizer(hp), dataset_fn,
                   str(output_dir), options)


def test_counts_add_up_per_step_and_across_a_resume(tmp_path):
    from t2t_lite.train import tokens_seen
    first = make_trainer(tmp_path / "m", 2).train()
    assert first.tokens == expected_counts(2) and first.tokens_from == 0
    # The first two batches: 4 x 6 + 2 x 7 padded, 4 x 5 + 2 x 7 target positions, 3
    # padding positions in the last row of each.
    assert first.tokens == {"padded": 38, "padded_targets": 34, "targets": 28}
    resumed = make_trainer(tmp_path / "m", 5).train()
    assert resumed.step == 5 and resumed.tokens == expected_counts(5)
    assert tokens_seen.read(str(tmp_path / "m" / "ckpt-5")) == dict(expected_counts(5),
                                                                   from_step=0)
    assert tokens_seen.read(str(tmp_path / "m" / "ckpt-2")) == dict(expected_counts(2),
                                                                   from_step=0)


def test_a_checkpoint_without_counts_starts_them_at_its_step_for_good(tmp_path, monkeypatch,
                                                                     capfd):
    from t2t_lite.train import tokens_seen
    # A checkpoint written before t2t-lite counted tokens: no "tokens_seen" in it.
    monkeypatch.setattr(tokens_seen, "CHECKPOINT_KEY", "not_the_counter")
    monkeypatch.setattr(tokens_seen, "START_STEP_KEY", "not_the_start")
    make_trainer(tmp_path / "m", 2).train()
    monkeypatch.undo()
    assert tokens_seen.read(str(tmp_path / "m" / "ckpt-2")) is None
    # Micro-batches of 16 tokens in steps of 32: two batches a step, batches 2-3 in step 3.
    result = make_trainer(tmp_path / "m", 3, tokens_per_step=32).train()
    assert result.tokens_from == 2 and result.tokens == expected_counts(2, first=2)
    assert "Tokens seen are counted from step 2: " in capfd.readouterr().out
    # Resumed again, from a checkpoint with counts: they still start at step 2.
    result = make_trainer(tmp_path / "m", 4, tokens_per_step=32).train()
    assert result.tokens_from == 2 and result.tokens == expected_counts(4, first=2)
    assert tokens_seen.read(str(tmp_path / "m" / "ckpt-4")) == dict(
        expected_counts(4, first=2), from_step=2)
    assert "Tokens seen are counted from" not in capfd.readouterr().out


def test_describe_names_each_count():
    from t2t_lite.train import tokens_seen
    text = tokens_seen.describe({"padded": 65_536_000, "padded_targets": 49_000_000,
                                 "targets": 41_000_123})
    assert text == ("65,536,000 padded tokens (batch_size's unit), 49,000,000 padded / "
                    "41,000,123 real target tokens")
    assert tokens_seen.describe({"padded": 3, "padded_targets": 2, "targets": 1,
                                 "from_step": 1454}).endswith(" 1 real target tokens since "
                                                              "step 1454")
