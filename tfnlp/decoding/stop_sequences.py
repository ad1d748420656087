"""Stop sequences: a row stops once its generated tokens end with its own
sequence of ids (e.g. the ids of a stop string), checked at every step."""

from keras import ops


def ends_with_stop_sequence(sequences, last_position, stop_sequences, num_generated):
    """Which rows' generated tokens end with their stop sequence.

    Row `r` matches when its `L = stop_sequences.lengths[r] > 0` tokens at
    positions `last_position - L + 1 .. last_position` equal its stop
    sequence and all of them were generated (`L <= num_generated[r]`): a
    stop sequence that starts inside the prompt does not count, as it is
    not in the generated text. With static shapes: each row gathers the
    `width` positions ending at its own `L`.

    Args:
        sequences: int32 `(rows, length)`; positions `0..last_position`
            are filled.
        last_position: int32 scalar, the position of the newest token.
        stop_sequences: the rows' `StopSequences`.
        num_generated: int32 `(rows,)`, how many tokens each row has
            generated, the newest included (<= 0 inside the prompt).

    Returns:
        bool `(rows,)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from tfnlp.decoding.contract import StopSequences
    >>> sequences = np.array([[7, 4, 5, 6], [7, 4, 5, 6], [7, 5, 6, 5]], "int32")
    >>> stops = StopSequences(np.array([[5, 6], [4, 0], [6, 5]], "int32"),
    ...                       np.array([2, 1, 2], "int32"))
    >>> matched = ends_with_stop_sequence(sequences, 3, stops, np.array([3, 3, 1]))
    >>> ops.convert_to_numpy(matched).tolist()  # row 2's 6 is a prompt token
    [True, False, False]
    """
    width = stop_sequences.ids.shape[1]
    lengths = stop_sequences.lengths
    offsets = ops.arange(width, dtype="int32")[None, :]
    positions = last_position + 1 - lengths[:, None] + offsets
    positions = ops.clip(positions, 0, sequences.shape[1] - 1)
    recent = ops.take_along_axis(sequences, positions, axis=1)
    inside = offsets < lengths[:, None]
    equal = ops.all(ops.logical_or(recent == stop_sequences.ids, ops.logical_not(inside)),
                    axis=1)
    return ops.logical_and(equal, ops.logical_and(lengths > 0, lengths <= num_generated))
