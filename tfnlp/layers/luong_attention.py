"""Luong (multiplicative) attention for encoder-decoder models (2015)."""

import keras
from keras import ops

from tfnlp.layers.global_attention import GlobalAttention

LUONG_SCORES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="tfnlp")
class LuongAttention(GlobalAttention):
    """Global attention of a decoder state over encoder outputs (Luong et al.).

    Each decoder state h_t (the query) is compared with every encoder output
    h̄_s (the values, which serve as both keys and values) by a score, the
    scores are normalised with a softmax over the source positions, and the
    context vector is the weighted sum of the values. Three scores from
    section 3.1 of the paper are available:

    - `"dot"`: score(h_t, h̄_s) = h_tᵀ h̄_s. No parameters; the query and
      the values must have the same last dimension. Equal to
      `keras.layers.Attention()`.
    - `"general"`: score(h_t, h̄_s) = h_tᵀ W_a h̄_s, with the weight
      `attention_kernel` W_a of shape `(query_units, value_units)` and no
      bias.
    - `"concat"`: score(h_t, h̄_s) = v_aᵀ tanh(W_a [h_t; h̄_s]), where W_a
      maps the concatenation to `value_units` hidden units. W_a is stored as
      its query part `query_kernel` `(query_units, value_units)` and its value
      part `value_kernel` `(value_units, value_units)`, so each side is
      projected once and the sum is broadcast over all (query, source) pairs
      instead of concatenating every pair. v_a is `attention_vector`
      `(value_units,)`.

    With `scale=True` a learned scalar (initialised to 1) multiplies the
    score, the "scaled Luong" variant of TF-Addons
    `LuongAttention(scale=True)` and `keras.layers.Attention(use_scale=True)`.
    The weight is named `scale` and held in the attribute `scale_weight`
    (the attribute `scale` is the constructor flag).

    Masked source positions get exactly zero weight and the remaining weights
    sum to one; a query whose every source position is masked gets all-zero
    weights and a zero context.

    Args:
        score: one of `"dot"`, `"general"` or `"concat"`.
        scale: whether to multiply the score by a learned scalar.
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
    >>> query = np.random.rand(2, 8).astype("float32")
    >>> values = np.random.rand(2, 5, 8).astype("float32")
    >>> mask = np.array([[True] * 5, [True, True, True, False, False]])
    >>> attention = LuongAttention(score="general")
    >>> context, attention_weights = attention(query, values, mask=mask)
    >>> tuple(context.shape), tuple(attention_weights.shape)
    ((2, 8), (2, 5))

    References:
        - [Luong et al., 2015. Effective Approaches to Attention-based Neural
          Machine Translation, section 3.1](https://arxiv.org/abs/1508.04025)
    """

    def __init__(
        self,
        score="dot",
        scale=False,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if score not in LUONG_SCORES:
            raise ValueError(
                "`score` must be one of "
                f"{', '.join(repr(name) for name in LUONG_SCORES)}. "
                f"Received: score={score!r}."
            )
        self.score = score
        self.scale = bool(scale)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, query_shape, values_shape):
        query_units = query_shape[-1]
        value_units = values_shape[-1]
        if self.score == "dot" and query_units != value_units:
            raise ValueError(
                'The "dot" score needs the query and the values to have the '
                f"same last dimension. Received: query units {query_units}, "
                f"value units {value_units}. Use score=\"general\" or "
                '"concat" to compare vectors of different sizes.'
            )
        if self.score == "general":
            self.attention_kernel = self.add_weight(
                name="attention_kernel",
                shape=(query_units, value_units),
                initializer=self.kernel_initializer,
            )
        elif self.score == "concat":
            self.query_kernel = self.add_weight(
                name="query_kernel",
                shape=(query_units, value_units),
                initializer=self.kernel_initializer,
            )
            self.value_kernel = self.add_weight(
                name="value_kernel",
                shape=(value_units, value_units),
                initializer=self.kernel_initializer,
            )
            self.attention_vector = self.add_weight(
                name="attention_vector",
                shape=(value_units,),
                initializer=self.kernel_initializer,
            )
        if self.scale:
            self.scale_weight = self.add_weight(
                name="scale", shape=(), initializer="ones"
            )

    def memory_keys(self, values):
        """The values (`"dot"`), `h̄_s W_aᵀ` (`"general"`, so a step's score
        is one matmul) or `W_value h̄_s` (`"concat"`)."""
        if self.score == "general":
            return ops.matmul(values, ops.transpose(self.attention_kernel))
        if self.score == "concat":
            return ops.matmul(values, self.value_kernel)
        return values

    def scores_from_keys(self, query, keys):
        """Scores of shape `(batch, query_length, source_length)`."""
        if self.score == "concat":
            # W_a [h_t; h̄_s] = W_query h_t + W_value h̄_s, broadcast over
            # (query_length, source_length).
            projected_query = self.project_query(query, self.query_kernel)
            hidden = ops.tanh(ops.expand_dims(projected_query, 2) + ops.expand_dims(keys, 1))
            scores = ops.sum(hidden * self.attention_vector, axis=-1)
        else:
            scores = ops.matmul(query, ops.swapaxes(keys, -1, -2))
        if self.scale:
            scores = scores * ops.cast(self.scale_weight, scores.dtype)
        return scores

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "scale": self.scale,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
            }
        )
        return config
