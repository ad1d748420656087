"""Causal language modelling (a decoder predicting each next token) as a
training-loop task.

A batch holds windows of `sequence_length + 1` token ids
(`tfnlp.data.language_model_dataset`); the model reads the first
`sequence_length` and predicts the last `sequence_length`. The loss is the
cross-entropy summed over the predicted tokens of the whole global batch,
divided by their number (nanoGPT's and Hugging Face's mean over tokens,
exact across replicas: `batch_totals` gives the predicted tokens of a
replica's share and the loop sums them over the replicas).

Besides the loss per token and the perplexity, the evaluation reports bits
per character: the summed negative log-likelihood over the number of
characters the predicted tokens stand for (each record's
`character_count`), in bits. Unlike the loss per token it does not depend
on the tokenization, so a character model and a subword model of the same
text compare.
"""

import math

import tensorflow as tf

TOKEN_IDS = "token_ids"
CHARACTER_COUNT = "character_count"


class LanguageModelTask:
    """The loss, step sums and metrics of a causal language model.

    Args:
        model: a decoder-only language model called on token ids
            `(batch, length)` and returning logits `(batch, length,
            vocabulary)` (`tfnlp.models.GPTCausalLM`).

    The batches are dicts with `token_ids`, int `(batch, sequence_length
    + 1)`, and optionally `character_count`, `(batch,)` (the characters of
    each window's predicted tokens).

    Example:

    >>> task = LanguageModelTask(model=None)
    >>> totals = {"nll_sum": 2 * math.log(2.0), "target_tokens": 2.0, "characters": 4.0,
    ...           "correct": 1.0, "examples": 1.0, "tokens": 3.0}
    >>> results = task.results(totals)
    >>> round(results["perplexity"], 6), round(results["bits_per_character"], 6)
    (2.0, 0.5)

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)
    """

    sum_names = ("nll_sum", "target_tokens", "characters", "correct", "examples", "tokens")

    def __init__(self, model):
        self.model = model

    def forward(self, batch, training=None):
        """The logits of every predicted position."""
        return self.model(batch[TOKEN_IDS][:, :-1], training=training)

    def batch_totals(self, batch):
        """The counts whose global sums normalise the loss."""
        return {"target_tokens": _target_tokens(batch)}

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss per predicted token."""
        return tf.reduce_sum(_cross_entropy(batch, outputs)) / tf.maximum(
            totals["target_tokens"], 1.0)

    def sums(self, batch, outputs):
        """The summed figures of one (micro-)batch, in float32: `nll_sum`,
        `target_tokens`, `characters` (of the predicted tokens; the target
        tokens when the batch has no `character_count`), `correct` (argmax
        = target), `examples` and `tokens` (the tokens read, for the
        throughput)."""
        targets = tf.cast(batch[TOKEN_IDS][:, 1:], tf.int32)
        predictions = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        target_tokens = _target_tokens(batch)
        if CHARACTER_COUNT in batch:
            characters = tf.reduce_sum(tf.cast(batch[CHARACTER_COUNT], tf.float32))
        else:
            characters = target_tokens
        return {
            "nll_sum": tf.reduce_sum(_cross_entropy(batch, outputs)),
            "target_tokens": target_tokens,
            "characters": characters,
            "correct": tf.reduce_sum(tf.cast(tf.equal(predictions, targets), tf.float32)),
            "examples": tf.cast(tf.shape(targets)[0], tf.float32),
            "tokens": target_tokens,
        }

    @staticmethod
    def results(totals):
        """`loss` (nats per token), `perplexity` (`exp(loss)`),
        `bits_per_character`, `loss_per_character` (nats) and
        `token_accuracy` of sums added up over steps."""
        tokens = max(totals["target_tokens"], 1.0)
        characters = max(totals["characters"], 1.0)
        loss = totals["nll_sum"] / tokens
        return {
            "loss": loss,
            "perplexity": math.exp(min(loss, 80.0)),
            "bits_per_character": totals["nll_sum"] / characters / math.log(2.0),
            "loss_per_character": totals["nll_sum"] / characters,
            "token_accuracy": totals["correct"] / tokens,
        }

    @staticmethod
    def step_record(sums):
        """The per-step figures of `train_log.jsonl` besides the loss."""
        return {"target_tokens": sums["target_tokens"]}


def _target_tokens(batch):
    shape = tf.shape(batch[TOKEN_IDS])
    return tf.cast(shape[0] * (shape[1] - 1), tf.float32)


def _cross_entropy(batch, logits):
    targets = tf.cast(batch[TOKEN_IDS][:, 1:], tf.int32)
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=targets, logits=tf.cast(logits, tf.float32))
