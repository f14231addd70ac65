"""Builds small, real model directories for decoder/averaging/export tests."""

import os

import sentencepiece as spm
import tensorflow as tf
from num2words import num2words

import t2t_lite
from t2t_lite import registry
from t2t_lite.data.vocab import train_sentencepiece
from t2t_lite import model_dir as model_dir_lib
from t2t_lite import model_dir_writer
from t2t_lite.data.layout import EOS_ID

PROBLEM = "translate_ende_numbers"  # a registered problem (decode defaults)


def number_sentences(count: int = 400):
    return [num2words(n * 37 % 100000) for n in range(count)]


def make_model_dir(path: str, steps=(1,), hparams_overrides: str = "hidden_size=32,filter_size=64",
                   vocab_size: int = 300, seed: int = 0, adjust=None) -> str:
    """A model dir with a real SentencePiece vocab and random weights saved at `steps`.

    Checkpoint `ckpt-s` holds the random weights + s (so averages are predictable).
    `adjust(model, vocab_file)`, if given, changes the random weights first.
    """
    os.makedirs(path, exist_ok=True)
    proto = train_sentencepiece(number_sentences(), vocab_size)
    vocab_file = os.path.join(path + ".vocab.model")
    with open(vocab_file, "wb") as f:
        f.write(proto)
    hp = registry.hparams("transformer_tiny").parse(hparams_overrides)
    tf.keras.utils.set_random_seed(seed)
    model = t2t_lite.build_model(hp, vocab_size)
    if adjust is not None:
        adjust(model, vocab_file)
    base = [v.numpy() for v in model.weights]
    model_dir_writer.prepare(path, hp, PROBLEM, vocab_file, vocab_size,
                             model_dir_writer.existing_run(path))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), path, max_to_keep=None)
    for step in steps:
        for variable, value in zip(model.weights, base):
            variable.assign(value + step)
        manager.save(checkpoint_number=step)
    for variable, value in zip(model.weights, base):
        variable.assign(value)
    return path


def load_model(path: str, checkpoint_path=None, checkpoint_average: int = 1,
               precision: str = "float32"):
    """(model, vocab) of the model directory `path`, as t2t-decoder loads them."""
    directory = model_dir_lib.ModelDir.open(path)
    model, _ = directory.load_model(checkpoint_path, checkpoint_average, precision)
    return model, directory.vocab()


def whole_words_only(model, vocab_file):
    """Zeroes the (tied) embedding of every piece but the word-initial ones, so that
    the random model writes several words (each piece starts one): "five five twenty"."""
    sp = spm.SentencePieceProcessor(model_file=vocab_file)
    rows = [i for i in range(EOS_ID + 2, sp.get_piece_size())
            if not sp.id_to_piece(i).startswith("\u2581") or sp.id_to_piece(i) == "\u2581"]
    table = model.target_embedding.weights_matrix
    value = table.numpy()
    value[rows] = 0
    table.assign(value)
