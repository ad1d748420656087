import keras
import numpy as np
import pytest
from keras import ops

from tfnlp.layers import Dropout, MultiHeadAttention, TransformerEncoderBlock
from tfnlp.layers.dropout import hash_dropout, hash_random_bits


def test_random_bits_are_uniform_and_seed_dependent():
    bits = ops.convert_to_numpy(hash_random_bits((8, 4, 64, 64), np.array([17, 3])))
    other = ops.convert_to_numpy(hash_random_bits((8, 4, 64, 64), np.array([17, 4])))
    assert bits.dtype == np.int32 and bits.min() >= 0
    assert abs(bits.mean() / 2**31 - 0.5) < 4e-3
    each_bit = (bits[..., None] >> np.arange(31)) & 1
    np.testing.assert_allclose(each_bit.mean(axis=(0, 1, 2, 3)), 0.5, atol=6e-3)
    assert abs(np.corrcoef(bits.ravel(), other.ravel())[0, 1]) < 1.2e-2
    assert abs(np.corrcoef(bits.ravel()[:-1], bits.ravel()[1:])[0, 1]) < 1.2e-2
    # The same seed gives the same bits.
    again = ops.convert_to_numpy(hash_random_bits((8, 4, 64, 64), np.array([17, 3])))
    np.testing.assert_array_equal(bits, again)


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_at_the_rate_and_rescales(rate):
    x = np.ones((64, 128, 32), "float32")
    y = ops.convert_to_numpy(hash_dropout(x, rate, np.array([5, 0])))
    assert abs((y == 0).mean() - rate) < 5e-3
    np.testing.assert_allclose(np.unique(y[y != 0]), 1 / (1 - rate), rtol=1e-6)


def test_noise_shape_shares_the_mask():
    x = np.ones((4, 16, 8), "float32")
    y = ops.convert_to_numpy(hash_dropout(x, 0.5, np.array([1, 2]), noise_shape=(None, 1, None)))
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1], y.shape))


def test_layer_is_keras_dropout_with_new_masks_each_call():
    layer = Dropout(0.2, seed=7)
    assert isinstance(layer, keras.layers.Dropout)
    x = np.ones((8, 32, 16), "float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(layer(x)), x)
    first = ops.convert_to_numpy(layer(x, training=True))
    second = ops.convert_to_numpy(layer(x, training=True))
    assert 0.1 < (first == 0).mean() < 0.3
    assert (first != second).any()
    assert Dropout.from_config(layer.get_config()).get_config() == layer.get_config()
    np.testing.assert_array_equal(
        ops.convert_to_numpy(Dropout(1.0)(x, training=True)), np.zeros_like(x)
    )


def test_attention_layers_keep_the_keras_variables():
    ours = MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1)
    reference = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1)
    x = np.random.rand(2, 5, 8).astype("float32")
    ours(x, x)
    reference(x, x)
    assert [v.shape for v in ours.weights] == [v.shape for v in reference.weights]
    assert len(ours.variables) == len(reference.variables)
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=16)
    block(x)
    assert isinstance(block.feedforward_dropout, Dropout)
    assert isinstance(block.self_attention.attention_dropout, Dropout)


def test_an_element_whose_bits_equal_the_threshold_is_kept():
    # The documented drop probability round(rate * 2**31) / 2**31: an element
    # is dropped when its 31 bits are below that threshold, kept from it on.
    seed = np.array([9, 4])
    bits = ops.convert_to_numpy(hash_random_bits((4, 64), seed)).ravel()
    threshold = int(np.sort(bits)[100])
    x = np.ones((4, 64), "float32")
    y = ops.convert_to_numpy(hash_dropout(x, threshold / 2**31, seed)).ravel()
    np.testing.assert_array_equal(y == 0, bits < threshold)
    assert (y == 0).sum() == 100
    # A rate of 0 keeps everything, unscaled.
    np.testing.assert_array_equal(ops.convert_to_numpy(hash_dropout(x, 0.0, seed)), x)


def test_the_mask_is_the_same_under_xla_with_a_noise_shape():
    import tensorflow as tf

    seed = np.array([3, 8])
    x = np.arange(4 * 16 * 8, dtype="float32").reshape(4, 16, 8) + 1

    def drop(inputs):
        return hash_dropout(inputs, 0.3, seed, noise_shape=(None, 1, None))

    eager = ops.convert_to_numpy(drop(x))
    compiled = tf.function(drop, jit_compile=True)(tf.constant(x)).numpy()
    np.testing.assert_array_equal(compiled, eager)
    kept = eager != 0
    np.testing.assert_array_equal(kept, np.broadcast_to(kept[:, :1], kept.shape))
    assert 0.15 < 1 - kept.mean() < 0.45
