"""Mask helpers shared by the attention layers.

Every mask in tfnlp is boolean with `True` meaning "may attend" (the Keras
convention). These helpers are plain functions over `keras.ops`, so they run
on any Keras backend.
"""

import keras
from keras import ops


def large_negative_number(dtype):
    """The value that masked scores are set to before a softmax.

    Finite on purpose (not -inf), so a row whose every position is masked does
    not turn into NaN; such rows are zeroed by `masked_softmax` instead.
    Within float16's range (and bfloat16's) for those dtypes.

    Args:
        dtype: the scores' dtype, in any backend's spelling (`"float16"`,
            `tf.float16`, `jnp.float16`).
    """
    if keras.backend.standardize_dtype(dtype) in ("float16", "bfloat16"):
        return -3e4
    return -1e9


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` where positions with `mask == False` get weight 0.

    Masked positions get exactly zero weight and the rest sum to one. A row
    with every position masked gets all-zero weights (not a uniform
    distribution), so it contributes nothing downstream.

    Args:
        scores: float tensor of attention logits.
        mask: optional boolean tensor broadcastable to `scores`; `True` means
            the position may be attended to.
        axis: the axis to normalise over.

    Returns:
        A tensor of the same shape as `scores`.
    """
    if mask is None:
        return ops.softmax(scores, axis=axis)
    mask = ops.cast(mask, "bool")
    scores = ops.where(mask, scores, large_negative_number(scores.dtype))
    weights = ops.softmax(scores, axis=axis)
    return ops.where(mask, weights, ops.zeros_like(weights))


def causal_mask(query_length, key_length, start_index=0):
    """A `(1, query_length, key_length)` lower-triangular boolean mask.

    Query position `i` sits at absolute position `start_index + i` and may
    attend to key positions `j <= start_index + i`. With `start_index=0` and
    equal lengths this is the usual causal mask; during cached decoding
    `start_index` is the index of the first new token in the cache.
    """
    query_positions = ops.arange(query_length, dtype="int32") + ops.cast(
        start_index, "int32"
    )
    key_positions = ops.arange(key_length, dtype="int32")
    mask = ops.greater_equal(
        ops.expand_dims(query_positions, 1), ops.expand_dims(key_positions, 0)
    )
    return ops.expand_dims(mask, 0)


def merge_masks(*masks):
    """Logical AND of the masks that are not None (None if all are None)."""
    merged = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged


def padding_to_attention_mask(padding_mask):
    """Turns a `(batch, key_length)` padding mask into `(batch, 1, key_length)`.

    `True` (or 1) marks a real token. The result broadcasts against
    `(batch, query_length, key_length)` attention masks.
    """
    if padding_mask is None:
        return None
    return ops.expand_dims(ops.cast(padding_mask, "bool"), axis=1)
