"""Constraints on the next token: a minimum length, no repeated n-grams, a
repetition penalty and suppressed tokens, shared by every decoder."""

import numbers

from keras import ops

from tfnlp.decoding.contract import NEGATIVE_INFINITY


def check_non_negative_int(name, value):
    """Raises a `ValueError` unless `value` is a Python int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{name}` must be a Python int >= 0; received {value!r}.")


def check_positive_number(name, value, advice):
    """Raises a `ValueError` (ending with `advice`) unless `value` is a number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"`{name}` must be a number > 0; received {value!r}. {advice}")


def check_constraints(min_length, no_repeat_ngram_size, repetition_penalty):
    """Raises a `ValueError` unless the next-token constraints are valid."""
    check_non_negative_int("min_length", min_length)
    check_non_negative_int("no_repeat_ngram_size", no_repeat_ngram_size)
    check_positive_number(
        "repetition_penalty",
        repetition_penalty,
        "Use 1.0 for no penalty and values above 1 (e.g. 1.2) to discourage repetitions.",
    )


def checked_token_ids(name, token_ids):
    """`token_ids` as a tuple of Python ints, or a `ValueError` naming `name`.

    Args:
        name: the argument's name, for the message.
        token_ids: an iterable of ints >= 0 (Python or NumPy).

    Example:

    >>> import numpy as np
    >>> checked_token_ids("suppressed_token_ids", np.array([0, 1]))
    (0, 1)
    """
    if isinstance(token_ids, (str, bytes)) or not hasattr(token_ids, "__iter__"):
        raise ValueError(
            f"`{name}` must be a list of token ids (ints >= 0); received {token_ids!r}."
        )
    token_ids = tuple(token_ids)
    for token_id in token_ids:
        if isinstance(token_id, bool) or not isinstance(token_id, numbers.Integral) or (
            token_id < 0
        ):
            raise ValueError(
                f"`{name}` must be a list of token ids (ints >= 0); received "
                f"{list(token_ids)!r}, with {token_id!r}."
            )
    return tuple(int(token_id) for token_id in token_ids)


def constraints_of(decoder):
    """The keyword arguments of `next_token_log_probs` a decoder holds."""
    return {
        "min_length": decoder.min_length,
        "no_repeat_ngram_size": decoder.no_repeat_ngram_size,
        "repetition_penalty": decoder.repetition_penalty,
        "suppressed_token_ids": decoder.suppressed_token_ids,
    }


def next_token_log_probs(
    logits,
    sequences,
    index,
    end_id,
    min_length=0,
    no_repeat_ngram_size=0,
    repetition_penalty=1.0,
    num_generated=None,
    suppressed_token_ids=(),
):
    """Log-probabilities of the next token, with the forbidden tokens at -inf.

    Args:
        logits: float `(rows, vocabulary)` from the step function.
        sequences: int32 `(rows, length)`, each row's prompt (or start
            token) then the tokens generated so far (positions `0..index`
            are filled).
        index: int32 scalar, the position of the last token of `sequences`.
        end_id: Python int.
        min_length: `end_id` is forbidden among the first `min_length`
            generated tokens.
        no_repeat_ngram_size: if > 0, a token that would repeat an n-gram of
            this size already in the row's sequence (prompt included) is
            forbidden.
        repetition_penalty: if not 1, the logits of the tokens already in
            the row's sequence are penalised first (see
            `penalize_repetitions`).
        num_generated: int32 `(rows,)`, how many tokens each row has
            generated before the next one (negative while the next token is
            still a prompt token); default `index` (a start token only).
        suppressed_token_ids: a tuple of Python ints, the tokens that are
            never generated (ids outside the vocabulary are ignored).

    Returns:
        float32 `(rows, vocabulary)` log-probabilities (a log-softmax of the
        penalised logits, not renormalised after the forbidding).
    """
    logits = ops.cast(logits, "float32")
    if repetition_penalty != 1.0:
        logits = penalize_repetitions(logits, sequences, index, repetition_penalty)
    log_probs = ops.log_softmax(logits, axis=-1)
    if min_length > 0:
        num_generated = index if num_generated is None else num_generated
        is_end = ops.arange(ops.shape(log_probs)[-1]) == end_id
        too_short = ops.logical_and(is_end[None, :], (num_generated < min_length)[..., None])
        log_probs = ops.where(too_short, NEGATIVE_INFINITY, log_probs)
    if no_repeat_ngram_size > 0:
        repeated = repeated_ngram_mask(
            sequences, index, no_repeat_ngram_size, ops.shape(log_probs)[-1]
        )
        log_probs = ops.where(repeated, NEGATIVE_INFINITY, log_probs)
    if suppressed_token_ids:
        suppressed = ops.any(
            ops.arange(ops.shape(log_probs)[-1])[:, None]
            == ops.convert_to_tensor(suppressed_token_ids, dtype="int32")[None, :],
            axis=1,
        )
        log_probs = ops.where(suppressed[None, :], NEGATIVE_INFINITY, log_probs)
    return log_probs


def penalize_repetitions(logits, sequences, index, penalty):
    """The logits with the tokens already in each row's sequence penalised.

    The logit `x` of every token that occurs in `sequences[:, :index + 1]`
    (the prompt, or start token, included) becomes `x / penalty` if it is
    positive and `x * penalty` otherwise, as in CTRL (Keskar et al., 2019)
    and Hugging Face's `repetition_penalty`: with `penalty > 1` a seen token
    becomes less probable whatever its sign; the other logits are unchanged.
    Ids outside `[0, vocabulary)` (a start token outside the vocabulary) are
    skipped.

    Args:
        logits: float32 `(rows, vocabulary)`.
        sequences: int32 `(rows, length)`; positions `0..index` are filled.
        index: int32 scalar tensor.
        penalty: Python float > 0 (1.0: no change).

    Returns:
        float32 `(rows, vocabulary)`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> logits = np.array([[2.0, -1.0, 3.0, 0.5]], "float32")
    >>> sequences = np.array([[0, 1, 3, 2]], "int32")  # token 2 not yet written
    >>> penalized = penalize_repetitions(logits, sequences, 2, penalty=2.0)
    >>> ops.convert_to_numpy(penalized).tolist()
    [[1.0, -2.0, 3.0, 0.25]]

    References:
        - [Keskar et al., 2019. CTRL: A Conditional Transformer Language
          Model for Controllable Generation, section 4.1](
          https://arxiv.org/abs/1909.05858)
    """
    written = ops.arange(sequences.shape[1]) <= index
    rows = ops.shape(sequences)[0]
    seen = token_mask(
        sequences,
        ops.broadcast_to(written[None, :], (rows, sequences.shape[1])),
        ops.shape(logits)[-1],
    )
    penalized = ops.where(logits > 0, logits / penalty, logits * penalty)
    return ops.where(seen, penalized, logits)


def token_mask(tokens, counted, vocabulary_size):
    """bool `(rows, vocabulary_size)`: which tokens occur where `counted`.

    With static shapes: the counted tokens of each row are scattered into a
    `(rows, vocabulary)` mask. Ids outside `[0, vocabulary_size)` are
    skipped.

    Args:
        tokens: int32 `(rows, n)`.
        counted: bool `(rows, n)`, which of them count.
        vocabulary_size: int, the size of the mask's last axis.
    """
    rows, count = ops.shape(tokens)[0], tokens.shape[1]
    in_vocabulary = ops.logical_and(tokens >= 0, tokens < vocabulary_size)
    hits = ops.logical_and(counted, in_vocabulary)
    tokens = ops.clip(tokens, 0, vocabulary_size - 1)
    row_ids = ops.broadcast_to(ops.arange(rows)[:, None], (rows, count))
    indices = ops.stack([ops.reshape(row_ids, (-1,)), ops.reshape(tokens, (-1,))], axis=-1)
    counts = ops.scatter(
        indices, ops.reshape(ops.cast(hits, "int32"), (-1,)), (rows, vocabulary_size)
    )
    return counts > 0


def repeated_ngram_mask(sequences, index, ngram_size, vocabulary_size):
    """Which next tokens would repeat an n-gram of the sequence so far.

    The next token `v` (at position `index + 1`) is blocked when the n-gram
    `sequences[index - n + 2 : index + 1] + [v]` already occurs in
    `sequences[:index + 1]` (the prompt, or start token, included), as in
    Paulus et al. (2017). With static shapes: every window of `ngram_size`
    tokens is compared with the current suffix, and the tokens that followed
    matching windows are scattered into a `(rows, vocabulary)` mask.

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
    return token_mask(
        windows[:, :, -1], ops.logical_and(matches, complete[None, :]), vocabulary_size
    )
