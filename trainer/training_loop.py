"""The custom `tf.distribute` training loop of BERT pretraining.

Why not `keras.Model.fit`: Keras 3's `fit` under `tf.distribute` strategies
still has open problems (keras-team/keras issues 20585, 20329 and 19891:
multi-worker and TPU training, and losses and metrics combined across
replicas), and pretraining needs things `fit` does not give: the loss
normalised over the global batch, clipping of the summed gradient, and
gradient accumulation inside `strategy.run`. So the step is written here,
with `strategy.run` inside a `tf.function`.

Loss over replicas. As in google-research/bert the masked-LM loss is
`sum(weights * cross_entropy) / sum(weights)` over the whole batch and the
next-sentence loss is the mean over the batch; the total is their sum. Each
replica first sums (all-reduce) the masked-LM weights and the example count
of its share of the global batch; its loss is its own weighted sums divided
by those global totals, so the replicas' losses, and their gradients, add
up to exactly the loss and gradient of one replica on the whole global
batch. The loop sums the gradients (all-reduce), logs their global norm,
clips them (`clip_norm`) and applies them once.

Gradient accumulation. With `gradient_accumulation_steps=K` each replica
splits its batch into K micro-batches and runs them one after the other in
a `tf.while_loop`, adding up their gradients; the optimizer is applied once
per step. The step's examples are the same, only the peak activation memory
is that of one micro-batch, so K micro-batches of B/K give the same update
as one batch of B.

Metrics. The step returns sums (weighted masked-LM loss and correct
predictions, masked-LM weight, next-sentence loss and correct predictions,
examples, real tokens) reduced over the replicas; `PretrainingMetrics` adds
them up over a logging interval on the host and derives the losses,
accuracies and the masked-LM perplexity, so that every number is exact over
the global batch whatever the number of replicas.
"""

import math
import time

import keras
import tensorflow as tf

from tfnlp.models.bert_pretraining import pretraining_loss
from trainer import optimization

SUM = tf.distribute.ReduceOp.SUM

# Added to the masked-LM weight sum, as google-research/bert does, so that a
# batch without predictions gives a loss of 0 rather than NaN.
MLM_DENOMINATOR_EPSILON = 1e-5


def pretraining_sums(outputs, batch):
    """The summed losses and counts of one (micro-)batch, in float32.

    Args:
        outputs: the pretraining model's `{"mlm_logits": (B, P, vocab),
            "nsp_logits": (B, 2)}`.
        batch: the `tfnlp.data.pretraining_dataset` features.

    Returns:
        A dict of scalars: `mlm_loss_sum` (sum of weight * cross-entropy),
        `mlm_weight_sum`, `mlm_correct` (weighted correct predictions),
        `nsp_loss_sum`, `nsp_correct`, `examples` and `tokens` (the sum of
        `input_mask`).
    """
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


class PretrainingMetrics:
    """Adds up the step sums of `pretraining_sums` and derives the metrics.

    `update(sums)` after each step; `result()` gives `loss`, `mlm_loss`,
    `nsp_loss`, `mlm_accuracy`, `nsp_accuracy` and `mlm_perplexity`
    (`exp(mlm_loss)`) over every step since the last `reset()`.
    """

    NAMES = (
        "mlm_loss_sum", "mlm_weight_sum", "mlm_correct", "nsp_loss_sum",
        "nsp_correct", "examples", "tokens",
    )

    def __init__(self):
        self.reset()

    def reset(self):
        self.totals = dict.fromkeys(self.NAMES, 0.0)
        self.steps = 0

    def update(self, sums):
        for name in self.NAMES:
            self.totals[name] += float(sums[name])
        self.steps += 1

    def result(self):
        totals = self.totals
        mlm_loss = totals["mlm_loss_sum"] / (totals["mlm_weight_sum"] + MLM_DENOMINATOR_EPSILON)
        nsp_loss = totals["nsp_loss_sum"] / max(totals["examples"], 1.0)
        return {
            "loss": mlm_loss + nsp_loss,
            "mlm_loss": mlm_loss,
            "nsp_loss": nsp_loss,
            "mlm_accuracy": totals["mlm_correct"] / max(totals["mlm_weight_sum"], 1e-9),
            "nsp_accuracy": totals["nsp_correct"] / max(totals["examples"], 1.0),
            "mlm_perplexity": math.exp(min(mlm_loss, 80.0)),
        }


class PretrainingLoop:
    """The distributed train and eval steps of a pretraining model.

    Build the model and the optimizer under `strategy.scope()` first.

    Args:
        strategy: the `tf.distribute.Strategy`.
        model: the pretraining model (the batch dict in, `mlm_logits` and
            `nsp_logits` out).
        optimizer: a Keras optimizer (possibly a `LossScaleOptimizer`),
            built on `model.trainable_variables`.
        gradient_accumulation_steps: micro-batches per replica batch; the
            per-replica batch must be divisible by it.
        clip_norm: clip the summed gradient to this global norm; None or 0
            for no clipping.
        jit_compile: compile the replica step with XLA.

    Call `train_step(iterator)` / `eval_step(iterator)` with an iterator of
    a distributed dataset; each runs one global batch and returns a dict of
    host floats: the `pretraining_sums` over the global batch, and for
    training also `loss` (the step's loss) and `gradient_norm` (the global
    norm of the gradient before clipping).
    """

    def __init__(
        self,
        strategy,
        model,
        optimizer,
        gradient_accumulation_steps=1,
        clip_norm=None,
        jit_compile=False,
    ):
        if int(gradient_accumulation_steps) < 1:
            raise ValueError(
                "gradient_accumulation_steps must be at least 1 (1: no "
                f"accumulation). Received: {gradient_accumulation_steps}."
            )
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.accumulation_steps = int(gradient_accumulation_steps)
        self.clip_norm = clip_norm or None
        self.num_replicas = strategy.num_replicas_in_sync
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        # The loop sums the gradients itself; see leave_gradient_summing_to_caller.
        self.optimizer_sums = not optimization.leave_gradient_summing_to_caller(optimizer)
        self._replica_train = tf.function(self._replica_train_step, jit_compile=jit_compile)
        self._replica_eval = tf.function(self._replica_eval_step, jit_compile=jit_compile)
        self._train = tf.function(self._distributed_train_step)
        self._eval = tf.function(self._distributed_eval_step)

    # === Replica steps ===

    def _gradients(self, batch, mlm_denominator, examples_total):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(batch, training=True)
            loss = pretraining_loss(
                batch,
                outputs,
                global_batch_size=examples_total,
                masked_lm_denominator=mlm_denominator,
            )["loss"]
            scaled_loss = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled_loss, variables)
        gradients = [
            tf.zeros_like(variable) if gradient is None else tf.convert_to_tensor(gradient)
            for gradient, variable in zip(gradients, variables)
        ]
        sums = pretraining_sums(outputs, batch)
        sums["loss"] = loss
        return gradients, sums

    def _replica_train_step(self, batch):
        context = tf.distribute.get_replica_context()
        weight_total, examples_total = context.all_reduce(
            SUM,
            [
                tf.reduce_sum(tf.cast(batch["masked_lm_weights"], tf.float32)),
                tf.cast(tf.shape(batch["input_ids"])[0], tf.float32),
            ],
        )
        mlm_denominator = weight_total + MLM_DENOMINATOR_EPSILON
        if self.accumulation_steps == 1:
            gradients, sums = self._gradients(batch, mlm_denominator, examples_total)
        else:
            gradients, sums = self._accumulated_gradients(
                batch, mlm_denominator, examples_total
            )
        gradients = context.all_reduce(SUM, gradients)
        scale = (
            tf.cast(self.optimizer.dynamic_scale, tf.float32) if self.loss_scaling else 1.0
        )
        scaled_norm = tf.linalg.global_norm(gradients)
        if self.clip_norm:
            gradients, _ = tf.clip_by_global_norm(
                gradients, self.clip_norm * scale, use_norm=scaled_norm
            )
        if self.optimizer_sums:
            gradients = [gradient / self.num_replicas for gradient in gradients]
        self.optimizer.apply(gradients, self.model.trainable_variables)
        # Every replica has the same norm; summed over replicas below.
        sums["gradient_norm"] = scaled_norm / scale / self.num_replicas
        return sums

    def _accumulated_gradients(self, batch, mlm_denominator, examples_total):
        steps = self.accumulation_steps

        def split(tensor):
            shape = tf.shape(tensor)
            tf.debugging.assert_equal(
                shape[0] % steps,
                0,
                message=(
                    "The per-replica batch size must be divisible by "
                    "gradient_accumulation_steps."
                ),
            )
            return tf.reshape(tensor, tf.concat([[steps, shape[0] // steps], shape[1:]], 0))

        micro_batches = {name: split(tensor) for name, tensor in batch.items()}
        variables = self.model.trainable_variables
        zero_gradients = [tf.zeros(variable.shape, variable.dtype) for variable in variables]
        zero_sums = {
            name: tf.constant(0.0)
            for name in PretrainingMetrics.NAMES + ("loss",)
        }

        def body(index, gradients, sums):
            micro_batch = {name: tensor[index] for name, tensor in micro_batches.items()}
            micro_gradients, micro_sums = self._gradients(
                micro_batch, mlm_denominator, examples_total
            )
            gradients = [total + new for total, new in zip(gradients, micro_gradients)]
            sums = {name: sums[name] + micro_sums[name] for name in sums}
            return index + 1, gradients, sums

        _, gradients, sums = tf.while_loop(
            lambda index, *_: index < steps,
            body,
            (tf.constant(0), zero_gradients, zero_sums),
        )
        return gradients, sums

    def _replica_eval_step(self, batch):
        return pretraining_sums(self.model(batch, training=False), batch)

    # === Distributed steps ===

    def _distributed_train_step(self, iterator):
        sums = self.strategy.run(self._replica_train, args=(next(iterator),))
        return {name: self.strategy.reduce(SUM, value, axis=None) for name, value in sums.items()}

    def _distributed_eval_step(self, iterator):
        sums = self.strategy.run(self._replica_eval, args=(next(iterator),))
        return {name: self.strategy.reduce(SUM, value, axis=None) for name, value in sums.items()}

    def train_step(self, iterator):
        """Runs one training step; returns its sums as host floats."""
        return {name: float(value) for name, value in self._train(iterator).items()}

    def eval_step(self, iterator):
        """Runs the model on one global batch; returns its sums."""
        return {name: float(value) for name, value in self._eval(iterator).items()}


class Throughput:
    """Examples and real tokens per second between two `rates()` calls."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.start = time.perf_counter()

    def rates(self, examples, tokens):
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.reset()
        return {"examples_per_second": examples / elapsed, "tokens_per_second": tokens / elapsed}
