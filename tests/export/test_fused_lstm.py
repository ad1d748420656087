"""`tfnlp.export.fused_lstm`: the fused LSTM kernel gives what Keras' LSTM
layers give, on rows of any length."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfnlp.export import WordClassifierSignatures
from tfnlp.export.fused_lstm import can_fuse, fusable, fused_logits, recurrent_layer
from tfnlp.layers import LSTMEncoder
from tfnlp.models import BiLSTMClassifier
from tfnlp.text import WordTokenizer, write_word_vocabulary

# Rows of 6, 3, 1 and 0 tokens, padded at the end.
TOKEN_IDS = np.array([[4, 9, 2, 7, 7, 3], [5, 1, 8, 0, 0, 0], [6, 0, 0, 0, 0, 0],
                      [0, 0, 0, 0, 0, 0]], np.int32)


@pytest.mark.parametrize("pooling", ["final", "max"])
def test_fused_logits_are_the_models(pooling):
    keras.utils.set_random_seed(1)
    model = BiLSTMClassifier(vocabulary_size=10, num_classes=3, embedding_dim=8, lstm_units=5,
                             hidden_dim=6, pooling=pooling)
    # Weights far from their initial scale, so a wrong gate or step shows.
    for variable in model.weights:
        variable.assign(np.random.default_rng(0).normal(0, 0.5, variable.shape))
    assert fusable(model)
    np.testing.assert_allclose(fused_logits(model, tf.constant(TOKEN_IDS)),
                               model(TOKEN_IDS, training=False), atol=1e-5)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_each_layer_of_an_lstm_encoder_gives_its_outputs_and_final_states(bidirectional):
    keras.utils.set_random_seed(2)
    encoder = LSTMEncoder(4, num_layers=2, bidirectional=bidirectional)
    inputs = np.random.default_rng(1).normal(size=(4, 6, 3)).astype("float32")
    mask = TOKEN_IDS != 0
    expected = encoder(inputs, mask=mask, training=False)
    sequences, lengths = tf.constant(inputs), tf.constant(mask.sum(axis=1), tf.int32)
    for index, layer in enumerate(encoder.recurrent_layers):
        sequences, final_hidden = recurrent_layer(layer, sequences, lengths)
        np.testing.assert_allclose(sequences, expected["layer_outputs"][index], atol=1e-5)
        np.testing.assert_allclose(final_hidden, expected["final_states"][index][0], atol=1e-5)


def test_only_lstms_of_the_kernels_activations_are_fused():
    assert can_fuse(keras.layers.LSTM(3))
    assert not can_fuse(keras.layers.LSTM(3, activation="relu"))
    assert not can_fuse(keras.layers.LSTM(3, use_bias=False))
    assert not fusable(keras.Sequential([keras.layers.Dense(2)]))


def graph_op_types(concrete_function):
    graph = concrete_function.graph.as_graph_def()
    return ({node.op for node in graph.node}
            | {node.op for function in graph.library.function for node in function.node_def})


def test_the_export_runs_one_text_on_the_fused_kernel_and_a_batch_on_keras_layers(tmp_path):
    keras.utils.set_random_seed(3)
    vocabulary = tmp_path / "words.txt"
    write_word_vocabulary(["a", "fine", "dull", "film"], str(vocabulary))
    tokenizer = WordTokenizer(str(vocabulary))
    model = BiLSTMClassifier.from_preset("tiny", vocabulary_size=tokenizer.vocabulary_size,
                                         num_classes=2)
    signatures = WordClassifierSignatures(model, tokenizer)
    assert "BlockLSTMV2" in graph_op_types(signatures.signatures()["classify_ids"])
    texts = ["a fine film", "dull", "a dull , dull film"]
    together = signatures.classify_text(tf.constant(texts))["logits"]
    np.testing.assert_allclose(together, model(tokenizer(tf.constant(texts))), atol=1e-6)
    for index, text in enumerate(texts):
        alone = signatures.classify_text(tf.constant([text]))["logits"]
        np.testing.assert_allclose(alone[0], together[index], atol=1e-5)
