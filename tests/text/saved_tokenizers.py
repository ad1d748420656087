"""Saving a tokenizer in a SavedModel, for the tests that check what an
export carries (the vocabulary asset, the model resource)."""

import tensorflow as tf


def save_tokenize_function(tokenizer, export_dir):
    """Saves a `tf.Module` holding `tokenizer` with one function,
    `tokenize(strings)`: the ids with the end-of-document id appended,
    padded with -1."""
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda strings: tokenizer.tokenize(strings, add_end_of_document=True).to_tensor(-1),
        input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, export_dir)
