"""Constraints on the next token: a minimum length and no repeated n-grams."""

from keras import ops

from tfnlp.decoding.contract import NEGATIVE_INFINITY


def check_non_negative_int(name, value):
    """Raises a `ValueError` unless `value` is a Python int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{name}` must be a Python int >= 0; received {value!r}.")


def next_token_log_probs(logits, sequences, index, end_id, min_length=0, no_repeat_ngram_size=0):
    """Log-probabilities of the next token, with the forbidden tokens at -inf.

    Args:
        logits: float `(rows, vocabulary)` from the step function.
        sequences: int32 `(rows, max_length + 1)`, the start token then the
            tokens generated so far (positions `0..index` are filled).
        index: int32 scalar, the position of the last token of `sequences`.
        end_id: Python int.
        min_length: `end_id` is forbidden among the first `min_length`
            generated tokens.
        no_repeat_ngram_size: if > 0, a token that would repeat an n-gram of
            this size already in the row's sequence is forbidden.

    Returns:
        float32 `(rows, vocabulary)` log-probabilities (a log-softmax of the
        logits, not renormalised after the forbidding).
    """
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    if min_length > 0:
        is_end = ops.arange(ops.shape(log_probs)[-1]) == end_id
        too_short = ops.logical_and(is_end[None, :], index < min_length)
        log_probs = ops.where(too_short, NEGATIVE_INFINITY, log_probs)
    if no_repeat_ngram_size > 0:
        repeated = repeated_ngram_mask(
            sequences, index, no_repeat_ngram_size, ops.shape(log_probs)[-1]
        )
        log_probs = ops.where(repeated, NEGATIVE_INFINITY, log_probs)
    return log_probs


def repeated_ngram_mask(sequences, index, ngram_size, vocabulary_size):
    """Which next tokens would repeat an n-gram of the sequence so far.

    The next token `v` (at position `index + 1`) is blocked when the n-gram
    `sequences[index - n + 2 : index + 1] + [v]` already occurs in
    `sequences[:index + 1]` (the start token included), as in Paulus et al.
    (2017). With static shapes: every window of `ngram_size` tokens is
    compared with the current suffix, and the tokens that followed matching
    windows are scattered into a `(rows, vocabulary)` mask.

    Args:
        sequences: int32 `(rows, length)`; positions `0..index` are filled.
        index: int32 scalar tensor.
        ngram_size: Python int >= 1.
        vocabulary_size: int, the size of the mask's last axis.

    Returns:
        bool `(rows, vocabulary_size)`, `True` = blocked.

    References:
        - [Paulus et al., 2017. A Deep Reinforced Model for Abstractive
          Summarization](https://arxiv.org/abs/1705.04304)
    """
    length = sequences.shape[1]
    num_windows = length - ngram_size + 1
    rows = ops.shape(sequences)[0]
    if num_windows < 1:
        return ops.zeros((rows, vocabulary_size), dtype="bool")
    # windows[:, j, k] = sequences[:, j + k]
    windows = ops.stack(
        [sequences[:, offset : offset + num_windows] for offset in range(ngram_size)], axis=-1
    )
    if ngram_size > 1:
        suffix_positions = ops.maximum(index - ngram_size + 2, 0) + ops.arange(ngram_size - 1)
        suffix = ops.take(sequences, suffix_positions, axis=1)  # (rows, n - 1)
        matches = ops.all(windows[:, :, :-1] == suffix[:, None, :], axis=-1)
    else:
        matches = ops.ones((rows, num_windows), dtype="bool")
    # A window counts when its last token is already written (<= index).
    complete = ops.arange(num_windows) <= index - ngram_size + 1
    following = windows[:, :, -1]
    # A start token outside the vocabulary cannot be generated: skip it.
    in_vocabulary = ops.logical_and(following >= 0, following < vocabulary_size)
    hits = ops.logical_and(ops.logical_and(matches, complete[None, :]), in_vocabulary)
    following = ops.clip(following, 0, vocabulary_size - 1)
    row_ids = ops.broadcast_to(ops.arange(rows)[:, None], (rows, num_windows))
    indices = ops.stack(
        [ops.reshape(row_ids, (-1,)), ops.reshape(following, (-1,))], axis=-1
    )
    counts = ops.scatter(
        indices, ops.reshape(ops.cast(hits, "int32"), (-1,)), (rows, vocabulary_size)
    )
    return counts > 0
