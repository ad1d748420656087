"""The decoding loop shared by greedy search and sampling: one hypothesis per row."""

from keras import ops

from tfnlp.decoding.constraints import next_token_log_probs
from tfnlp.decoding.contract import match_cache
from tfnlp.decoding.stop_sequences import ends_with_stop_sequence


def start_sequences(prompt_ids, max_length):
    """int32 `(rows, width + max_length)`: the prompts, then zeros."""
    rows = ops.shape(prompt_ids)[0]
    return ops.concatenate(
        [prompt_ids, ops.zeros((rows, max_length), dtype="int32")], axis=1
    )


def generated_part(sequences, prompt_lengths, max_length):
    """`(rows, max_length)`: the `max_length` positions after each row's prompt.

    Args:
        sequences: int32 `(rows, ..., width + max_length)`.
        prompt_lengths: int32 `(rows,)`.
        max_length: Python int.
    """
    positions = prompt_lengths[:, None] + ops.arange(max_length, dtype="int32")[None, :]
    positions = ops.reshape(positions, (-1,) + (1,) * (len(sequences.shape) - 2) + (max_length,))
    shape = tuple(ops.shape(sequences)[:-1]) + (max_length,)
    return ops.take_along_axis(sequences, ops.broadcast_to(positions, shape), axis=-1)


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
    prompt,
    end_id,
    max_length,
    max_lengths,
    choose_tokens,
    constraints,
    stop_sequences=None,
):
    """Extends one hypothesis per row until `end_id`, its stop sequence or
    its maximum length.

    Args:
        step_fn, cache, end_id, max_length, max_lengths: as in the decoder
            contract (`tfnlp.decoding.contract`), one row per hypothesis.
        prompt: the rows' `tfnlp.decoding.contract.Prompt`.
        choose_tokens: `choose_tokens(log_probs, index) -> int32 (rows,)`,
            picks the next token from the constrained log-probabilities.
        constraints: a dict of `next_token_log_probs`' `min_length`,
            `no_repeat_ngram_size`, `repetition_penalty` and
            `suppressed_token_ids`.
        stop_sequences: optional `tfnlp.decoding.contract.StopSequences`,
            one per row: a row finishes once its generated tokens end with
            its stop sequence.

    Returns:
        `(ids, lengths, scores)`: int32 `(rows, max_length)`, the generated
        tokens (0 after the end), int32 `(rows,)`, float32 `(rows,)` (sum of
        the generated tokens' log-probabilities).
    """
    rows = ops.shape(prompt.ids)[0]
    sequences = start_sequences(prompt.ids, max_length)
    last_index = prompt.width + max_length - 1
    lengths = ops.zeros((rows,), dtype="int32")
    scores = ops.zeros((rows,), dtype="float32")
    finished = ops.zeros((rows,), dtype="bool")
    index = ops.convert_to_tensor(prompt.first_index, dtype="int32")

    def condition(index, sequences, cache, lengths, scores, finished):
        return ops.logical_and(index < last_index, ops.logical_not(ops.all(finished)))

    def body(index, sequences, cache, lengths, scores, finished):
        logits, new_cache = step_fn(take_column(sequences, index), cache, index)
        new_cache = match_cache(cache, new_cache)
        # Tokens generated before the next one; negative inside the prompt.
        num_generated = index + 1 - prompt.lengths
        log_probs = next_token_log_probs(
            logits, sequences, index, end_id, num_generated=num_generated, **constraints
        )
        tokens = ops.cast(choose_tokens(log_probs, index), "int32")
        token_log_probs = ops.take_along_axis(log_probs, tokens[:, None], axis=1)[:, 0]
        forced = num_generated < 0
        generating = ops.logical_and(ops.logical_not(finished), ops.logical_not(forced))
        tokens = ops.where(
            forced, take_column(sequences, index + 1), ops.where(generating, tokens, 0)
        )
        sequences = write_column(sequences, index + 1, tokens)
        lengths = lengths + ops.cast(generating, "int32")
        scores = scores + ops.where(generating, token_log_probs, 0.0)
        ends = ops.logical_or(tokens == end_id, num_generated + 1 >= max_lengths)
        if stop_sequences is not None:
            ends = ops.logical_or(ends, ends_with_stop_sequence(
                sequences, index + 1, stop_sequences, num_generated + 1))
        finished = ops.logical_or(finished, ops.logical_and(generating, ends))
        return index + 1, sequences, new_cache, lengths, scores, finished

    _, sequences, _, lengths, scores, _ = ops.while_loop(
        condition,
        body,
        (index, sequences, cache, lengths, scores, finished),
        maximum_iterations=last_index - prompt.first_index,
    )
    return generated_part(sequences, prompt.lengths, max_length), lengths, scores


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
