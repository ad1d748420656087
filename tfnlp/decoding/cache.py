"""Tiling and reordering the rows of a decoding cache."""

import keras
from keras import ops


def tile_cache(cache, times):
    """Repeats every cache leaf `times` times along axis 0, batch-major.

    Row `b` of each leaf becomes rows `b * times` to `b * times + times - 1`:
    the layout beam search (one row per beam) and sampling several sequences
    per example use.

    Args:
        cache: a nested structure of tensors with the batch as axis 0.
        times: Python int.

    Returns:
        The cache with `batch * times` rows.

    Example:

    >>> import numpy as np
    >>> from tfnlp.decoding import tile_cache
    >>> cache = {"state": np.array([[1.0], [2.0]], "float32")}
    >>> np.asarray(tile_cache(cache, 2)["state"])[:, 0].tolist()
    [1.0, 1.0, 2.0, 2.0]
    """
    if times == 1:
        return cache
    return keras.tree.map_structure(lambda leaf: ops.repeat(leaf, times, axis=0), cache)


def reorder_cache(cache, rows):
    """Gathers the rows `rows` of every cache leaf (axis 0).

    Beam search calls it after each step with, for each new beam, the row of
    the beam it extends. It is one `take` (a stock gather op) per leaf.

    Args:
        cache: a nested structure of tensors with the rows as axis 0.
        rows: int32 `(rows,)` indices into axis 0.

    Returns:
        The reordered cache.

    Example:

    >>> import numpy as np
    >>> from tfnlp.decoding import reorder_cache
    >>> cache = (np.array([10, 11, 12], "int32"),)
    >>> np.asarray(reorder_cache(cache, np.array([2, 2, 0]))[0]).tolist()
    [12, 12, 10]
    """
    return keras.tree.map_structure(lambda leaf: ops.take(leaf, rows, axis=0), cache)
