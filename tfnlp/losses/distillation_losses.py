"""Knowledge-distillation losses: a student learns a teacher's logits.

The targets of a distillation batch are the teacher's logits over the
transfer set and, where the transfer set is labelled, the gold labels: a
dict `{"teacher_logits": (batch, num_classes), "label": (batch,)}` (the keys
`TEACHER_LOGITS` and `LABEL`). Two objectives compare the student's logits
with the teacher's:

- `distillation_loss` / `DistillationLoss`: Hinton et al.'s soft targets,
  the KL divergence of the student's temperature-softened distribution
  from the teacher's, times `temperature ** 2`;
- `logit_mean_squared_error` / `LogitMeanSquaredError`: the squared
  difference of the logits themselves (Tang et al.).

Each can mix in the cross-entropy of the student with the gold labels:
`alpha * objective + (1 - alpha) * cross_entropy`, `alpha` being the weight
of the teacher's term (1, the default, uses the teacher alone and needs no
labels).

The functions give one loss per example, written with `keras.ops`, for a
custom training task that normalises by the global batch itself; the
`keras.losses.Loss` classes wrap them for `compile()` + `fit()` and take
`y_true` as the dict above or as the teacher's logits alone.
"""

import keras
from keras import ops

# The keys of the targets of a distillation batch.
TEACHER_LOGITS = "teacher_logits"
LABEL = "label"


def _check_temperature(temperature):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not temperature > 0:
        raise ValueError(
            "The distillation `temperature` must be a positive number (1 leaves "
            f"the logits as they are; 2 to 20 soften them). Received: {temperature!r}."
        )


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) \
            or not 0.0 <= alpha <= 1.0:
        raise ValueError(
            "`alpha`, the weight of the teacher's term against the label "
            f"cross-entropy, must be in [0, 1]. Received: {alpha!r}."
        )


def soft_target_loss(teacher_logits, student_logits, temperature=1.0):
    """Hinton et al.'s soft-target loss of each example.

    `T² · KL(p_T || q_T)` with `p_T = softmax(teacher_logits / T)` and
    `q_T = softmax(student_logits / T)`: the temperature softens both
    distributions, and the `T²` factor keeps the gradient's size about the
    same whatever `T` (the gradient with respect to the student's logits is
    `T · (q_T - p_T)`). It differs from the cross-entropy with the soft
    targets by the teacher's entropy, a constant for the student, so it is
    0 when the student matches the teacher.

    Args:
        teacher_logits: float `(batch, num_classes)` logits of the teacher.
        student_logits: float `(batch, num_classes)` logits of the student.
        temperature: `T`, a positive number.

    Returns:
        float32 `(batch,)`.

    Example (a student that matches the teacher has loss 0):

    >>> import numpy as np
    >>> logits = np.array([[2.0, 0.5, -1.0]], "float32")
    >>> [round(float(value), 6) for value in soft_target_loss(logits, logits, 4.0)]
    [0.0]

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531) (section 2)
    """
    _check_temperature(temperature)
    teacher_log_probabilities = ops.log_softmax(
        ops.cast(teacher_logits, "float32") / temperature, axis=-1)
    student_log_probabilities = ops.log_softmax(
        ops.cast(student_logits, "float32") / temperature, axis=-1)
    kl_divergence = ops.sum(
        ops.exp(teacher_log_probabilities)
        * (teacher_log_probabilities - student_log_probabilities),
        axis=-1,
    )
    return kl_divergence * (temperature * temperature)


def _with_labels(teacher_term, student_logits, labels, alpha, loss_name):
    """`alpha * teacher_term + (1 - alpha) * CE(labels, student_logits)`."""
    _check_alpha(alpha)
    if alpha == 1.0:
        return teacher_term
    if labels is None:
        raise ValueError(
            f"{loss_name} with alpha={alpha} mixes in the cross-entropy with the "
            "gold labels, but no labels were given. Pass them (as `labels`, or "
            f'as y_true={{"{TEACHER_LOGITS}": ..., "{LABEL}": ...}}), or use '
            "alpha=1.0 to learn from the teacher alone."
        )
    student_logits = ops.cast(student_logits, "float32")
    labels = ops.cast(labels, "int32")
    if len(labels.shape) == len(student_logits.shape):
        labels = ops.squeeze(labels, axis=-1)
    cross_entropy = ops.sparse_categorical_crossentropy(
        labels, student_logits, from_logits=True)
    return alpha * teacher_term + (1.0 - alpha) * cross_entropy


def distillation_loss(teacher_logits, student_logits, labels=None,
                      temperature=1.0, alpha=1.0):
    """The distillation loss of each example (Hinton et al., 2015).

    `alpha · soft_target_loss(teacher_logits, student_logits, temperature)
    + (1 - alpha) · CE(labels, student_logits)`, the cross-entropy with the
    gold labels taken at temperature 1.

    Args:
        teacher_logits: float `(batch, num_classes)` logits of the teacher.
        student_logits: float `(batch, num_classes)` logits of the student.
        labels: int `(batch,)` (or `(batch, 1)`) gold labels; needed only
            when `alpha < 1`.
        temperature: `T` of the soft targets, a positive number.
        alpha: the weight of the soft-target term, in [0, 1].

    Returns:
        float32 `(batch,)`.

    Example:

    >>> import numpy as np
    >>> teacher = np.array([[1.0, 1.0]], "float32")
    >>> student = np.array([[0.0, 2.0]], "float32")
    >>> # alpha=0: the label cross-entropy alone, log(1 + e^-2).
    >>> loss = distillation_loss(teacher, student, np.array([1]), alpha=0.0)
    >>> round(float(loss[0]), 4)
    0.1269
    >>> # alpha=1: 4 KL((0.5, 0.5) || softmax((0, 1))), at temperature 2.
    >>> round(float(distillation_loss(teacher, student, temperature=2.0)[0]), 4)
    0.4805

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531) (section 2)
    """
    soft = soft_target_loss(teacher_logits, student_logits, temperature)
    return _with_labels(soft, student_logits, labels, alpha, "distillation_loss")


def logit_mean_squared_error(teacher_logits, student_logits, labels=None, alpha=1.0):
    """The mean squared difference of the logits of each example (Tang et
    al., 2019), optionally mixed with the label cross-entropy.

    `alpha · mean_c (student_c - teacher_c)² + (1 - alpha) · CE(labels,
    student_logits)`. Tang et al. write the squared L2 norm, the sum over
    the classes, which is `num_classes` times the mean: a constant factor
    that the learning rate absorbs. Matching logits is the limit of
    Hinton et al.'s soft-target loss at a high temperature (for logits of
    mean zero), and keeps the information of logits that a softmax
    flattens.

    Args:
        teacher_logits: float `(batch, num_classes)` logits of the teacher.
        student_logits: float `(batch, num_classes)` logits of the student.
        labels: int `(batch,)` (or `(batch, 1)`) gold labels; needed only
            when `alpha < 1`.
        alpha: the weight of the logit term, in [0, 1].

    Returns:
        float32 `(batch,)`.

    Example:

    >>> import numpy as np
    >>> teacher = np.array([[1.0, -1.0]], "float32")
    >>> student = np.array([[0.0, 1.0]], "float32")
    >>> [float(value) for value in logit_mean_squared_error(teacher, student)]
    [2.5]

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
          (section 3.2)
        - [Ba and Caruana, 2014. Do Deep Nets Really Need to be Deep?](
          https://arxiv.org/abs/1312.6184)
    """
    difference = ops.cast(student_logits, "float32") - ops.cast(teacher_logits, "float32")
    squared_error = ops.mean(ops.square(difference), axis=-1)
    return _with_labels(squared_error, student_logits, labels, alpha,
                        "logit_mean_squared_error")


class _TeacherTargetsLoss(keras.losses.Loss):
    """Base of the distillation losses: reads `y_true` as the teacher's
    logits or as the dict of `TEACHER_LOGITS` and `LABEL`."""

    def __init__(self, alpha=1.0, name=None, reduction="sum_over_batch_size", dtype=None):
        _check_alpha(alpha)
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.alpha = alpha

    def targets(self, y_true):
        """`(teacher_logits, labels)` of `y_true`; labels may be None."""
        if not isinstance(y_true, dict):
            return y_true, None
        if TEACHER_LOGITS not in y_true:
            raise ValueError(
                f"{type(self).__name__}: the targets dict has no "
                f'"{TEACHER_LOGITS}"; it has {sorted(y_true)}. Give the teacher\'s '
                f'logits under "{TEACHER_LOGITS}" (and the gold labels under '
                f'"{LABEL}" when alpha < 1).'
            )
        return y_true[TEACHER_LOGITS], y_true.get(LABEL)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


@keras.saving.register_keras_serializable(package="tfnlp")
class DistillationLoss(_TeacherTargetsLoss):
    """Hinton et al.'s distillation loss, for `compile()` + `fit()`.

    Per example, `alpha · T² · KL(softmax(t / T) || softmax(s / T)) +
    (1 - alpha) · CE(label, s)`, `t` the teacher's and `s` the student's
    logits (`distillation_loss`), reduced over the batch as
    `keras.losses.Loss` does.

    Args:
        temperature: `T`, applied to the teacher's and the student's logits.
        alpha: the weight of the soft-target term, in [0, 1]; below 1 the
            targets must hold the gold labels.
        name: the name of the loss.
        reduction: as for `keras.losses.Loss`.
        dtype: as for `keras.losses.Loss`.

    Call arguments:
        y_true: the teacher's logits `(batch, num_classes)`, or a dict with
            `"teacher_logits"` and (when `alpha < 1`) `"label"`, int
            `(batch,)`.
        y_pred: the student's logits `(batch, num_classes)`.
        sample_weight: optional weights of the examples.

    Example:

    >>> import numpy as np
    >>> loss = DistillationLoss(temperature=2.0, alpha=0.5)
    >>> teacher = np.array([[3.0, 0.0], [0.0, 1.0]], "float32")
    >>> student = np.array([[1.0, 0.0], [0.5, 0.5]], "float32")
    >>> value = loss({"teacher_logits": teacher, "label": np.array([0, 1])}, student)
    >>> expected = distillation_loss(teacher, student, np.array([0, 1]), 2.0, 0.5)
    >>> bool(np.isclose(float(value), float(np.mean(expected))))
    True
    >>> DistillationLoss.from_config(loss.get_config()).temperature
    2.0

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531) (section 2)
    """

    def __init__(self, temperature=1.0, alpha=1.0, name="distillation_loss",
                 reduction="sum_over_batch_size", dtype=None):
        _check_temperature(temperature)
        super().__init__(alpha=alpha, name=name, reduction=reduction, dtype=dtype)
        self.temperature = temperature

    def call(self, y_true, y_pred):
        teacher_logits, labels = self.targets(y_true)
        return distillation_loss(teacher_logits, y_pred, labels,
                                 temperature=self.temperature, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature}


@keras.saving.register_keras_serializable(package="tfnlp")
class LogitMeanSquaredError(_TeacherTargetsLoss):
    """The mean squared difference of the student's and the teacher's
    logits (Tang et al., 2019), for `compile()` + `fit()`.

    Per example, `alpha · mean_c (s_c - t_c)² + (1 - alpha) · CE(label, s)`
    (`logit_mean_squared_error`), reduced over the batch as
    `keras.losses.Loss` does.

    Args:
        alpha: the weight of the logit term, in [0, 1]; below 1 the targets
            must hold the gold labels.
        name, reduction, dtype: as for `keras.losses.Loss`.

    Call arguments: as for `DistillationLoss` (the teacher's logits, or the
    dict of `"teacher_logits"` and `"label"`; the student's logits; optional
    weights of the examples).

    Example:

    >>> import numpy as np
    >>> loss = LogitMeanSquaredError()
    >>> float(loss(np.array([[1.0, -1.0]]), np.array([[0.0, 1.0]])))
    2.5

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
          (section 3.2)
    """

    def __init__(self, alpha=1.0, name="logit_mean_squared_error",
                 reduction="sum_over_batch_size", dtype=None):
        super().__init__(alpha=alpha, name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        teacher_logits, labels = self.targets(y_true)
        return logit_mean_squared_error(teacher_logits, y_pred, labels, alpha=self.alpha)
