"""The mask helpers: the masked value fits the scores' dtype."""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from tfnlp.layers.masking import large_negative_number, masked_softmax


# tf.float16 prints as "<dtype: 'float16'>": the spelling must not matter.
@pytest.mark.parametrize("dtype", ["float16", tf.float16, np.float16, "bfloat16", tf.bfloat16],
                         ids=["float16", "tf.float16", "np.float16", "bfloat16", "tf.bfloat16"])
def test_the_masked_value_of_half_precision_is_finite_in_it(dtype):
    assert large_negative_number(dtype) == -3e4
    assert np.isfinite(np.float16(large_negative_number(dtype)))


@pytest.mark.parametrize("dtype", ["float32", tf.float32, "float64"],
                         ids=["float32", "tf.float32", "float64"])
def test_the_masked_value_of_full_precision_is_far_below_any_score(dtype):
    assert large_negative_number(dtype) == -1e9


def test_float16_masked_positions_get_zero_weight_and_a_fully_masked_row_zeros():
    scores = tf.constant([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], tf.float16)
    mask = tf.constant([[True, True, False], [False, False, False]])
    weights = ops.convert_to_numpy(masked_softmax(scores, mask))
    np.testing.assert_allclose(weights[0], [0.2689, 0.7311, 0.0], atol=1e-3)
    np.testing.assert_array_equal(weights[1], [0.0, 0.0, 0.0])
