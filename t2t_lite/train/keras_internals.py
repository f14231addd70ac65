"""The two places where training reaches into Keras' private state, in one file.

Keras 3.15 has no public API for either; each helper says why it is needed.
When a Keras upgrade breaks one of them, this is the file to fix.
"""

import random

import keras
import numpy as np


def set_random_seed(seed: int) -> None:
    """Seeds Python, NumPy and Keras (weight initialisers, dropout) like
    `keras.utils.set_random_seed`, but without `tf.random.set_seed`.

    In eager mode `tf.random.set_seed` resets TensorFlow's kernel cache,
    which destroys the SentencePiece resources of every tokenizer created
    before it ("Resource ..._SentencepieceOp does not exist"). Nothing here
    needs TF's global seed: tf.data shuffles with explicit seeds, and Keras'
    initialisers and dropout draw from Keras' own seed generators, whose
    global seed only `keras.src` exposes.
    """
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator
    from keras.src.utils import rng_utils
    global_state.set_global_attribute(rng_utils.GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)


def dropout_seed_states(model: keras.Model) -> list:
    """The state variables of the seed generators of every layer of `model`.

    Keras keeps them out of `model.weights` and offers no public way to list
    nested layers' seed generators (`_flatten_layers`, `_seed_generators`);
    checkpointing them makes a resumed run draw the same dropout masks as an
    uninterrupted one.
    """
    return [generator.state for layer in model._flatten_layers()
            for generator in getattr(layer, "_seed_generators", [])]
