"""Bahdanau (additive) attention for encoder-decoder models (2015)."""

import math
import numbers

import keras
from keras import ops

from tfnlp.layers.global_attention import GlobalAttention


@keras.saving.register_keras_serializable(package="tfnlp")
class BahdanauAttention(GlobalAttention):
    """Additive attention of a decoder state over encoder outputs.

    Each decoder state h_t (the query) is compared with every encoder output
    h̄_s (the values, which serve as both keys and values) by a small
    feed-forward network with one hidden layer of `units`:

        score(h_t, h̄_s) = v_aᵀ tanh(W₁ h_t + W₂ h̄_s)

    with the weights `query_kernel` W₁ `(query_units, units)`, `value_kernel`
    W₂ `(value_units, units)` (neither has a bias) and `attention_vector` v_a
    `(units,)`. Each side is projected once and the sum is broadcast over all
    (query, source) pairs. The scores are normalised with a softmax over the
    source positions, and the context vector is the weighted sum of the
    values.

    With `normalize=True` the attention vector is weight-normalised
    (Salimans and Kingma, 2016), as in TF-Addons
    `BahdanauAttention(normalize=True)`: v_a is replaced by g · v_a / ‖v_a‖
    with a learned scalar `scale` g initialised to sqrt(1 / units), and a
    learned `bias` b `(units,)`, initialised to zeros, is added inside the
    tanh:

        score(h_t, h̄_s) = (g · v_a / ‖v_a‖)ᵀ tanh(W₁ h_t + W₂ h̄_s + b)

    Masked source positions get exactly zero weight and the remaining weights
    sum to one; a query whose every source position is masked gets all-zero
    weights and a zero context.

    Args:
        units: the size of the hidden layer of the score network.
        normalize: whether to use the weight-normalised score.
        kernel_initializer: initializer of the kernels and of the attention
            vector.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: the decoder state, either one step of shape
            `(batch, query_units)` or a sequence of shape
            `(batch, query_length, query_units)`.
        values: the encoder outputs, of shape
            `(batch, source_length, value_units)`.
        mask: optional boolean tensor of shape `(batch, source_length)`;
            `True` marks a real source position, `False` padding.

    Returns:
        `(context, attention_weights)`. For a 2-D query, `context` has shape
        `(batch, value_units)` and `attention_weights` (after the softmax)
        `(batch, source_length)`; for a 3-D query they have shapes
        `(batch, query_length, value_units)` and
        `(batch, query_length, source_length)`.

    Example:

    >>> import numpy as np
    >>> query = np.random.rand(2, 6).astype("float32")
    >>> values = np.random.rand(2, 5, 8).astype("float32")
    >>> mask = np.array([[True] * 5, [True, True, True, False, False]])
    >>> attention = BahdanauAttention(units=4)
    >>> context, attention_weights = attention(query, values, mask=mask)
    >>> tuple(context.shape), tuple(attention_weights.shape)
    ((2, 8), (2, 5))

    References:
        - [Bahdanau et al., 2015. Neural Machine Translation by Jointly
          Learning to Align and Translate, appendix A.1.2](
          https://arxiv.org/abs/1409.0473)
        - [Salimans and Kingma, 2016. Weight Normalization: A Simple
          Reparameterization to Accelerate Training of Deep Neural Networks](
          https://arxiv.org/abs/1602.07868)
    """

    def __init__(
        self,
        units,
        normalize=False,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if (
            isinstance(units, bool)
            or not isinstance(units, numbers.Integral)
            or units <= 0
        ):
            raise ValueError(
                "`units` must be a positive integer (the size of the hidden "
                f"layer of the score network). Received: units={units!r}."
            )
        self.units = int(units)
        self.normalize = bool(normalize)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, query_shape, values_shape):
        self.query_kernel = self.add_weight(
            name="query_kernel",
            shape=(query_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.value_kernel = self.add_weight(
            name="value_kernel",
            shape=(values_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.attention_vector = self.add_weight(
            name="attention_vector",
            shape=(self.units,),
            initializer=self.kernel_initializer,
        )
        if self.normalize:
            self.scale = self.add_weight(
                name="scale",
                shape=(),
                initializer=keras.initializers.Constant(
                    math.sqrt(1.0 / self.units)
                ),
            )
            self.bias = self.add_weight(
                name="bias", shape=(self.units,), initializer="zeros"
            )

    def memory_keys(self, values):
        """`W₂ h̄_s`, `(batch, source_length, units)`."""
        return ops.matmul(values, self.value_kernel)

    def scores_from_keys(self, query, keys):
        """Scores of shape `(batch, query_length, source_length)`."""
        projected_query = self.project_query(query, self.query_kernel)
        hidden = ops.expand_dims(projected_query, 2) + ops.expand_dims(keys, 1)
        attention_vector = ops.convert_to_tensor(self.attention_vector)
        if self.normalize:
            hidden = hidden + self.bias
            attention_vector = (
                self.scale
                * attention_vector
                * ops.rsqrt(ops.sum(ops.square(attention_vector)))
            )
        return ops.sum(ops.tanh(hidden) * attention_vector, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "normalize": self.normalize,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
