"""Rows of token ids for detokenizing, whatever the ids' rank and form.

`detokenize_any_rank` is `tokenize_any_rank`'s counterpart
(`tfnlp.text.bert_tokenizer`): it gives a function that detokenizes a 2-D
RaggedTensor of ids, one string per row, ids of any rank, dense (padded)
or ragged. `ids_before_end` cuts each row at its first end id and leaves
out padding, as generated sequences want.
"""

import tensorflow as tf


def detokenize_any_rank(ids, detokenize_rows):
    """Detokenizes ids of rank 1 or more, one string per row of the last axis.

    Args:
        ids: integer ids, a Tensor or a RaggedTensor, the tokens of a
            sequence along the last axis.
        detokenize_rows: a function from a 2-D int32 RaggedTensor to a 1-D
            string Tensor with one string per row.

    Returns:
        A string tensor of the shape of `ids` without its last axis (a
        scalar for rank-1 ids; ragged where `ids` is ragged above its last
        axis).

    Raises:
        ValueError: `ids` has an unknown rank, or rank 0.

    Example:

    >>> join = lambda rows: tf.strings.reduce_join(tf.strings.as_string(rows), axis=-1)
    >>> detokenize_any_rank(tf.constant([[[1, 2]], [[3, 4]]]), join).numpy().tolist()
    [[b'12'], [b'34']]
    """
    if isinstance(ids, tf.RaggedTensor):
        if ids.shape.rank > 2:
            return ids.with_values(detokenize_any_rank(ids.values, detokenize_rows))
        return detokenize_rows(tf.cast(ids, tf.int32))
    ids = tf.cast(tf.convert_to_tensor(ids), tf.int32)
    rank = ids.shape.rank
    if rank is None or rank == 0:
        raise ValueError("detokenize needs ids of known rank, 1 or more.")
    if rank == 1:
        return detokenize_rows(tf.RaggedTensor.from_tensor(ids[tf.newaxis]))[0]
    shape = tf.shape(ids)
    rows = tf.RaggedTensor.from_tensor(tf.reshape(ids, tf.stack([-1, shape[-1]])))
    return tf.reshape(detokenize_rows(rows), shape[:-1])


def ids_before_end(rows, end_id, pad_id):
    """Each row's ids before its first `end_id`, without `pad_id`.

    Args:
        rows: a 2-D int32 RaggedTensor.
        end_id: the id that ends a sequence (it and what follows are cut).
        pad_id: an id left out wherever it is; None keeps every id.

    Returns:
        A 2-D int32 RaggedTensor.

    Example:

    >>> ids_before_end(tf.ragged.constant([[5, 0, 6, 2, 7], [8]]), 2, 0).to_list()
    [[5, 6], [8]]
    """
    values = rows.values
    row_ids = tf.cast(rows.value_rowids(), tf.int32)
    starts = tf.cast(rows.row_starts(), tf.int32)
    positions = tf.range(tf.size(values, out_type=tf.int32)) - tf.gather(starts, row_ids)
    end_positions = tf.where(tf.equal(values, end_id), positions, tf.int32.max)
    first_end = tf.math.unsorted_segment_min(
        end_positions, row_ids, tf.cast(rows.nrows(), tf.int32))
    keep = positions < tf.gather(first_end, row_ids)
    if pad_id is not None:
        keep = keep & tf.not_equal(values, pad_id)
    return tf.ragged.boolean_mask(rows, rows.with_values(keep))


def append_to_rows(rows, value):
    """`rows` (a 2-D RaggedTensor) with `value` appended to each row.

    Example:

    >>> append_to_rows(tf.ragged.constant([[5, 6], []]), 2).to_list()
    [[5, 6, 2], [2]]
    """
    end = tf.fill(tf.stack([rows.nrows(), 1]), tf.constant(value, rows.dtype))
    return tf.concat([rows, tf.RaggedTensor.from_tensor(end)], axis=1)
