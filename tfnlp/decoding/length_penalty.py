"""Length penalties: the divisor of a hypothesis' log-probability in beam search."""

from keras import ops

LENGTH_PENALTIES = ("gnmt", "average", "none")


def check_length_penalty(length_penalty, alpha):
    """Raises a `ValueError` unless `length_penalty` and `alpha` are valid."""
    if length_penalty not in LENGTH_PENALTIES:
        raise ValueError(
            f"`length_penalty` must be one of {LENGTH_PENALTIES}; received "
            f"{length_penalty!r}. Use 'gnmt' for ((5 + length) / 6) ** alpha, "
            "'average' for length ** alpha, 'none' to rank by log-probability."
        )
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise ValueError(f"`alpha` must be a number; received {alpha!r}.")


def length_penalty(lengths, length_penalty="gnmt", alpha=0.6):
    """The length penalty `lp(length)` that divides a log-probability.

    Beam search ranks a finished hypothesis `y` by
    `log P(y | x) / lp(|y|)`, where `|y|` counts the generated tokens
    including the end token. Log-probabilities are negative, so with
    `alpha > 0` a larger penalty favours longer outputs, countering beam
    search's preference for short ones; `alpha < 0` favours shorter ones and
    `alpha = 0` (or `"none"`) ranks by log-probability alone.

    - `"gnmt"`: `((5 + length) / 6) ** alpha` (Wu et al., 2016, eq. 14).
    - `"average"`: `length ** alpha`; with `alpha = 1` the score is the
      average log-probability per token.
    - `"none"`: `1`.

    Each penalty is monotonic in the length (increasing for `alpha > 0`),
    which beam search's early stopping relies on.

    Args:
        lengths: int or tensor of lengths (number of generated tokens,
            >= 1).
        length_penalty: `"gnmt"`, `"average"` or `"none"`.
        alpha: the exponent.

    Returns:
        A float32 tensor of the shape of `lengths`.

    Example:

    >>> from tfnlp.decoding import length_penalty
    >>> [round(float(x), 4) for x in length_penalty([1, 7], "gnmt", alpha=1.0)]
    [1.0, 2.0]
    >>> [round(float(x), 4) for x in length_penalty([4, 9], "average", alpha=0.5)]
    [2.0, 3.0]

    References:
        - [Wu et al., 2016. Google's Neural Machine Translation System:
          Bridging the Gap between Human and Machine Translation, section 7](
          https://arxiv.org/abs/1609.08144)
    """
    check_length_penalty(length_penalty, alpha)
    lengths = ops.cast(ops.convert_to_tensor(lengths), "float32")
    if length_penalty == "none" or alpha == 0:
        return ops.ones_like(lengths)
    if length_penalty == "gnmt":
        return ops.power((5.0 + lengths) / 6.0, float(alpha))
    return ops.power(lengths, float(alpha))
