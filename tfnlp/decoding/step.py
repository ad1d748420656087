"""The decoding loop shared by greedy search and sampling: one hypothesis per row."""

from keras import ops

from tfnlp.decoding.constraints import next_token_log_probs
from tfnlp.decoding.contract import match_cache


def start_sequences(start_ids, max_length):
    """int32 `(rows, max_length + 1)`: the start token, then zeros."""
    rows = ops.shape(start_ids)[0]
    return ops.concatenate(
        [start_ids[:, None], ops.zeros((rows, max_length), dtype="int32")], axis=1
    )


def take_column(sequences, index):
    """`sequences[:, index]` for a scalar tensor `index`."""
    return ops.reshape(ops.take(sequences, ops.reshape(index, (1,)), axis=1), (-1,))


def write_column(sequences, index, tokens):
    """`sequences` with `tokens` (rows,) written at column `index`.

    A select rather than `keras.ops.slice_update`, which TensorFlow runs as
    `XlaDynamicUpdateSlice`, an op outside `tf.raw_ops` that a SavedModel
    should not depend on.
    """
    columns = ops.arange(sequences.shape[1], dtype="int32")
    return ops.where(columns[None, :] == index, ops.cast(tokens, "int32")[:, None], sequences)


def best_tokens(scores):
    """The highest-scoring token of each row, the lowest id on ties."""
    return ops.cast(ops.top_k(scores, 1)[1][:, 0], "int32")


def decode_one_per_row(
    step_fn,
    cache,
    start_ids,
    end_id,
    max_length,
    max_lengths,
    choose_tokens,
    min_length=0,
    no_repeat_ngram_size=0,
):
    """Extends one hypothesis per row until `end_id` or its maximum length.

    Args:
        step_fn, cache, start_ids, end_id, max_length, max_lengths: as in the
            decoder contract (`tfnlp.decoding.contract`), one row per
            hypothesis.
        choose_tokens: `choose_tokens(log_probs, index) -> int32 (rows,)`,
            picks the next token from the constrained log-probabilities.
        min_length, no_repeat_ngram_size: see `next_token_log_probs`.

    Returns:
        `(ids, lengths, scores)`: int32 `(rows, max_length)` (0 after the
        end), int32 `(rows,)`, float32 `(rows,)` (sum of the chosen tokens'
        log-probabilities).
    """
    rows = ops.shape(start_ids)[0]
    sequences = start_sequences(start_ids, max_length)
    lengths = ops.zeros((rows,), dtype="int32")
    scores = ops.zeros((rows,), dtype="float32")
    finished = ops.zeros((rows,), dtype="bool")
    index = ops.convert_to_tensor(0, dtype="int32")

    def condition(index, sequences, cache, lengths, scores, finished):
        return ops.logical_and(index < max_length, ops.logical_not(ops.all(finished)))

    def body(index, sequences, cache, lengths, scores, finished):
        logits, new_cache = step_fn(take_column(sequences, index), cache, index)
        new_cache = match_cache(cache, new_cache)
        log_probs = next_token_log_probs(
            logits, sequences, index, end_id, min_length, no_repeat_ngram_size
        )
        tokens = ops.cast(choose_tokens(log_probs, index), "int32")
        token_log_probs = ops.take_along_axis(log_probs, tokens[:, None], axis=1)[:, 0]
        alive = ops.logical_not(finished)
        tokens = ops.where(alive, tokens, 0)
        sequences = write_column(sequences, index + 1, tokens)
        lengths = lengths + ops.cast(alive, "int32")
        scores = scores + ops.where(alive, token_log_probs, 0.0)
        finished = ops.logical_or(
            finished,
            ops.logical_or(ops.logical_and(alive, tokens == end_id), index + 1 >= max_lengths),
        )
        return index + 1, sequences, new_cache, lengths, scores, finished

    _, sequences, _, lengths, scores, _ = ops.while_loop(
        condition,
        body,
        (index, sequences, cache, lengths, scores, finished),
        maximum_iterations=max_length,
    )
    return sequences[:, 1:], lengths, scores


def sort_sequences(ids, lengths, scores, num_sequences):
    """Regroups rows as `(batch, num_sequences, ...)`, best score first."""
    max_length = ids.shape[-1]
    ids = ops.reshape(ids, (-1, num_sequences, max_length))
    lengths = ops.reshape(lengths, (-1, num_sequences))
    scores = ops.reshape(scores, (-1, num_sequences))
    if num_sequences > 1:
        scores, order = ops.top_k(scores, num_sequences)
        ids = ops.take_along_axis(ids, order[:, :, None], axis=1)
        lengths = ops.take_along_axis(lengths, order, axis=1)
    return {"ids": ids, "lengths": lengths, "scores": scores}
