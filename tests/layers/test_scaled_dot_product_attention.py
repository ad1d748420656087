import numpy as np
import tensorflow as tf

from tests.layer_test_helpers import (
    assert_allclose_nested,
    assert_changes_do_not_leak,
    random_inputs,
)
from tfnlp.layers import scaled_dot_product_attention


def test_worked_example_scores_14_and_12_give_weights_088_and_012():
    # d_k = 64; q·k1 = 112 and q·k2 = 96, so the scaled scores are 14 and 12.
    query = np.zeros((1, 64), "float32")
    query[0, 0] = 1.0
    key = np.zeros((2, 64), "float32")
    key[0, 0], key[1, 0] = 112.0, 96.0
    value = np.array([[1.0, 0.0], [0.0, 1.0]], "float32")
    outputs, weights = scaled_dot_product_attention(query, key, value)
    expected = np.exp([14.0, 12.0]) / np.exp([14.0, 12.0]).sum()
    np.testing.assert_allclose(np.asarray(weights)[0], expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(weights)[0], [0.88, 0.12], atol=0.005)
    np.testing.assert_allclose(np.asarray(outputs)[0], expected, rtol=1e-6)


def test_matches_numpy_reference_with_leading_dimensions():
    query = random_inputs((2, 3, 4, 8), seed=1)
    key = random_inputs((2, 3, 5, 8), seed=2)
    value = random_inputs((2, 3, 5, 6), seed=3)
    logits = query @ np.swapaxes(key, -1, -2) / np.sqrt(8.0)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    outputs, scores = scaled_dot_product_attention(query, key, value)
    np.testing.assert_allclose(np.asarray(scores), weights, atol=1e-6)
    np.testing.assert_allclose(np.asarray(outputs), weights @ value, atol=1e-5)


def test_masked_keys_get_zero_weight_and_cannot_change_outputs():
    inputs = {
        "query": random_inputs((2, 4, 8), seed=1),
        "key": random_inputs((2, 6, 8), seed=2),
        "value": random_inputs((2, 6, 8), seed=3),
    }
    mask = np.ones((2, 1, 6), bool)
    mask[:, :, 4:] = False

    def attend(tensors):
        return scaled_dot_product_attention(**tensors, mask=mask)

    _, weights = attend(inputs)
    weights = np.asarray(weights)
    assert np.all(weights[:, :, 4:] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-6)
    assert_changes_do_not_leak(attend, inputs, "key", np.s_[:, 4:])
    assert_changes_do_not_leak(attend, inputs, "value", np.s_[:, 4:])


def test_query_with_every_key_masked_gets_zero_weights_not_nan():
    query = random_inputs((1, 2, 4))
    mask = np.array([[[True, True, False], [False, False, False]]])
    outputs, weights = scaled_dot_product_attention(
        query, random_inputs((1, 3, 4)), random_inputs((1, 3, 4)), mask=mask
    )
    assert np.all(np.asarray(weights)[0, 1] == 0.0)
    assert np.all(np.asarray(outputs)[0, 1] == 0.0)
    assert np.all(np.isfinite(np.asarray(outputs)))


def test_compiles_with_xla_and_agrees_with_eager():
    query = random_inputs((2, 4, 8), seed=1)
    key = random_inputs((2, 6, 8), seed=2)
    value = random_inputs((2, 6, 8), seed=3)
    mask = np.tril(np.ones((4, 6), bool))[None]
    compiled = tf.function(scaled_dot_product_attention, jit_compile=True)
    assert_allclose_nested(
        compiled(query, key, value, mask),
        scaled_dot_product_attention(query, key, value, mask),
    )
