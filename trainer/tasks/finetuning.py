"""Fine-tuning BERT (classification, token classification, spans) as a
training-loop task.

A batch is a dict: the encoder's inputs (`input_ids`, `input_mask`,
`segment_ids`) and the targets of the kind of task (`batch_of` makes it
from the `(features, labels...)` batches of `trainer.finetune_data`):

- "classification": `label`, the class id of each example; the loss is
  the cross-entropy averaged over the examples of the global batch.
- "token_classification": `labels` and `label_weights` `[batch, length]`,
  weight 1 on the first WordPiece of each word; the loss is the
  cross-entropy averaged over the weighted pieces of the global batch.
- "span": `start_positions` and `end_positions`; the loss is the mean of
  the start and end cross-entropies (the original `run_squad.py`), each
  averaged over the examples of the global batch.

The metrics are `accuracy`; `token_accuracy` (over the weighted pieces);
`start_accuracy`, `end_accuracy` and `exact_match` (both argmax positions
right).
"""

import tensorflow as tf

KINDS = ("classification", "token_classification", "span")
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")

# The summed figures and the metrics of each kind.
SUM_NAMES = {
    "classification": ("loss_sum", "correct", "examples", "tokens"),
    "token_classification": ("loss_sum", "correct", "labelled", "examples", "tokens"),
    "span": ("loss_sum", "start_correct", "end_correct", "both_correct", "examples",
             "tokens"),
}
METRICS = {
    "classification": ("loss", "accuracy"),
    "token_classification": ("loss", "token_accuracy"),
    "span": ("loss", "start_accuracy", "end_accuracy", "exact_match"),
}


def batch_of(kind, features, *targets):
    """The task's batch dict of a `trainer.finetune_data` batch
    `(features, labels[, weights])` of `kind`."""
    batch = {name: features[name] for name in INPUT_NAMES}
    if kind == "classification":
        batch["label"] = targets[0]
    elif kind == "token_classification":
        batch["labels"], batch["label_weights"] = targets
    else:
        batch["start_positions"] = targets[0]["start_logits"]
        batch["end_positions"] = targets[0]["end_logits"]
    return batch


class FineTuningTask:
    """The loss, step sums and metrics of a fine-tuned BERT model.

    Args:
        model: a `tfnlp.models.BertClassifier` ("classification"),
            `BertTokenClassifier` ("token_classification") or
            `BertSpanExtractor` ("span"), called on the encoder's inputs.
        kind: one of `KINDS`.

    Example:

    >>> import numpy as np
    >>> task = FineTuningTask(lambda features, training=None: tf.constant([[0.0, 2.0]]),
    ...                       "classification")
    >>> batch = {"input_ids": tf.ones([1, 3], "int32"), "input_mask": tf.ones([1, 3], "int32"),
    ...          "segment_ids": tf.zeros([1, 3], "int32"), "label": tf.constant([1])}
    >>> loss = task.loss(batch, task.forward(batch), task.batch_totals(batch))
    >>> bool(np.isclose(float(loss), np.log(1 + np.exp(-2.0))))
    True
    """

    def __init__(self, model, kind):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
        self.model = model
        self.kind = kind
        self.sum_names = SUM_NAMES[kind]

    def forward(self, batch, training=None):
        """The model's logits (a dict of start and end logits for spans)."""
        return self.model({name: batch[name] for name in INPUT_NAMES}, training=training)

    def batch_totals(self, batch):
        """The examples and, for token classification, the weighted pieces
        (`labelled`), whose global sums normalise the loss."""
        totals = {"examples": _examples(batch)}
        if self.kind == "token_classification":
            totals["labelled"] = tf.reduce_sum(tf.cast(batch["label_weights"], tf.float32))
        return totals

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        denominator = totals["labelled" if self.kind == "token_classification" else "examples"]
        return tf.reduce_sum(self._losses(batch, outputs)) / tf.maximum(denominator, 1.0)

    def _losses(self, batch, outputs):
        """The loss terms of the batch (per example, or per weighted piece)."""
        if self.kind == "classification":
            return _cross_entropy(batch["label"], outputs)
        if self.kind == "token_classification":
            return (_cross_entropy(batch["labels"], outputs)
                    * tf.cast(batch["label_weights"], tf.float32))
        return 0.5 * (_cross_entropy(batch["start_positions"], outputs["start_logits"])
                      + _cross_entropy(batch["end_positions"], outputs["end_logits"]))

    def sums(self, batch, outputs):
        """The summed loss, correct predictions and counts of a batch."""
        sums = {"loss_sum": tf.reduce_sum(self._losses(batch, outputs)),
                "examples": _examples(batch),
                "tokens": tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32))}
        if self.kind == "classification":
            sums["correct"] = tf.reduce_sum(_right(batch["label"], outputs))
        elif self.kind == "token_classification":
            weights = tf.cast(batch["label_weights"], tf.float32)
            sums["correct"] = tf.reduce_sum(_right(batch["labels"], outputs) * weights)
            sums["labelled"] = tf.reduce_sum(weights)
        else:
            start = _right(batch["start_positions"], outputs["start_logits"])
            end = _right(batch["end_positions"], outputs["end_logits"])
            sums.update(start_correct=tf.reduce_sum(start), end_correct=tf.reduce_sum(end),
                        both_correct=tf.reduce_sum(start * end))
        return sums

    def results(self, totals):
        """The metrics of `METRICS[kind]` from summed figures."""
        examples = max(totals["examples"], 1.0)
        if self.kind == "classification":
            return {"loss": totals["loss_sum"] / examples,
                    "accuracy": totals["correct"] / examples}
        if self.kind == "token_classification":
            labelled = max(totals["labelled"], 1.0)
            return {"loss": totals["loss_sum"] / labelled,
                    "token_accuracy": totals["correct"] / labelled}
        return {"loss": totals["loss_sum"] / examples,
                "start_accuracy": totals["start_correct"] / examples,
                "end_accuracy": totals["end_correct"] / examples,
                "exact_match": totals["both_correct"] / examples}

    def step_record(self, sums):
        """The per-step figures of `train_log.jsonl` besides the loss: the
        examples and the step's metrics."""
        record = {"examples": sums["examples"]}
        record.update((name, value) for name, value in self.results(sums).items()
                      if name != "loss")
        return record


def _examples(batch):
    return tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)


def _cross_entropy(labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=tf.cast(logits, tf.float32))


def _right(labels, logits):
    """1.0 where the argmax of `logits` is the label, else 0.0."""
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return tf.cast(tf.equal(predictions, tf.cast(labels, tf.int32)), tf.float32)
