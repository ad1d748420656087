"""BERT pretraining (masked LM and next sentence) as a training-loop task.

As in google-research/bert the masked-LM loss is `sum(weights *
cross_entropy) / sum(weights)` over the whole global batch and the
next-sentence loss is the mean over the global batch; the total is their
sum. `batch_totals` gives the masked-LM weight and the examples of a
replica's share of the batch; the loop sums them over the replicas, and
`loss` divides this replica's weighted sums by those global totals.
"""

import math

import tensorflow as tf

from tfnlp.losses.pretraining_losses import MASKED_LM_DENOMINATOR_EPSILON, pretraining_loss


class BertPretrainingTask:
    """The loss, step sums and metrics of a `BertPretrainingModel`.

    Args:
        model: the `tfnlp.models.BertPretrainingModel` (the batch dict of
            `tfnlp.data.pretraining_dataset` in; `mlm_logits` and
            `nsp_logits` out).

    Example:

    >>> from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel
    >>> encoder = BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=50))
    >>> task = BertPretrainingTask(BertPretrainingModel(encoder))
    >>> task.results(dict.fromkeys(task.sum_names, 0.0))["mlm_accuracy"]
    0.0

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](https://arxiv.org/abs/1810.04805)
    """

    sum_names = (
        "mlm_loss_sum", "mlm_weight_sum", "mlm_correct", "nsp_loss_sum",
        "nsp_correct", "examples", "tokens",
    )

    def __init__(self, model):
        self.model = model

    def forward(self, batch, training=None):
        """The model's outputs on a pretraining batch."""
        return self.model(batch, training=training)

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {
            "mlm_weight": tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
            "examples": tf.cast(tf.shape(batch["input_ids"])[0], tf.float32),
        }

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        return pretraining_loss(
            batch,
            outputs,
            global_batch_size=totals["examples"],
            masked_lm_denominator=totals["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON,
        )["loss"]

    def sums(self, batch, outputs):
        """The summed losses and counts of one (micro-)batch, in float32:
        `mlm_loss_sum` (sum of weight * cross-entropy), `mlm_weight_sum`,
        `mlm_correct` (weighted correct predictions), `nsp_loss_sum`,
        `nsp_correct`, `examples` and `tokens` (the sum of `input_mask`)."""
        mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
        nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)
        labels = tf.cast(batch["masked_lm_ids"], tf.int32)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        mlm_cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=mlm_logits
        )
        mlm_predictions = tf.argmax(mlm_logits, axis=-1, output_type=tf.int32)
        nsp_labels = tf.reshape(tf.cast(batch["next_sentence_labels"], tf.int32), [-1])
        nsp_cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=nsp_labels, logits=nsp_logits
        )
        nsp_predictions = tf.argmax(nsp_logits, axis=-1, output_type=tf.int32)
        return {
            "mlm_loss_sum": tf.reduce_sum(weights * mlm_cross_entropy),
            "mlm_weight_sum": tf.reduce_sum(weights),
            "mlm_correct": tf.reduce_sum(
                weights * tf.cast(tf.equal(mlm_predictions, labels), tf.float32)
            ),
            "nsp_loss_sum": tf.reduce_sum(nsp_cross_entropy),
            "nsp_correct": tf.reduce_sum(
                tf.cast(tf.equal(nsp_predictions, nsp_labels), tf.float32)
            ),
            "examples": tf.cast(tf.shape(nsp_labels)[0], tf.float32),
            "tokens": tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32)),
        }

    @staticmethod
    def results(totals):
        """`loss`, `mlm_loss`, `nsp_loss`, `mlm_accuracy`, `nsp_accuracy` and
        `mlm_perplexity` (`exp(mlm_loss)`) of sums added up over steps."""
        mlm_loss = totals["mlm_loss_sum"] / (
            totals["mlm_weight_sum"] + MASKED_LM_DENOMINATOR_EPSILON)
        nsp_loss = totals["nsp_loss_sum"] / max(totals["examples"], 1.0)
        return {
            "loss": mlm_loss + nsp_loss,
            "mlm_loss": mlm_loss,
            "nsp_loss": nsp_loss,
            "mlm_accuracy": totals["mlm_correct"] / max(totals["mlm_weight_sum"], 1e-9),
            "nsp_accuracy": totals["nsp_correct"] / max(totals["examples"], 1.0),
            "mlm_perplexity": math.exp(min(mlm_loss, 80.0)),
        }

    @staticmethod
    def step_record(sums):
        """The per-step losses of `train_log.jsonl`."""
        return {
            "mlm_loss": sums["mlm_loss_sum"] / (
                sums["mlm_weight_sum"] + MASKED_LM_DENOMINATOR_EPSILON),
            "nsp_loss": sums["nsp_loss_sum"] / max(sums["examples"], 1.0),
        }
