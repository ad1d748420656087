import keras
import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_allclose_nested,
    assert_changes_do_not_leak,
    check_layer,
    numpy_lstm_step,
    random_inputs,
)
from tfnlp.layers.lstm_encoder import LSTMEncoder

UNITS = 3
FEATURES = 4
# Sequence 0 is full; sequence 1 has 2 real tokens and 2 padded steps.
LENGTHS = (4, 2)


def padded_batch(seed=0):
    inputs = random_inputs((2, 4, FEATURES), seed=seed)
    mask = np.arange(4)[None, :] < np.array(LENGTHS)[:, None]
    return {"inputs": inputs, "mask": mask}


@pytest.mark.parametrize(
    "num_layers, bidirectional", [(1, False), (2, True)]
)
def test_shared_layer_checks(num_layers, bidirectional):
    encoder = LSTMEncoder(
        UNITS, num_layers=num_layers, bidirectional=bidirectional, dropout=0.2
    )
    width = 2 * UNITS if bidirectional else UNITS
    # On a GPU, Keras runs these LSTMs with cuDNN kernels, which XLA cannot
    # compile; Keras then marks them supports_jit=False (and model.fit does
    # not use XLA), so the XLA check runs only where Keras itself would.
    check_xla = all(layer.supports_jit for layer in encoder._flatten_layers())
    # No expected_output_shape: check_layer looks at the first flattened
    # output, which for a dict is the first key in sorted order.
    outputs = check_layer(encoder, padded_batch(), check_xla=check_xla)
    assert set(outputs) == {"sequence_output", "layer_outputs", "final_states"}
    assert tuple(outputs["sequence_output"].shape) == (2, 4, width)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_output_shapes(num_layers, bidirectional):
    encoder = LSTMEncoder(
        UNITS, num_layers=num_layers, bidirectional=bidirectional
    )
    outputs = encoder(**padded_batch())
    width = 2 * UNITS if bidirectional else UNITS
    assert tuple(outputs["sequence_output"].shape) == (2, 4, width)
    assert len(outputs["layer_outputs"]) == num_layers
    assert len(outputs["final_states"]) == num_layers
    for layer_output in outputs["layer_outputs"]:
        assert tuple(layer_output.shape) == (2, 4, width)
    for states in outputs["final_states"]:
        assert len(states) == 2
        hidden, cell = states
        assert tuple(hidden.shape) == (2, width)
        assert tuple(cell.shape) == (2, width)
    np.testing.assert_array_equal(
        np.asarray(outputs["sequence_output"]),
        np.asarray(outputs["layer_outputs"][-1]),
    )
    # kernel, recurrent kernel and bias per LSTM and direction.
    assert len(encoder.trainable_weights) == 3 * num_layers * (
        2 if bidirectional else 1
    )


def test_works_without_a_mask():
    encoder = LSTMEncoder(UNITS, bidirectional=True)
    inputs = random_inputs((2, 4, FEATURES))
    outputs = encoder(inputs)
    hidden = np.asarray(outputs["final_states"][0][0])
    sequence = np.asarray(outputs["sequence_output"])
    np.testing.assert_allclose(
        hidden[:, :UNITS], sequence[:, -1, :UNITS], atol=1e-6
    )
    np.testing.assert_allclose(
        hidden[:, UNITS:], sequence[:, 0, UNITS:], atol=1e-6
    )


@pytest.mark.parametrize("num_layers", [1, 2])
def test_final_state_is_the_last_real_step_of_each_layer(num_layers):
    encoder = LSTMEncoder(UNITS, num_layers=num_layers)
    outputs = encoder(**padded_batch())
    for layer_output, (hidden, _) in zip(
        outputs["layer_outputs"], outputs["final_states"]
    ):
        layer_output, hidden = np.asarray(layer_output), np.asarray(hidden)
        for batch_index, length in enumerate(LENGTHS):
            np.testing.assert_allclose(
                hidden[batch_index],
                layer_output[batch_index, length - 1],
                atol=1e-6,
            )
        # Padded steps are zeros.
        assert np.all(layer_output[1, LENGTHS[1] :] == 0.0)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_bidirectional_final_states_are_forward_then_backward(num_layers):
    encoder = LSTMEncoder(UNITS, num_layers=num_layers, bidirectional=True)
    outputs = encoder(**padded_batch())
    for layer_output, (hidden, _) in zip(
        outputs["layer_outputs"], outputs["final_states"]
    ):
        layer_output, hidden = np.asarray(layer_output), np.asarray(hidden)
        for batch_index, length in enumerate(LENGTHS):
            # The forward LSTM ends at the last real token ...
            np.testing.assert_allclose(
                hidden[batch_index, :UNITS],
                layer_output[batch_index, length - 1, :UNITS],
                atol=1e-6,
            )
            # ... the backward LSTM ends at the first token.
            np.testing.assert_allclose(
                hidden[batch_index, UNITS:],
                layer_output[batch_index, 0, UNITS:],
                atol=1e-6,
            )
        assert np.all(layer_output[1, LENGTHS[1] :] == 0.0)


def numpy_lstm(cell, inputs):
    """Keras' LSTM cell run over `inputs` `(steps, features)` in NumPy: the
    hidden states of every step and the final `(hidden, cell)` state."""
    hidden = memory = np.zeros(cell.units)
    outputs = []
    for x in inputs:
        hidden, memory = numpy_lstm_step(cell, x, hidden, memory)
        outputs.append(hidden)
    return np.array(outputs), (hidden, memory)


def test_final_hidden_and_cell_states_are_forward_then_backward_after_the_real_tokens():
    encoder = LSTMEncoder(UNITS, num_layers=2, bidirectional=True)
    batch = padded_batch()
    outputs = encoder(**batch)
    for example, length in enumerate(LENGTHS):
        sequence = batch["inputs"][example, :length]
        for layer, (hidden, cell) in zip(encoder.recurrent_layers, outputs["final_states"]):
            forward, (forward_hidden, forward_cell) = numpy_lstm(
                layer.forward_layer.cell, sequence)
            backward, (backward_hidden, backward_cell) = numpy_lstm(
                layer.backward_layer.cell, sequence[::-1])
            # Measured: 6e-8.
            np.testing.assert_allclose(np.asarray(hidden)[example],
                                       np.concatenate([forward_hidden, backward_hidden]),
                                       atol=1e-6)
            np.testing.assert_allclose(np.asarray(cell)[example],
                                       np.concatenate([forward_cell, backward_cell]), atol=1e-6)
            sequence = np.concatenate([forward, backward[::-1]], axis=-1)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_padded_steps_do_not_leak_into_states_or_real_outputs(bidirectional):
    encoder = LSTMEncoder(UNITS, num_layers=2, bidirectional=bidirectional)
    batch = padded_batch()
    mask = batch["mask"]

    def encode(tensors):
        outputs = encoder(**tensors)
        real_steps = [
            np.asarray(layer_output)[mask]
            for layer_output in outputs["layer_outputs"]
        ]
        return outputs["final_states"], real_steps

    assert_changes_do_not_leak(encode, batch, "inputs", np.s_[1, LENGTHS[1] :])


@pytest.mark.parametrize("bidirectional", [False, True])
def test_padded_sequence_matches_the_same_sequence_unpadded(bidirectional):
    encoder = LSTMEncoder(UNITS, num_layers=2, bidirectional=bidirectional)
    batch = padded_batch()
    padded = encoder(**batch)
    length = LENGTHS[1]
    alone = encoder(batch["inputs"][1:, :length])
    assert_allclose_nested(
        [
            [
                [state[1:] for state in states]
                for states in padded["final_states"]
            ],
            padded["sequence_output"][1:, :length],
        ],
        [alone["final_states"], alone["sequence_output"]],
    )


def test_dropout_is_applied_between_layers_in_training_only():
    batch = padded_batch()
    stacked = LSTMEncoder(UNITS, num_layers=2, dropout=0.5)
    inference = stacked(**batch)
    assert_allclose_nested(stacked(**batch, training=False), inference)
    training = stacked(**batch, training=True)
    # The bottom layer reads the raw inputs: no dropout before it ...
    assert_allclose_nested(
        training["layer_outputs"][0], inference["layer_outputs"][0]
    )
    # ... but the top layer reads dropped-out hidden states.
    assert not np.allclose(
        np.asarray(training["sequence_output"]),
        np.asarray(inference["sequence_output"]),
    )
    # With one layer there is nothing between layers to drop.
    single = LSTMEncoder(UNITS, num_layers=1, dropout=0.5)
    assert_allclose_nested(single(**batch, training=True), single(**batch))


def test_embedding_mask_is_used_and_passed_on_in_a_functional_model():
    token_ids = np.array([[3, 1, 4, 1], [5, 9, 0, 0]], "int32")
    tokens = keras.Input(shape=(4,), dtype="int32")
    embedding = keras.layers.Embedding(10, FEATURES, mask_zero=True)
    encoder = LSTMEncoder(UNITS, num_layers=2, bidirectional=True)
    outputs = encoder(embedding(tokens))
    assert outputs["sequence_output"]._keras_mask is not None
    model = keras.Model(tokens, outputs)

    from_model = model(token_ids)
    explicit = encoder(embedding(token_ids), mask=token_ids != 0)
    assert_allclose_nested(from_model, explicit)
    # The implicit mask really was applied: padded steps are zeros.
    assert np.all(np.asarray(from_model["sequence_output"])[1, 2:] == 0.0)


def test_config_holds_the_constructor_arguments():
    encoder = LSTMEncoder(5, num_layers=3, bidirectional=True, dropout=0.25)
    config = encoder.get_config()
    assert config["units"] == 5
    assert config["num_layers"] == 3
    assert config["bidirectional"] is True
    assert config["dropout"] == 0.25
    clone = LSTMEncoder.from_config(config)
    assert clone.output_dim == 10
    assert len(clone.recurrent_layers) == 3


@pytest.mark.parametrize(
    "arguments",
    [
        {"units": 0},
        {"units": 3, "num_layers": 0},
        {"units": 3, "dropout": 1.0},
        {"units": 3, "dropout": -0.1},
    ],
)
def test_invalid_arguments_raise_value_error(arguments):
    with pytest.raises(ValueError):
        LSTMEncoder(**arguments)
