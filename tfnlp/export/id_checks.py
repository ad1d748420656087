"""In-graph range checks of the ids an exported signature takes.

An embedding lookup does not reject every id outside its table: Keras'
`take` wraps a negative id around to the end of the table (-1 is the last
token), so a client's bad id would give an answer instead of an error. The
ids signatures check their ids with `tf.debugging` asserts, core ops that
every SavedModel loader (TensorFlow Serving included) runs, and fail with
`InvalidArgumentError` naming the input and the range.
"""

import tensorflow as tf


def check_ids(ids, size, name):
    """`ids`, checked to lie in `[0, size)` when the graph runs.

    Args:
        ids: an integer tensor of ids.
        size: how many ids there are (the rows of the embedding table).
        name: the input's name, for the error message.

    Returns:
        `ids`, depending on the checks.

    Example:

    >>> ids = check_ids(tf.constant([[2, 0]]), size=3, name="input_ids")
    >>> ids.numpy().tolist()
    [[2, 0]]
    >>> try:
    ...     check_ids(tf.constant([[-1]]), size=3, name="input_ids")
    ... except tf.errors.InvalidArgumentError:
    ...     print("rejected")
    rejected
    """
    expected = f"{name} must hold ids from 0 to {size - 1}"
    checks = [
        tf.debugging.assert_non_negative(ids, message=f"{expected}; it has a negative one"),
        tf.debugging.assert_less(ids, tf.cast(size, ids.dtype),
                                 message=f"{expected}; it has one of {size} or more"),
    ]
    with tf.control_dependencies(checks):
        return tf.identity(ids)
