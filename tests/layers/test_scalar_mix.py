import keras
import numpy as np
import pytest

from tests.layer_test_helpers import check_layer, random_inputs
from tfnlp.layers.lstm_encoder import LSTMEncoder
from tfnlp.layers.scalar_mix import ScalarMix


def layer_outputs(count=3, shape=(2, 4, 5)):
    return [random_inputs(shape, seed=seed) for seed in range(count)]


def reference_mix(tensors, scalars, gamma):
    weights = np.exp(scalars - np.max(scalars))
    weights /= weights.sum()
    return gamma * sum(
        weight * tensor for weight, tensor in zip(weights, tensors)
    )


def test_shared_layer_checks():
    # check_layer accepts a list of arrays for a list argument (see
    # tests/layer_test_helpers.py); the save/load check feeds it as the
    # model inputs layer_outputs_0, layer_outputs_1, ...
    mix = ScalarMix(initial_scalar_parameters=[0.1, -0.2, 0.3])
    check_layer(
        mix, {"layer_outputs": layer_outputs()}, expected_output_shape=(2, 4, 5)
    )


def test_weights_and_initial_values():
    mix = ScalarMix()
    tensors = layer_outputs(count=4)
    outputs = mix(tensors)
    assert [weight.name for weight in mix.weights] == [
        "scalar_parameters",
        "gamma",
    ]
    assert tuple(mix.scalar_parameters.shape) == (4,)
    assert tuple(mix.gamma.shape) == ()
    np.testing.assert_array_equal(
        np.asarray(mix.scalar_parameters), np.zeros(4)
    )
    assert float(np.asarray(mix.gamma)) == 1.0
    # softmax(0) is uniform and γ = 1: the initial mix is the plain mean.
    np.testing.assert_allclose(
        np.asarray(outputs), np.mean(tensors, axis=0), atol=1e-6
    )


def test_matches_numpy_reference_with_set_weights():
    mix = ScalarMix()
    tensors = layer_outputs()
    mix(tensors)
    scalars = np.array([0.5, -1.0, 2.0], "float32")
    gamma = np.array(1.7, "float32")
    mix.set_weights([scalars, gamma])
    np.testing.assert_allclose(
        np.asarray(mix(tensors)),
        reference_mix(tensors, scalars, 1.7),
        atol=1e-6,
    )


def test_zero_scalars_give_gamma_times_the_mean():
    mix = ScalarMix()
    tensors = layer_outputs(count=2, shape=(3, 7))
    mix(tensors)
    mix.set_weights([np.zeros(2, "float32"), np.array(-2.5, "float32")])
    np.testing.assert_allclose(
        np.asarray(mix(tensors)), -2.5 * np.mean(tensors, axis=0), atol=1e-6
    )


def test_single_input_is_gamma_times_it():
    mix = ScalarMix(initial_scalar_parameters=[4.0])
    tensor = random_inputs((2, 3))
    np.testing.assert_allclose(np.asarray(mix([tensor])), tensor, atol=1e-6)


def test_initial_scalar_parameters_are_used_and_round_trip():
    mix = ScalarMix(initial_scalar_parameters=[1.0, 0.0, -1.0])
    tensors = layer_outputs()
    outputs = mix(tensors)
    np.testing.assert_allclose(
        np.asarray(mix.scalar_parameters), [1.0, 0.0, -1.0], atol=1e-7
    )
    np.testing.assert_allclose(
        np.asarray(outputs),
        reference_mix(tensors, np.array([1.0, 0.0, -1.0]), 1.0),
        atol=1e-6,
    )
    config = mix.get_config()
    assert config["initial_scalar_parameters"] == [1.0, 0.0, -1.0]
    assert ScalarMix.from_config(config).get_config() == config


def test_wrong_number_of_initial_scalar_parameters_raises():
    with pytest.raises(ValueError, match="initial_scalar_parameters"):
        ScalarMix(initial_scalar_parameters=[0.0, 0.0])(layer_outputs(count=3))


def test_a_tensor_instead_of_a_list_raises():
    with pytest.raises(ValueError, match="list"):
        ScalarMix()(random_inputs((2, 4, 5)))


def test_tensors_of_different_shapes_raise():
    with pytest.raises(ValueError, match="identical shape"):
        ScalarMix()([random_inputs((2, 4, 5)), random_inputs((2, 4, 6))])


def test_elmo_style_mix_of_lstm_layers_in_a_functional_model():
    token_ids = np.array([[3, 1, 4, 1], [5, 9, 0, 0]], "int32")
    tokens = keras.Input(shape=(4,), dtype="int32")
    embeddings = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    # Two directions of 2 units: 4 features, like the token embeddings.
    encoded = LSTMEncoder(2, num_layers=2, bidirectional=True)(embeddings)
    mixed = ScalarMix()([embeddings] + encoded["layer_outputs"])
    # The padding mask survives the mix.
    assert mixed._keras_mask is not None
    model = keras.Model(tokens, mixed)
    outputs = model(token_ids)
    assert tuple(outputs.shape) == (2, 4, 4)
    assert len(model.get_layer(index=-1).weights) == 2
