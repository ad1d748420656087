"""Scaled dot-product attention, the core of every Transformer layer."""

from keras import ops

from tfnlp.layers.masking import masked_softmax


def scaled_dot_product_attention(query, key, value, mask=None):
    """Computes softmax(Q Kᵀ / sqrt(d_k)) V.

    Written with `keras.ops` so it runs on any Keras backend. The leading
    dimensions (batch, heads, ...) are arbitrary but must match between the
    three inputs.

    Args:
        query: tensor of shape `(..., query_length, depth)`.
        key: tensor of shape `(..., key_length, depth)`.
        value: tensor of shape `(..., key_length, value_depth)`.
        mask: optional boolean tensor broadcastable to
            `(..., query_length, key_length)`; `True` means the query may
            attend to that key. Masked keys get exactly zero weight; a query
            with no visible key gets all-zero weights and a zero output.

    Returns:
        `(outputs, attention_scores)`: outputs of shape
        `(..., query_length, value_depth)` and the attention weights (after
        the softmax) of shape `(..., query_length, key_length)`.

    Example:

    >>> import numpy as np
    >>> query = np.ones((2, 4, 8), "float32")
    >>> key = value = np.random.rand(2, 6, 8).astype("float32")
    >>> outputs, scores = scaled_dot_product_attention(query, key, value)
    >>> tuple(outputs.shape), tuple(scores.shape)
    ((2, 4, 8), (2, 4, 6))

    References:
        - [Vaswani et al., 2017. Attention Is All You Need, section 3.2.1](
          https://arxiv.org/abs/1706.03762)
    """
    depth = query.shape[-1]
    if depth is None:
        depth = ops.shape(query)[-1]
    logits = ops.matmul(query, ops.swapaxes(key, -1, -2))
    logits = logits / ops.cast(ops.sqrt(ops.cast(depth, "float32")), logits.dtype)
    attention_scores = masked_softmax(logits, mask, axis=-1)
    outputs = ops.matmul(attention_scores, value)
    return outputs, attention_scores
