"""Translation (an encoder-decoder on source/target pairs) as a training-loop task.

The loss is the label-smoothed cross-entropy summed over the non-padding
target tokens of the whole global batch, divided by their number (fairseq
and the Model Garden normalise by tokens as well). `batch_totals` gives the
target tokens of a replica's share; the loop sums them over the replicas,
so each replica's loss is its token sum over the global count and the
replicas' losses add up to the loss of one replica on the global batch.
"""

import math

import tensorflow as tf

from tfnlp.data.translation_schema import INPUTS, PAD_ID, TARGETS
from tfnlp.losses.translation_losses import label_smoothed_cross_entropy
from tfnlp.models.seq2seq import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS, decoder_inputs


class TranslationTask:
    """The loss, step sums and metrics of a translation model.

    Args:
        model: a `tfnlp.models.seq2seq` model called on
            `{"encoder_token_ids", "decoder_token_ids"}` and returning the
            logits `(batch, target_length, vocabulary)`.
        label_smoothing: ε of the label-smoothed cross-entropy.

    The batches are those of `tfnlp.data.translation_dataset`: `inputs` and
    `targets`, int `(batch, length)`, 0-padded, each ending with `EOS_ID`.

    Example:

    >>> from tfnlp.models import TransformerSeq2Seq
    >>> model = TransformerSeq2Seq.from_preset(
    ...     "tiny", vocabulary_size=50, num_encoder_layers=1, num_decoder_layers=1)
    >>> task = TranslationTask(model, label_smoothing=0.1)
    >>> task.results(dict.fromkeys(task.sum_names, 0.0))["token_accuracy"]
    0.0

    References:
        - [Vaswani et al., 2017. Attention Is All You Need](
          https://arxiv.org/abs/1706.03762)
    """

    sum_names = ("loss_sum", "nll_sum", "target_tokens", "correct", "examples", "tokens")

    def __init__(self, model, label_smoothing=0.1):
        self.model = model
        self.label_smoothing = label_smoothing

    def forward(self, batch, training=None):
        """The logits of the targets, teacher-forced."""
        return self.model(
            {ENCODER_TOKEN_IDS: batch[INPUTS], DECODER_TOKEN_IDS: decoder_inputs(batch[TARGETS])},
            training=training,
        )

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {"target_tokens": _real_tokens(batch[TARGETS])}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss per target token."""
        loss, _ = label_smoothed_cross_entropy(batch[TARGETS], outputs, self.label_smoothing)
        return tf.reduce_sum(loss) / tf.maximum(totals["target_tokens"], 1.0)

    def sums(self, batch, outputs):
        """The summed losses and counts of one (micro-)batch, in float32:
        `loss_sum` (label-smoothed), `nll_sum`, `target_tokens`, `correct`
        (argmax = target), `examples`, and `tokens` (real source plus target
        tokens, for the throughput)."""
        targets = tf.cast(batch[TARGETS], tf.int32)
        loss, nll = label_smoothed_cross_entropy(targets, outputs, self.label_smoothing)
        weights = tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        target_tokens = tf.reduce_sum(weights)
        return {
            "loss_sum": tf.reduce_sum(loss),
            "nll_sum": tf.reduce_sum(nll),
            "target_tokens": target_tokens,
            "correct": tf.reduce_sum(weights * tf.cast(tf.equal(predictions, targets),
                                                       tf.float32)),
            "examples": tf.cast(tf.shape(targets)[0], tf.float32),
            "tokens": target_tokens + _real_tokens(batch[INPUTS]),
        }

    @staticmethod
    def results(totals):
        """`loss` (label-smoothed, per target token), `nll_loss`,
        `perplexity` (`exp(nll_loss)`) and `token_accuracy` of sums added up
        over steps."""
        tokens = max(totals["target_tokens"], 1.0)
        nll_loss = totals["nll_sum"] / tokens
        return {
            "loss": totals["loss_sum"] / tokens,
            "nll_loss": nll_loss,
            "perplexity": math.exp(min(nll_loss, 80.0)),
            "token_accuracy": totals["correct"] / tokens,
        }

    @staticmethod
    def step_record(sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        return {
            "nll_loss": sums["nll_sum"] / max(sums["target_tokens"], 1.0),
            "target_tokens": sums["target_tokens"],
        }


def _real_tokens(ids):
    return tf.reduce_sum(tf.cast(tf.not_equal(ids, PAD_ID), tf.float32))
