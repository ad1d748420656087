"""Fixed sinusoidal position encodings (Vaswani et al., 2017)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tfnlp")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Fixed sine/cosine position encodings.

    PE(pos, 2i) = sin(pos / max_wavelength^(2i/d)) and
    PE(pos, 2i+1) = cos(pos / max_wavelength^(2i/d)), with d the last
    dimension of the inputs. Even channels hold sines and odd channels hold
    cosines, interleaved as in the paper. The layer returns the encodings
    (broadcast to the shape of `inputs`); add them to the embeddings
    yourself. It has no weights.

    Args:
        max_wavelength: the largest wavelength of the sinusoids.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(batch, sequence_length, hidden_dim)`; only
            its shape and dtype are used.
        start_index: the position of the first token, for incremental
            decoding (encode one new token at position `start_index`).

    Example:

    >>> import numpy as np
    >>> embeddings = np.zeros((2, 10, 16), "float32")
    >>> encodings = SinusoidalPositionEncoding()(embeddings)
    >>> tuple(encodings.shape)
    (2, 10, 16)

    References:
        - [Vaswani et al., 2017. Attention Is All You Need, section 3.5](
          https://arxiv.org/abs/1706.03762)
    """

    def __init__(self, max_wavelength=10000, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = max_wavelength
        self.built = True

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        sequence_length, hidden_dim = shape[-2], shape[-1]
        # Angles are computed in float32 whatever the compute dtype: in
        # float16 a position such as 600 is off by up to 0.25, which puts
        # the sines off by about 0.02. Only the result is cast down.
        positions = ops.cast(
            ops.arange(sequence_length) + start_index, "float32"
        )
        channels = ops.arange(hidden_dim)
        # Channels 2i and 2i+1 share the frequency 1 / max_wavelength^(2i/d).
        even_channels = ops.cast(2 * (channels // 2), "float32")
        inverse_frequencies = ops.power(
            ops.cast(self.max_wavelength, "float32"),
            -even_channels / ops.cast(hidden_dim, "float32"),
        )
        angles = ops.expand_dims(positions, -1) * ops.expand_dims(
            inverse_frequencies, 0
        )
        is_even = ops.equal(channels % 2, 0)
        encodings = ops.where(is_even, ops.sin(angles), ops.cos(angles))
        return ops.broadcast_to(ops.cast(encodings, inputs.dtype), shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_wavelength": self.max_wavelength})
        return config

    def compute_output_shape(self, inputs_shape):
        return inputs_shape
