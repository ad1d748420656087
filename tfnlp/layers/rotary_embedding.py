"""Rotary position embeddings (RoPE) of queries and keys."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfnlp")
class RotaryEmbedding(keras.layers.Layer):
    """Rotates each head's features by angles that grow with the position.

    The features of a head are two halves `(x1, x2)`; pair `i` turns by
    `position * max_wavelength ** (-2 i / head_dim)`: `(x1 cos - x2 sin,
    x2 cos + x1 sin)`. The dot product of a rotated query and key then
    depends on their offset, not on where they are. The halves layout is
    GPT-NeoX's and LLaMA's (and keras-hub's `RotaryEmbedding`'s). Written
    here because keras-hub is not a dependency of tfnlp's layers; the
    tests check it against keras-hub's.

    Args:
        max_wavelength: the longest wavelength, in positions (10,000 in
            the paper).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, length, heads, head_dim)`, `head_dim` even.
        start_index: the position of the first of `length` (an int or a
            scalar tensor), for a key/value cache.

    Returns:
        The rotated inputs, of the same shape and dtype.

    Example:

    >>> import numpy as np
    >>> rotary = RotaryEmbedding()
    >>> query = np.ones((1, 3, 2, 4), "float32")
    >>> rotated = rotary(query)
    >>> np.allclose(rotated[0, 0], query[0, 0])  # Position 0 is not turned.
    True

    References:
        - [Su et al., 2021. RoFormer: Enhanced Transformer with Rotary
          Position Embedding](https://arxiv.org/abs/2104.09864)
    """

    def __init__(self, max_wavelength=10000, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = max_wavelength

    def call(self, inputs, start_index=0):
        head_dim = ops.shape(inputs)[-1]
        half = head_dim // 2
        exponents = ops.arange(half, dtype="float32") * 2.0 / ops.cast(head_dim, "float32")
        inverse_frequencies = ops.power(float(self.max_wavelength), -exponents)
        positions = (ops.arange(ops.shape(inputs)[1], dtype="float32")
                     + ops.cast(start_index, "float32"))
        angles = ops.einsum("i,j->ij", positions, inverse_frequencies)[None, :, None, :]
        cos, sin = ops.cos(angles), ops.sin(angles)
        x = ops.cast(inputs, "float32")
        first, second = x[..., :half], x[..., half:]
        rotated = ops.concatenate([first * cos - second * sin, second * cos + first * sin],
                                  axis=-1)
        return ops.cast(rotated, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_wavelength": self.max_wavelength}
