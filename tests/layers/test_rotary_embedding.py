"""RotaryEmbedding, and the rotary and QK-norm options of MultiHeadAttention."""

import keras_hub
import numpy as np

from tests.layer_test_helpers import check_layer, random_inputs
from tfnlp.layers import MultiHeadAttention, RotaryEmbedding

BATCH, LENGTH, HEADS, HEAD_DIM = 2, 6, 2, 8


def numpy_rotation(x, start_index=0, max_wavelength=10000):
    """RoPE from the paper's definition, on `(batch, length, heads, dim)`."""
    half = x.shape[-1] // 2
    frequencies = max_wavelength ** (-np.arange(half) * 2.0 / x.shape[-1])
    angles = (np.arange(x.shape[1]) + start_index)[:, None] * frequencies[None, :]
    cos, sin = np.cos(angles)[None, :, None, :], np.sin(angles)[None, :, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], -1)


def test_matches_the_definition_and_keras_hubs_rotary_embedding():
    x = random_inputs((BATCH, LENGTH, HEADS, HEAD_DIM))
    rotated = np.asarray(RotaryEmbedding()(x, start_index=3))
    np.testing.assert_allclose(rotated, numpy_rotation(x, 3), atol=1e-5)
    reference = keras_hub.layers.RotaryEmbedding(max_wavelength=10000)(x, start_index=3)
    np.testing.assert_allclose(rotated, np.asarray(reference), atol=1e-5)
    assert not np.allclose(rotated, x, atol=1e-2)


def test_dot_products_depend_on_the_offset_only():
    rotary = RotaryEmbedding()
    query = np.broadcast_to(random_inputs((1, 1, 1, HEAD_DIM)), (1, LENGTH, 1, HEAD_DIM))
    key = np.broadcast_to(random_inputs((1, 1, 1, HEAD_DIM), seed=1), (1, LENGTH, 1, HEAD_DIM))
    for start_index in (0, 5):
        rotated_query = np.asarray(rotary(query, start_index=start_index))[0, :, 0]
        rotated_key = np.asarray(rotary(key, start_index=start_index))[0, :, 0]
        logits = rotated_query @ rotated_key.T
        # Each diagonal (one offset) holds one value, whatever the positions.
        for offset in range(-LENGTH + 1, LENGTH):
            diagonal = np.diagonal(logits, offset)
            np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-4)
        # and offsets differ from one another.
        assert np.ptp([np.diagonal(logits, offset)[0] for offset in range(LENGTH)]) > 1e-2


def test_shared_layer_checks():
    check_layer(RotaryEmbedding(max_wavelength=500),
                inputs={"inputs": random_inputs((BATCH, LENGTH, HEADS, HEAD_DIM))},
                expected_output_shape=(BATCH, LENGTH, HEADS, HEAD_DIM), check_gradients=False)


def attention_weights(layer, sequence):
    _, weights = layer(sequence, sequence, return_attention_scores=True)
    return np.asarray(weights)


def test_rotary_attention_logits_are_those_of_rotated_queries_and_keys():
    layer = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM, rotary_max_wavelength=10000)
    sequence = random_inputs((BATCH, LENGTH, 16))
    weights = attention_weights(layer, sequence)
    query = numpy_rotation(np.asarray(layer.query_dense(sequence)))
    key = numpy_rotation(np.asarray(layer.key_dense(sequence)))
    logits = np.einsum("bqhd,bkhd->bhqk", query, key) / np.sqrt(HEAD_DIM)
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(weights, expected / expected.sum(-1, keepdims=True), atol=1e-5)
    plain = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM)
    plain(sequence, sequence)
    plain.set_weights(layer.get_weights())
    assert np.abs(attention_weights(plain, sequence) - weights).max() > 1e-3


def test_a_rotary_cache_gives_the_full_pass_shifted_by_its_start():
    layer = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM, rotary_max_wavelength=10000)
    sequence = random_inputs((BATCH, LENGTH, 16))
    full = np.asarray(layer(sequence, sequence, use_causal_mask=True))
    start = 4
    cache = np.zeros((BATCH, 2, start + LENGTH, HEADS, HEAD_DIM), "float32")
    # The same tokens written at positions 4..: the first 4 are masked out.
    mask = np.broadcast_to(np.arange(start + LENGTH) >= start, (BATCH, LENGTH, start + LENGTH))
    shifted, _ = layer(sequence, sequence, attention_mask=mask, use_causal_mask=True,
                       cache=cache, cache_update_index=start)
    np.testing.assert_allclose(np.asarray(shifted), full, atol=1e-5)


def test_query_key_norm_bounds_the_attention_logits():
    """RMS-normalized queries and keys (unit scales) have logits within
    ±sqrt(head_dim), so no key's weight falls below exp(-2 sqrt(d)) / n,
    however large the inputs."""
    sequence = random_inputs((BATCH, LENGTH, 16)) * 1000.0
    normed = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM, query_key_norm=True)
    weights = attention_weights(normed, sequence)
    assert weights.min() >= np.exp(-2 * np.sqrt(HEAD_DIM)) / LENGTH * 0.999
    plain = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM)
    assert attention_weights(plain, sequence).min() < 1e-6
    check_layer(MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM, query_key_norm=True,
                                   rotary_max_wavelength=1000),
                inputs={"query": random_inputs((BATCH, LENGTH, 16)),
                        "value": random_inputs((BATCH, LENGTH, 16), seed=1)},
                expected_output_shape=(BATCH, LENGTH, 16))


def test_zero_output_kernels_start_the_attention_at_zero():
    layer = MultiHeadAttention(num_heads=HEADS, key_dim=HEAD_DIM, use_bias=False,
                               output_kernel_initializer="zeros")
    sequence = random_inputs((BATCH, LENGTH, 16))
    assert np.all(np.asarray(layer(sequence, sequence)) == 0)
    assert np.any(np.asarray(layer.query_dense.kernel) != 0)
    config = layer.get_config()
    assert MultiHeadAttention.from_config(config).get_config() == config
