"""Gathering the rows of a sequence at given positions, per example."""

from keras import ops


def gather_positions(sequence, positions):
    """The rows of `sequence` at `positions`, per example.

    One gather of the rows of the flattened `(batch * length, ...)` tensor,
    as google-research/bert's `gather_indexes`. The BERT masked-LM head
    reads its positions with it, and `TransformerEncoderBlock` its
    `query_positions`.

    Args:
        sequence: `(batch, length, ...)`.
        positions: int `(batch, P)`, each in `[0, length)`.

    Returns:
        `(batch, P, ...)`: `result[b, p] = sequence[b, positions[b, p]]`.

    Example:

    >>> import keras
    >>> import numpy as np
    >>> sequence = np.arange(12, dtype="float32").reshape(2, 3, 2)
    >>> gathered = gather_positions(sequence, np.array([[2, 0], [1, 1]]))
    >>> keras.ops.convert_to_numpy(gathered).tolist()
    [[[4.0, 5.0], [0.0, 1.0]], [[8.0, 9.0], [8.0, 9.0]]]
    """
    sequence = ops.convert_to_tensor(sequence)
    positions = ops.cast(positions, "int32")
    shape = ops.shape(sequence)
    batch, length = shape[0], shape[1]
    trailing = tuple(shape[2:])
    offsets = ops.expand_dims(ops.arange(batch, dtype="int32") * length, -1)
    flat_positions = ops.reshape(positions + offsets, (-1,))
    flat_sequence = ops.reshape(sequence, (-1, *trailing))
    gathered = ops.take(flat_sequence, flat_positions, axis=0)
    return ops.reshape(gathered, (batch, -1, *trailing))
