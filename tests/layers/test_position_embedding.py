import keras
import numpy as np
import pytest

from tests.layer_test_helpers import check_layer, random_inputs
from tfnlp.layers.position_embedding import PositionEmbedding


def test_shared_layer_checks():
    layer = PositionEmbedding(sequence_length=8)
    check_layer(
        layer,
        {"inputs": random_inputs((2, 5, 6))},
        expected_output_shape=(2, 5, 6),
    )


def test_weight_is_named_embeddings_with_shape_sequence_length_by_hidden_dim():
    layer = PositionEmbedding(sequence_length=12)
    layer(np.zeros((2, 5, 6), "float32"))
    assert len(layer.weights) == 1
    assert len(layer.trainable_weights) == 1
    assert layer.embeddings.name == "embeddings"
    assert tuple(layer.embeddings.shape) == (12, 6)


def test_returns_first_rows_of_the_table_for_every_batch_element():
    layer = PositionEmbedding(sequence_length=10)
    layer.build((None, 4, 3))
    table = random_inputs((10, 3), seed=3)
    layer.set_weights([table])
    outputs = np.asarray(layer(random_inputs((2, 4, 3), seed=4)))
    assert outputs.shape == (2, 4, 3)
    for batch_index in range(2):
        np.testing.assert_array_equal(outputs[batch_index], table[:4])


def test_full_length_sequence_uses_the_whole_table():
    layer = PositionEmbedding(sequence_length=6)
    layer.build((None, 6, 3))
    table = random_inputs((6, 3), seed=5)
    layer.set_weights([table])
    outputs = np.asarray(layer(np.zeros((1, 6, 3), "float32")))
    np.testing.assert_array_equal(outputs[0], table)


@pytest.mark.parametrize("start_index", [0, 1, 6])
def test_start_index_gives_rows_of_the_full_table(start_index):
    layer = PositionEmbedding(sequence_length=10)
    layer.build((None, 4, 3))
    table = random_inputs((10, 3), seed=6)
    layer.set_weights([table])
    full = np.asarray(layer(np.zeros((1, 10, 3), "float32")))[0]
    window = np.asarray(
        layer(np.zeros((2, 4, 3), "float32"), start_index=start_index)
    )
    for batch_index in range(2):
        np.testing.assert_array_equal(
            window[batch_index], full[start_index : start_index + 4]
        )
        np.testing.assert_array_equal(
            window[batch_index], table[start_index : start_index + 4]
        )


def test_single_new_token_during_incremental_decoding():
    layer = PositionEmbedding(sequence_length=5)
    layer.build((None, 1, 2))
    table = random_inputs((5, 2), seed=7)
    layer.set_weights([table])
    for position in range(5):
        step = np.asarray(
            layer(np.zeros((1, 1, 2), "float32"), start_index=position)
        )
        np.testing.assert_array_equal(step[0, 0], table[position])


@pytest.mark.parametrize("sequence_length", [0, -3, None])
def test_invalid_sequence_length_raises_value_error(sequence_length):
    with pytest.raises(ValueError, match="sequence_length"):
        PositionEmbedding(sequence_length=sequence_length)


def test_initializer_round_trips_through_config():
    initializer = keras.initializers.TruncatedNormal(stddev=0.02, seed=1)
    layer = PositionEmbedding(sequence_length=512, initializer=initializer)
    clone = PositionEmbedding.from_config(layer.get_config())
    assert clone.sequence_length == 512
    assert isinstance(clone.initializer, keras.initializers.TruncatedNormal)
    assert clone.initializer.stddev == 0.02
    layer(np.zeros((1, 3, 64), "float32"))
    # BERT's initialisation: stddev 0.02, truncated at two stddevs.
    table = np.asarray(layer.embeddings)
    assert np.abs(table).max() <= 0.04 + 1e-6
    assert 0.01 < table.std() < 0.02
