"""Knowledge distillation (a student classifier learning a teacher's
logits) as a training-loop task.

A batch holds the student's inputs (token ids, tokenized from the record's
text by the trainer's input pipeline), `input_mask` (1 for real tokens),
`label` (the gold class id, -1 for a text without one) and, where the
teacher's logits are known, `teacher_logits`.

Two objectives:

- "distill": every example's teacher term, `loss="kl"` (Hinton et al.'s
  `T² · KL` of the temperature-softened distributions,
  `tfnlp.losses.soft_target_loss`) or `loss="mse"` (the mean squared
  difference of the logits, Tang et al.,
  `tfnlp.losses.logit_mean_squared_error`), averaged over the examples of
  the global batch and weighted by `alpha`; plus, when `alpha < 1`, the
  cross-entropy with the gold labels averaged over the labelled examples of
  the global batch and weighted by `1 - alpha`. Records without a label
  only ever add the teacher term.
- "labels": the cross-entropy with the gold labels alone, averaged over
  the labelled examples (the baseline: the same student trained without a
  teacher). The teacher's logits are never read.

Both averages are exact across replicas: `batch_totals` gives the examples
and labelled examples of a replica's share, and the loop sums them over the
replicas. The evaluation reports the accuracy against the gold labels and,
when the batches carry the teacher's logits, the student's agreement with
the teacher's predicted classes.
"""

import tensorflow as tf

from tfnlp.data.distillation_schema import LABEL, NO_LABEL, TEACHER_LOGITS
from tfnlp.losses.distillation_losses import logit_mean_squared_error, soft_target_loss

OBJECTIVES = ("distill", "labels")
TEACHER_LOSSES = ("kl", "mse")
INPUT_MASK = "input_mask"


class DistillationTask:
    """The loss, step sums and metrics of a student classifier.

    Args:
        model: the student, called on `{name: batch[name] for name in
            feature_names}` (or on the one feature itself, when there is
            one) and returning logits `(batch, num_classes)`.
        feature_names: the batch's keys the model reads ("token_ids" for
            a `tfnlp.models.BiLSTMClassifier`; "input_ids", "input_mask",
            "segment_ids" for a `BertClassifier`).
        objective: "distill" (the teacher's logits, and the labels with
            weight `1 - alpha`) or "labels" (the gold labels alone).
        loss: the teacher term, "kl" (soft targets) or "mse" (logits).
        temperature: `T` of the "kl" term (ignored by "mse").
        alpha: the weight of the teacher term, in [0, 1].

    Example:

    >>> import numpy as np
    >>> task = DistillationTask(model=lambda features, training=None: features,
    ...                         feature_names=("logits",), temperature=2.0)
    >>> batch = {"logits": tf.constant([[0.0, 1.0]]), "input_mask": tf.ones([1, 3]),
    ...          "teacher_logits": tf.constant([[1.0, 1.0]]), "label": tf.constant([-1])}
    >>> totals = task.batch_totals(batch)
    >>> loss = task.loss(batch, task.forward(batch), totals)
    >>> expected = soft_target_loss(batch["teacher_logits"], batch["logits"], 2.0)
    >>> bool(np.isclose(float(loss), float(expected[0])))
    True

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531)
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
        - [Sanh et al., 2019. DistilBERT, a distilled version of BERT](
          https://arxiv.org/abs/1910.01108)
    """

    sum_names = ("teacher_loss_sum", "teacher_examples", "agreement", "cross_entropy_sum",
                 "labelled", "correct", "examples", "tokens")

    def __init__(self, model, feature_names, objective="distill", loss="kl", temperature=1.0,
                 alpha=1.0):
        if objective not in OBJECTIVES:
            raise ValueError(
                f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}.")
        if loss not in TEACHER_LOSSES:
            raise ValueError(
                f"loss must be one of {', '.join(TEACHER_LOSSES)}, got {loss!r}.")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}.")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha, the teacher term's weight, must be in [0, 1]; got "
                             f"{alpha!r}.")
        self.model = model
        self.feature_names = tuple(feature_names)
        self.objective = objective
        self.teacher_loss = loss
        self.temperature = float(temperature)
        self.alpha = float(alpha)

    @property
    def teacher_weight(self):
        """The weight of the teacher term in the loss (0 for "labels")."""
        return self.alpha if self.objective == "distill" else 0.0

    def forward(self, batch, training=None):
        """The student's logits."""
        if len(self.feature_names) == 1:
            features = batch[self.feature_names[0]]
        else:
            features = {name: batch[name] for name in self.feature_names}
        return self.model(features, training=training)

    def batch_totals(self, batch):
        """The examples and labelled examples, whose global sums normalise
        the two terms of the loss."""
        return {"examples": _examples(batch), "labelled": tf.reduce_sum(_has_label(batch))}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        cross_entropy = tf.reduce_sum(_cross_entropy(batch, outputs)) / tf.maximum(
            totals["labelled"], 1.0)
        if self.teacher_weight == 0.0:
            return cross_entropy
        teacher = tf.reduce_sum(self._teacher_term(batch, outputs)) / tf.maximum(
            totals["examples"], 1.0)
        if self.teacher_weight == 1.0:
            return teacher
        return self.teacher_weight * teacher + (1.0 - self.teacher_weight) * cross_entropy

    def _teacher_term(self, batch, outputs):
        """The teacher term of each example, float32 `(batch,)`."""
        if TEACHER_LOGITS not in batch:
            raise ValueError(
                "The distillation objective needs the teacher's logits, but the batch "
                f"has only {sorted(batch)}. Read the transfer set's shards (they hold "
                f"{TEACHER_LOGITS!r}), or train with objective='labels'."
            )
        if self.teacher_loss == "kl":
            return soft_target_loss(batch[TEACHER_LOGITS], outputs, self.temperature)
        return logit_mean_squared_error(batch[TEACHER_LOGITS], outputs)

    def sums(self, batch, outputs):
        """The summed figures of one (micro-)batch, in float32: the teacher
        term and the agreement with the teacher's class over the examples
        that carry teacher logits (`teacher_examples`; none under the
        "labels" objective in training), the cross-entropy and the correct
        predictions over the labelled examples, the examples and the real
        tokens (for the throughput)."""
        has_label = _has_label(batch)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        labels = tf.cast(batch[LABEL], tf.int32)
        zero = tf.constant(0.0)
        teacher_loss_sum = teacher_examples = agreement = zero
        if TEACHER_LOGITS in batch:
            teacher_classes = tf.argmax(batch[TEACHER_LOGITS], axis=-1, output_type=tf.int32)
            teacher_loss_sum = tf.reduce_sum(self._teacher_term(batch, outputs))
            teacher_examples = _examples(batch)
            agreement = tf.reduce_sum(tf.cast(tf.equal(predictions, teacher_classes),
                                              tf.float32))
        return {
            "teacher_loss_sum": teacher_loss_sum,
            "teacher_examples": teacher_examples,
            "agreement": agreement,
            "cross_entropy_sum": tf.reduce_sum(_cross_entropy(batch, outputs)),
            "labelled": tf.reduce_sum(has_label),
            "correct": tf.reduce_sum(has_label * tf.cast(tf.equal(predictions, labels),
                                                         tf.float32)),
            "examples": _examples(batch),
            "tokens": tf.reduce_sum(tf.cast(batch[INPUT_MASK], tf.float32)),
        }

    def results(self, totals):
        """`loss` (the objective's), `accuracy` and `cross_entropy` (over
        the labelled examples) and, where the batches carried the teacher's
        logits, `teacher_loss` and `teacher_agreement` (the share of
        examples whose predicted class is the teacher's). Without teacher
        logits (evaluation on a dev file with no teacher) `loss` is the
        cross-entropy."""
        labelled = max(totals["labelled"], 1.0)
        results = {"cross_entropy": totals["cross_entropy_sum"] / labelled,
                   "accuracy": totals["correct"] / labelled}
        loss = results["cross_entropy"]
        if totals["teacher_examples"]:
            results["teacher_loss"] = totals["teacher_loss_sum"] / totals["teacher_examples"]
            results["teacher_agreement"] = totals["agreement"] / totals["teacher_examples"]
            if self.teacher_weight:
                loss = (self.teacher_weight * results["teacher_loss"]
                        + (1.0 - self.teacher_weight) * loss)
        return {"loss": loss, **results}

    def step_record(self, sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        record = {"examples": sums["examples"], "labelled": sums["labelled"],
                  "cross_entropy": sums["cross_entropy_sum"] / max(sums["labelled"], 1.0)}
        if sums["teacher_examples"]:
            record["teacher_loss"] = sums["teacher_loss_sum"] / sums["teacher_examples"]
        return record


def _examples(batch):
    return tf.cast(tf.shape(batch[LABEL])[0], tf.float32)


def _has_label(batch):
    return tf.cast(tf.not_equal(tf.cast(batch[LABEL], tf.int32), NO_LABEL), tf.float32)


def _cross_entropy(batch, logits):
    """The cross-entropy of each labelled example with its gold label, 0
    for the others, float32 `(batch,)`."""
    labels = tf.cast(batch[LABEL], tf.int32)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.maximum(labels, 0), logits=tf.cast(logits, tf.float32))
    return cross_entropy * _has_label(batch)
