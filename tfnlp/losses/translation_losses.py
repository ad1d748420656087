"""The translation loss: label-smoothed cross-entropy over target tokens.

A plain function of the targets and the logits, written with `keras.ops`,
so the custom `tf.distribute` loop (`trainer.tasks.translation.TranslationTask`)
can divide the summed loss by the target tokens of the GLOBAL batch itself, as
it does for the BERT losses.
"""

from keras import ops

from tfnlp.data.translation_schema import PAD_ID


def label_smoothed_cross_entropy(targets, logits, label_smoothing=0.0):
    """Per-token label-smoothed cross-entropy and negative log-likelihood.

    The smoothed target puts `1 - label_smoothing` on the true token and
    spreads `label_smoothing` uniformly over the whole vocabulary (the true
    token included), as in Szegedy et al. and fairseq's
    `label_smoothed_cross_entropy`: `loss = (1 - ε)·nll + ε·mean_v(-log p_v)`.
    Padding positions (`targets == 0`) get 0 in both.

    Args:
        targets: int `(batch, length)` true token ids, 0 = padding.
        logits: `(batch, length, vocabulary)` logits (computed in float32).
        label_smoothing: ε in [0, 1).

    Returns:
        `(loss, nll)`, both float32 `(batch, length)`.

    Example (uniform logits over 4 tokens: both are log 4):

    >>> import numpy as np
    >>> loss, nll = label_smoothed_cross_entropy(
    ...     np.array([[1, 0]]), np.zeros((1, 2, 4), "float32"), 0.1)
    >>> [round(float(value), 4) for value in (loss[0, 0], nll[0, 0], loss[0, 1])]
    [1.3863, 1.3863, 0.0]

    References:
        - [Szegedy et al., 2016. Rethinking the Inception Architecture for
          Computer Vision, section 7](https://arxiv.org/abs/1512.00567)
        - [Vaswani et al., 2017. Attention Is All You Need, section 5.4](
          https://arxiv.org/abs/1706.03762)
    """
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(
            f"label_smoothing must be in [0, 1); received {label_smoothing}."
        )
    targets = ops.cast(targets, "int32")
    log_probabilities = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    nll = -ops.squeeze(
        ops.take_along_axis(log_probabilities, targets[..., None], axis=-1), axis=-1)
    loss = nll
    if label_smoothing:
        smoothing = -ops.mean(log_probabilities, axis=-1)
        loss = (1.0 - label_smoothing) * nll + label_smoothing * smoothing
    weights = ops.cast(ops.not_equal(targets, PAD_ID), "float32")
    return loss * weights, nll * weights
