"""Multi-head attention with a key/value cache for incremental decoding."""

import math
import string

import keras
from keras import ops

from tfnlp.layers.dropout import Dropout
from tfnlp.layers.masking import causal_mask, masked_softmax, merge_masks
from tfnlp.layers.rotary_embedding import RotaryEmbedding


@keras.saving.register_keras_serializable(package="tfnlp")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention.

    A drop-in numerical match for `keras.layers.MultiHeadAttention` on
    `(batch, length, features)` inputs: the same sublayers (`query`, `key`,
    `value`, `attention_output` `EinsumDense`s), the same variables in the
    same order and shapes, so `layer.set_weights(keras_layer.get_weights())`
    reproduces its outputs. One degenerate case differs: a query row whose
    every key is masked gets all-zero attention weights here (as in Keras'
    explicit path, taken with `return_attention_scores=True`), while Keras'
    fused path (taken without it) gives such a row other weights. tfnlp has its own layer (rather than subclassing
    Keras') to add a key/value cache for incremental decoding, with the causal
    mask offset by the cache position, and to keep the masking rules of every
    tfnlp attention layer in one place (`tfnlp.layers.masking`).

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value; defaults to `key_dim`.
        dropout: dropout rate on the attention weights (training only).
        use_bias: whether the projections have biases.
        output_shape: size of the output's last dimension (an int or a
            tuple); defaults to the query's last dimension.
        kernel_initializer: initializer of the projection kernels.
        bias_initializer: initializer of the projection biases.
        output_kernel_initializer: initializer of the output projection's
            kernel, if it differs ("zeros": each block starts as the
            identity, as in the modded-nanogpt speedrun).
        rotary_max_wavelength: turn queries and keys by their positions
            (`RotaryEmbedding` with this longest wavelength) before the dot
            product; None for no rotation. For self-attention.
        query_key_norm: RMS-normalize each head's queries and keys (with a
            learned scale) before the dot product, which bounds the
            attention logits (QK-norm).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, target_length, query_features)`.
        value: `(batch, source_length, value_features)`. May be `None` only
            when `cache` is given without `cache_update_index`.
        key: `(batch, source_length, key_features)`; defaults to `value`.
        attention_mask: boolean `(batch, target_length, source_length)`
            (or broadcastable), `True` = may attend.
        use_causal_mask: whether query position `i` may only attend to key
            positions `<= i` (offset by `cache_update_index` when caching).
        return_attention_scores: whether to also return the attention
            weights, shape `(batch, num_heads, target_length, source_length)`.
        training: whether dropout is active.
        cache: optional `(batch, 2, max_length, num_heads, key_dim)` tensor of
            projected keys (index 0) and values (index 1). With
            `cache_update_index`, the projections of `key`/`value` are written
            into the cache at that position and attention runs over the whole
            cache; without it, the cache is used as it is (for example the
            encoder's keys and values in cross-attention).
        cache_update_index: int or scalar tensor, where to write into `cache`.

    Returns:
        The output `(batch, target_length, output_dim)`; if
        `return_attention_scores`, then also the attention weights; if `cache`
        is given, then also the updated cache, in that order, as a tuple.

    Example:

    >>> import numpy as np
    >>> layer = MultiHeadAttention(num_heads=2, key_dim=8)
    >>> target = np.random.rand(2, 5, 16).astype("float32")
    >>> source = np.random.rand(2, 7, 16).astype("float32")
    >>> outputs, scores = layer(target, source, return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(scores.shape)
    ((2, 5, 16), (2, 2, 5, 7))

    References:
        - [Vaswani et al., 2017. Attention Is All You Need, section 3.2.2](
          https://arxiv.org/abs/1706.03762)
        - [Henry et al., 2020. Query-Key Normalization for Transformers](
          https://arxiv.org/abs/2010.04245)
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        output_kernel_initializer=None,
        rotary_max_wavelength=None,
        query_key_norm=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim if value_dim is not None else key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        if isinstance(output_shape, int):
            output_shape = (output_shape,)
        self.output_shape = (
            tuple(output_shape) if output_shape is not None else None
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.output_kernel_initializer = (
            None if output_kernel_initializer is None
            else keras.initializers.get(output_kernel_initializer))
        self.rotary_max_wavelength = rotary_max_wavelength
        self.query_key_norm = query_key_norm
        self.attention_dropout = Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )
        self.rotary = None
        if rotary_max_wavelength is not None:
            self.rotary = RotaryEmbedding(rotary_max_wavelength, dtype=self.dtype_policy,
                                          name="rotary")

    def _projection(self, equation, output_shape, bias_axes, name, kernel_initializer=None):
        kernel_initializer = kernel_initializer or self.kernel_initializer
        return keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=kernel_initializer.__class__.from_config(
                kernel_initializer.get_config()
            ),
            bias_initializer=self.bias_initializer.__class__.from_config(
                self.bias_initializer.get_config()
            ),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        if value_shape is None:
            value_shape = query_shape
        key_shape = value_shape if key_shape is None else key_shape
        for name, shape in (
            ("query", query_shape),
            ("value", value_shape),
            ("key", key_shape),
        ):
            if len(shape) != 3:
                raise ValueError(
                    f"`{name}` must have shape (batch, length, features). "
                    f"Received shape {tuple(shape)}."
                )
        self.query_dense = self._projection(
            "abc,cde->abde", (None, self.num_heads, self.key_dim), "de", "query"
        )
        self.query_dense.build(query_shape)
        self.key_dense = self._projection(
            "abc,cde->abde", (None, self.num_heads, self.key_dim), "de", "key"
        )
        self.key_dense.build(key_shape)
        self.value_dense = self._projection(
            "abc,cde->abde", (None, self.num_heads, self.value_dim), "de", "value"
        )
        self.value_dense.build(value_shape)
        output_shape = self.output_shape or (query_shape[-1],)
        output_letters = string.ascii_lowercase[4 : 4 + len(output_shape)]
        self.output_dense = self._projection(
            f"abcd,cd{output_letters}->ab{output_letters}",
            (None, *output_shape),
            output_letters,
            "attention_output",
            self.output_kernel_initializer,
        )
        self.output_dense.build(
            (query_shape[0], query_shape[1], self.num_heads, self.value_dim)
        )
        if self.query_key_norm:
            head_shape = (None, None, self.num_heads, self.key_dim)
            self.query_norm = keras.layers.RMSNormalization(
                epsilon=1e-6, dtype=self.dtype_policy, name="query_norm")
            self.query_norm.build(head_shape)
            self.key_norm = keras.layers.RMSNormalization(
                epsilon=1e-6, dtype=self.dtype_policy, name="key_norm")
            self.key_norm.build(head_shape)

    def _positioned(self, projected, norm, start_index):
        """Projected queries or keys, normalized and turned as configured."""
        if self.query_key_norm:
            projected = norm(projected)
        if self.rotary is not None:
            projected = self.rotary(projected, start_index=start_index)
        return projected

    def _project_keys_and_values(self, key, value, cache, cache_update_index):
        key_norm = getattr(self, "key_norm", None)
        start_index = 0 if cache_update_index is None else cache_update_index
        if cache is None:
            return (self._positioned(self.key_dense(key), key_norm, start_index),
                    self.value_dense(value), None)
        if self.key_dim != self.value_dim:
            raise ValueError(
                "A key/value cache needs `key_dim == value_dim`; this layer has "
                f"key_dim={self.key_dim} and value_dim={self.value_dim}."
            )
        if cache_update_index is not None:
            cache = _write_positions(
                cache, self._positioned(self.key_dense(key), key_norm, start_index),
                self.value_dense(value), cache_update_index
            )
        return cache[:, 0, ...], cache[:, 1, ...], cache

    def call(
        self,
        query,
        value=None,
        key=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        cache=None,
        cache_update_index=None,
    ):
        if value is None and (cache is None or cache_update_index is not None):
            raise ValueError(
                "`value` is required, unless a complete `cache` is passed "
                "without `cache_update_index`."
            )
        if key is None:
            key = value
        projected_query = self._positioned(
            self.query_dense(query), getattr(self, "query_norm", None),
            0 if cache_update_index is None else cache_update_index)
        projected_key, projected_value, cache = self._project_keys_and_values(
            key, value, cache, cache_update_index
        )
        if use_causal_mask:
            start_index = 0 if cache_update_index is None else cache_update_index
            attention_mask = merge_masks(
                attention_mask,
                causal_mask(
                    ops.shape(projected_query)[1],
                    ops.shape(projected_key)[1],
                    start_index,
                ),
            )

        # Scale the query before the dot product, as Keras does, so that the
        # two layers round identically.
        projected_query = ops.multiply(
            projected_query,
            ops.cast(1.0 / math.sqrt(float(self.key_dim)), projected_query.dtype),
        )
        # (batch, heads, target, source)
        attention_logits = ops.einsum(
            "aecd,abcd->acbe", projected_key, projected_query
        )
        if attention_mask is not None:
            attention_mask = ops.expand_dims(
                ops.cast(attention_mask, "bool"), axis=-3
            )
        attention_scores = masked_softmax(attention_logits, attention_mask)
        dropped_scores = self.attention_dropout(attention_scores, training=training)
        attention_output = ops.einsum(
            "acbe,aecd->abcd", dropped_scores, projected_value
        )
        outputs = (self.output_dense(attention_output),)
        if return_attention_scores:
            outputs += (attention_scores,)
        if cache is not None:
            outputs += (cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": self.output_shape,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "output_kernel_initializer": (
                    None if self.output_kernel_initializer is None
                    else keras.initializers.serialize(self.output_kernel_initializer)),
                "rotary_max_wavelength": self.rotary_max_wavelength,
                "query_key_norm": self.query_key_norm,
            }
        )
        return config


def _write_positions(cache, keys, values, index):
    """`cache` (batch, 2, max_length, heads, head_dim) with `keys` and
    `values` (batch, length, heads, head_dim) written from position `index`
    on.

    One position (incremental decoding) is written with a scatter of the
    batch's rows: inside an XLA loop the scatter updates the cache in
    place, where a select or a split-and-restack of keys and values would
    copy the whole cache at every step, and it is a stock TensorFlow op
    (`TensorScatterUpdate`), which TensorFlow Serving's graph executor runs;
    `ops.slice_update` with a tensor index becomes `XlaDynamicUpdateSlice`,
    which it lacks. Several positions (a prefill) are one slice update."""
    keys = ops.cast(keys, cache.dtype)
    values = ops.cast(values, cache.dtype)
    if keys.shape[1] != 1:
        return ops.slice_update(cache, [0, 0, index, 0, 0], ops.stack([keys, values], axis=1))
    batch_size = ops.shape(cache)[0]
    rows = ops.repeat(ops.arange(batch_size, dtype="int32"), 2)
    parts = ops.tile(ops.arange(2, dtype="int32"), [batch_size])
    positions = ops.zeros_like(rows) + ops.cast(index, "int32")
    updates = ops.reshape(
        ops.stack([keys[:, 0], values[:, 0]], axis=1), (-1,) + tuple(cache.shape[3:])
    )
    return ops.scatter_update(cache, ops.stack([rows, parts, positions], axis=1), updates)
