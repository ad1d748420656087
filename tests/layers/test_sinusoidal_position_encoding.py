import keras
import numpy as np
import pytest

from tests.layer_test_helpers import check_layer, random_inputs
from tfnlp.layers.sinusoidal_position_encoding import SinusoidalPositionEncoding


def reference_encodings(positions, hidden_dim, max_wavelength=10000.0):
    """Numpy PE(pos, 2i) = sin(pos / w^(2i/d)), PE(pos, 2i+1) = cos(same)."""
    positions = np.asarray(positions, np.float64)[:, None]
    channels = np.arange(hidden_dim)
    angles = positions / np.power(
        float(max_wavelength), 2 * (channels // 2) / hidden_dim
    )
    return np.where(channels % 2 == 0, np.sin(angles), np.cos(angles))


def test_shared_layer_checks():
    # The layer has no weights, so there is no variable to get a gradient:
    # check_gradients is switched off (assert_every_variable_gets_gradient
    # requires at least one trainable variable).
    layer = SinusoidalPositionEncoding(max_wavelength=500)
    outputs = check_layer(
        layer,
        {"inputs": random_inputs((2, 5, 6))},
        expected_output_shape=(2, 5, 6),
        check_gradients=False,
    )
    assert not layer.weights
    np.testing.assert_allclose(
        np.asarray(outputs)[1], reference_encodings(range(5), 6, 500), atol=1e-6
    )


@pytest.mark.parametrize("hidden_dim", [1, 7, 8])
def test_matches_numpy_reference_including_odd_hidden_dim(hidden_dim):
    inputs = np.zeros((3, 50, hidden_dim), "float32")
    outputs = SinusoidalPositionEncoding()(inputs)
    assert tuple(outputs.shape) == (3, 50, hidden_dim)
    expected = reference_encodings(range(50), hidden_dim)
    for batch_index in range(3):
        np.testing.assert_allclose(
            np.asarray(outputs)[batch_index], expected, atol=1e-6
        )


def test_first_channels_are_sin_pos_and_cos_pos():
    outputs = np.asarray(
        SinusoidalPositionEncoding()(np.zeros((1, 4, 4), "float32"))
    )[0]
    positions = np.arange(4)
    np.testing.assert_allclose(outputs[:, 0], np.sin(positions), atol=1e-6)
    np.testing.assert_allclose(outputs[:, 1], np.cos(positions), atol=1e-6)
    # Channel 2 has wavelength 2π · 10000^(2/4) = 2π · 100.
    np.testing.assert_allclose(
        outputs[:, 2], np.sin(positions / 100), atol=1e-6
    )


def test_output_does_not_depend_on_input_values():
    layer = SinusoidalPositionEncoding()
    first = layer(random_inputs((2, 5, 6), seed=1))
    second = layer(random_inputs((2, 5, 6), seed=2))
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))


@pytest.mark.parametrize("start_index", [0, 3, 1000])
def test_start_index_gives_rows_of_the_full_table(start_index):
    layer = SinusoidalPositionEncoding()
    full = np.asarray(layer(np.zeros((1, start_index + 4, 8), "float32")))[0]
    window = np.asarray(
        layer(np.zeros((2, 4, 8), "float32"), start_index=start_index)
    )
    for batch_index in range(2):
        np.testing.assert_allclose(
            window[batch_index], full[start_index:], atol=1e-6
        )
    np.testing.assert_allclose(
        window[0],
        reference_encodings(range(start_index, start_index + 4), 8),
        atol=1e-5,
    )


def test_single_new_token_during_incremental_decoding():
    layer = SinusoidalPositionEncoding()
    full = np.asarray(layer(np.zeros((1, 10, 6), "float32")))[0]
    for position in range(10):
        step = np.asarray(
            layer(np.zeros((1, 1, 6), "float32"), start_index=position)
        )[0, 0]
        np.testing.assert_allclose(step, full[position], atol=1e-6)


def test_max_wavelength_is_honoured():
    inputs = np.zeros((1, 20, 8), "float32")
    short = SinusoidalPositionEncoding(max_wavelength=100)(inputs)
    short = np.asarray(short)[0]
    default = np.asarray(SinusoidalPositionEncoding()(inputs))[0]
    np.testing.assert_allclose(
        short, reference_encodings(range(20), 8, 100), atol=1e-6
    )
    np.testing.assert_allclose(
        default, reference_encodings(range(20), 8, 10000), atol=1e-6
    )
    # Channels 0 and 1 have frequency 1 whatever the wavelength; the others
    # must differ.
    np.testing.assert_allclose(short[:, :2], default[:, :2], atol=1e-6)
    assert np.abs(short[:, 2:] - default[:, 2:]).max() > 0.1
    assert SinusoidalPositionEncoding(max_wavelength=100).get_config()[
        "max_wavelength"
    ] == 100


def test_mixed_precision_output_is_float16_and_accurate():
    # The angles must be computed in float32: in float16 they are off by up
    # to 0.25 at position 600 (this was a bug; the sines were off by 0.02).
    layer = SinusoidalPositionEncoding(dtype="mixed_float16")
    outputs = layer(np.zeros((1, 600, 8), "float32"))
    assert keras.backend.standardize_dtype(outputs.dtype) == "float16"
    np.testing.assert_allclose(
        np.asarray(outputs, np.float64)[0],
        reference_encodings(range(600), 8),
        atol=1e-3,
    )
