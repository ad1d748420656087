"""Batches of examples of similar length, padded only to their bucket's width.

Fine-tuning data is mostly short: SST-2's sentences average about 13
WordPieces, so batches padded to `max_seq_length=128` spend most of every
step on padding. Examples are grouped by their token count into buckets
of widths such as 16, 32, 64 and 128 (`tf.data`'s `group_by_window`),
and each batch is cut to the width of its
bucket: a few fixed shapes, so an XLA-compiled step compiles once per
width and then reuses it.

The batches are still shuffled (before bucketing) and, in training, all
of `batch_size` examples; evaluation keeps every example (the last batch
of a bucket may be short).
"""

import numpy as np
import tensorflow as tf

from tfnlp.command_line import UsageError

DEFAULT_BOUNDARIES = "16,32,64"


def bucket_widths(boundaries, max_seq_length):
    """The sorted widths of the buckets: the `boundaries` below
    `max_seq_length` (a comma-separated string or a list of ints), then
    `max_seq_length` itself.

    Example:

    >>> bucket_widths("16,32,64", 128)
    (16, 32, 64, 128)
    >>> bucket_widths("64,16,256", 48)
    (16, 48)
    """
    if isinstance(boundaries, str):
        try:
            boundaries = [int(part) for part in boundaries.split(",") if part.strip()]
        except ValueError:
            raise UsageError(
                f"--bucket_boundaries={boundaries!r} is not a comma-separated list of "
                "token counts. Give for example --bucket_boundaries=16,32,64, or an "
                "empty value to pad every batch to --max_seq_length."
            ) from None
    if any(width < 1 for width in boundaries):
        raise UsageError(f"Bucket boundaries must be positive token counts; got {boundaries}.")
    return tuple(sorted({width for width in boundaries if width < max_seq_length})
                 + [max_seq_length])


def bucket_batches(dataset, length_of, widths, batch_size, drop_remainder):
    """`dataset`'s elements batched (`ragged_batch`) with others of the
    same bucket, in the order each bucket fills up.

    Args:
        dataset: a `tf.data.Dataset` of single examples (ragged components
            allowed).
        length_of: a function of an element (its components as arguments)
            giving its int32 token count.
        widths: `bucket_widths(...)`; an example of `n` tokens goes to the
            narrowest bucket of width `>= n`.
        batch_size: examples per batch.
        drop_remainder: whether a bucket's last incomplete batch is dropped.
    """
    width_options = tf.constant(widths, tf.int32)

    def bucket(*element):
        length = tf.cast(length_of(*element), tf.int32)
        return tf.cast(tf.searchsorted(width_options, length[None], side="left")[0], tf.int64)

    return dataset.group_by_window(
        key_func=bucket,
        reduce_func=lambda _, window: window.ragged_batch(batch_size,
                                                          drop_remainder=drop_remainder),
        window_size=batch_size,
    )


def bucket_batch_count(lengths, widths, batch_size, drop_remainder):
    """How many batches `bucket_batches` makes of one pass over examples
    of `lengths` tokens (numpy): `group_by_window` leaves `tf.data`
    without the count, and Keras warns that an evaluation "ran out of
    data" when it ends on a dataset of unknown length."""
    per_bucket = np.bincount(np.searchsorted(widths, np.asarray(lengths), side="left"))
    if drop_remainder:
        return int(np.sum(per_bucket // batch_size))
    return int(np.sum(-(-per_bucket // batch_size)))


def trim_to_bucket(features, widths, *labels):
    """Cuts a batch to its bucket's width.

    The width is the narrowest of `widths` that holds the batch's longest
    example (by `features["input_mask"]`); every `(batch, max_seq_length)`
    tensor in `features` and `labels` is cut to it, other tensors (a
    classification label, span positions) are left as they are.

    Returns:
        `(features, *labels)`, cut.

    Example:

    >>> mask = tf.constant([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]])
    >>> features, = trim_to_bucket({"input_mask": mask}, (4, 8))
    >>> features["input_mask"].shape.as_list()
    [2, 4]
    """
    lengths = tf.reduce_sum(tf.cast(features["input_mask"], tf.int32), axis=1)
    width_options = tf.constant(widths, tf.int32)
    bucket = tf.searchsorted(width_options, tf.reduce_max(lengths)[None], side="left")[0]
    width = tf.gather(width_options, tf.minimum(bucket, len(widths) - 1))
    full = features["input_mask"].shape[1]

    def cut(tensor):
        if len(tensor.shape) == 2 and tensor.shape[1] == full:
            return tensor[:, :width]
        return tensor

    return (tf.nest.map_structure(cut, features),
            *(tf.nest.map_structure(cut, label) for label in labels))


def token_counts(tokenizer, texts, pairs, max_seq_length, chunk=4096):
    """int32 numpy `(examples,)`: the tokens of each packed example,
    `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, at most `max_seq_length`
    (what `tfnlp.text.pack_inputs` keeps)."""
    counts = []
    for begin in range(0, len(texts), chunk):
        part = texts[begin:begin + chunk]
        count = tokenizer.tokenize(tf.constant(part)).row_lengths().numpy() + 2
        part_pairs = pairs[begin:begin + chunk]
        if any(part_pairs):
            count = count + tokenizer.tokenize(tf.constant(part_pairs)).row_lengths().numpy() + 1
        counts.append(np.minimum(count, max_seq_length))
    return (np.concatenate(counts) if counts else np.zeros([0], np.int64)).astype(np.int32)
