"""The custom `tf.distribute` training loop, for any task.

`TrainingTask` is what the loop asks of a task; `TrainingLoop` holds the
distributed train and eval steps of a task's model (and why they are not
`keras.Model.fit`'s), `train` the host loop that runs them on a
`LoopSchedule`, logs, evaluates and saves checkpoints, and `SumMetrics` the
task's metrics added up over the global batch.
"""

import dataclasses
import logging
import math
import time
import typing

import keras
import tensorflow as tf

from trainer import optimization
from trainer.progress import Progress

LOGGER = logging.getLogger(__name__)

SUM = tf.distribute.ReduceOp.SUM


@typing.runtime_checkable
class TrainingTask(typing.Protocol):
    """What the training loop calls on a task.

    Attributes:
        model: the Keras model, built under the strategy's scope.
        sum_names: the names of the float32 scalars that `sums` returns,
            with at least "examples" and "tokens" (for the throughput).

    Methods:
        forward(batch, training): the model's outputs on a batch (the model
            called on the batch, or on inputs the task derives from it).
        batch_totals(batch): a dict of scalar counts whose sums over the
            global batch normalise the loss (the loop all-reduces them).
        loss(batch, outputs, totals): this replica's share of the loss of
            the global batch, `totals` being the global `batch_totals`.
        sums(batch, outputs): the summed losses, correct predictions and
            counts of a (micro-)batch, keyed by `sum_names`; the loop adds
            them up over micro-batches and replicas.
        results(totals): the metrics of sums added up over steps, on the
            host (floats), with "loss" among them.
        step_record(sums): the figures of one step's `train_log.jsonl`
            line besides "step", "loss", "learning_rate" and
            "gradient_norm".

    Example:

    >>> from tfnlp.models import TransformerSeq2Seq
    >>> from trainer.tasks.translation import TranslationTask
    >>> model = TransformerSeq2Seq.from_preset(
    ...     "tiny", vocabulary_size=50, num_encoder_layers=1, num_decoder_layers=1)
    >>> isinstance(TranslationTask(model), TrainingTask)
    True
    """

    model: typing.Any
    sum_names: tuple

    def forward(self, batch, training=None): ...

    def batch_totals(self, batch): ...

    def loss(self, batch, outputs, totals): ...

    def sums(self, batch, outputs): ...

    def results(self, totals): ...

    def step_record(self, sums): ...


def check_task(task):
    """Raises TypeError naming the members of `TrainingTask` that `task`
    lacks."""
    missing = [name for name in MEMBERS if not hasattr(task, name)]
    if missing:
        raise TypeError(
            f"{type(task).__name__} is not a training task: it lacks {', '.join(missing)}. "
            "A task gives the loop every member of trainer.training_loop.TrainingTask."
        )


# The protocol's attributes and methods, in the order they are declared.
MEMBERS = (*TrainingTask.__annotations__,
           *(name for name, value in vars(TrainingTask).items()
             if callable(value) and not name.startswith("_")))


class SumMetrics:
    """Adds up a task's step sums on the host and derives its metrics.

    `update(sums)` after each step; `result()` gives `task.results` of the
    sums since the last `reset()`; `totals` holds those sums. The step
    returns the task's sums reduced over the replicas, and the metrics are
    derived from their totals over a logging interval, so that every number
    is exact over the global batch whatever the number of replicas.

    Args:
        task: the training task (its `sum_names` and `results`).
    """

    def __init__(self, task):
        self.task = task
        self.reset()

    def reset(self):
        self.totals = dict.fromkeys(self.task.sum_names, 0.0)

    def update(self, sums):
        for name in self.task.sum_names:
            self.totals[name] += float(sums[name])

    def result(self):
        return self.task.results(self.totals)


class TrainingLoop:
    """The distributed train and eval steps of a task's model.

    Build the model and the optimizer under `strategy.scope()` first.

    Why not `keras.Model.fit`: Keras 3's `fit` under `tf.distribute`
    strategies still has open problems (multi-worker and TPU training, and
    losses and metrics combined across replicas), and pretraining needs
    things `fit` does not give: the loss normalised over the global batch,
    clipping of the summed gradient, and gradient accumulation inside
    `strategy.run`. So the step is written here, with `strategy.run` inside
    a `tf.function`.

    The task. What is particular to a model family comes from a task
    object that has every member of `trainer.training_loop.TrainingTask` (the
    model, its forward pass, the loss normalisers, the loss, the summed
    figures of a batch, the metrics derived from them and the per-step log
    record); the loop checks them when it is built.

    Loss over replicas. Each replica first sums (all-reduce) the
    `batch_totals` of its share of the global batch; its loss is normalised
    by those global totals, so the replicas' losses, and their gradients,
    add up to exactly the loss and gradient of one replica on the whole
    global batch. The loop sums the gradients (all-reduce), logs their
    global norm, clips them (`clip_norm`) and applies them once.

    Gradient accumulation. With `gradient_accumulation_steps=K` each
    replica splits its batch into K micro-batches and runs them one after
    the other in a `tf.while_loop`, adding up their gradients; the
    optimizer is applied once per step. The step's examples are the same,
    only the peak activation memory is that of one micro-batch, so K
    micro-batches of B/K give the same update as one batch of B.

    Args:
        strategy: the `tf.distribute.Strategy`.
        task: the training task (`trainer.training_loop.TrainingTask`).
        optimizer: a Keras optimizer (possibly a `LossScaleOptimizer`),
            built on `task.model.trainable_variables`.
        gradient_accumulation_steps: micro-batches per replica batch; the
            per-replica batch must be divisible by it.
        clip_norm: clip the summed gradient to this global norm; None or 0
            for no clipping.
        jit_compile: compile the replica step with XLA.

    Call `train_step(iterator)` / `eval_step(iterator)` with an iterator of
    a distributed dataset; each runs one global batch and returns a dict of
    host floats: the task's sums over the global batch, and for training
    also `loss` (the step's loss) and `gradient_norm` (the global norm of the
    gradient before clipping).

    Example:

    >>> import tensorflow as tf
    >>> from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel
    >>> from trainer.tasks.bert_pretraining import BertPretrainingTask
    >>> strategy = tf.distribute.get_strategy()
    >>> model = BertPretrainingModel(
    ...     BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=50)))
    >>> optimizer = keras.optimizers.Adam(1e-3)
    >>> loop = TrainingLoop(strategy, BertPretrainingTask(model), optimizer)
    >>> batch = {"input_ids": tf.fill([2, 8], 7), "input_mask": tf.ones([2, 8], "int32"),
    ...          "segment_ids": tf.zeros([2, 8], "int32"),
    ...          "masked_lm_positions": tf.fill([2, 2], 3),
    ...          "masked_lm_ids": tf.fill([2, 2], 9),
    ...          "masked_lm_weights": tf.ones([2, 2]),
    ...          "next_sentence_labels": tf.zeros([2, 1], "int32")}
    >>> dataset = tf.data.Dataset.from_tensors(batch).repeat()
    >>> sums = loop.train_step(iter(strategy.experimental_distribute_dataset(dataset)))
    >>> sums["examples"], sums["loss"] > 0
    (2.0, True)
    """

    def __init__(
        self,
        strategy,
        task,
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
        check_task(task)
        self.strategy = strategy
        self.task = task
        self.model = task.model
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

    def _gradients(self, batch, totals):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.task.forward(batch, training=True)
            loss = self.task.loss(batch, outputs, totals)
            scaled_loss = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled_loss, variables)
        gradients = [
            tf.zeros_like(variable) if gradient is None else tf.convert_to_tensor(gradient)
            for gradient, variable in zip(gradients, variables)
        ]
        sums = dict(self.task.sums(batch, outputs))
        sums["loss"] = loss
        return gradients, sums

    def _replica_train_step(self, batch):
        context = tf.distribute.get_replica_context()
        totals = context.all_reduce(SUM, self.task.batch_totals(batch))
        if self.accumulation_steps == 1:
            gradients, sums = self._gradients(batch, totals)
        else:
            gradients, sums = self._accumulated_gradients(batch, totals)
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

    def _accumulated_gradients(self, batch, totals):
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
        zero_sums = {name: tf.constant(0.0) for name in self.task.sum_names + ("loss",)}

        def body(index, gradients, sums):
            micro_batch = {name: tensor[index] for name, tensor in micro_batches.items()}
            micro_gradients, micro_sums = self._gradients(micro_batch, totals)
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
        return self.task.sums(batch, self.task.forward(batch, training=False))

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


@dataclasses.dataclass(frozen=True)
class LoopSchedule:
    """When the host loop of `train` logs, evaluates, draws and saves.

    Args:
        train_steps: the step to train to.
        log_every_steps: steps between TensorBoard scalars and log lines.
        checkpoint_every_steps: steps between checkpoints (0: at the end only).
        eval_every_steps: steps between evaluations (0: at the end only).
        images_every_steps: steps between pictures and sample text (0: none).
        stop_time_seconds: stop after the first step that ends this many
            seconds after `train` began, evaluating and saving as at the
            last step (0: no limit; fairseq's `--stop-time-hours`).
        progress_every_seconds: seconds between progress lines when the
            output is not a terminal (`trainer.progress.Progress`).
    """

    train_steps: int
    log_every_steps: int = 100
    checkpoint_every_steps: int = 1000
    eval_every_steps: int = 0
    images_every_steps: int = 0
    stop_time_seconds: float = 0
    progress_every_seconds: float = 30.0

    def due(self, every, step, last=False):
        """Whether something done every `every` steps (and at the `last`
        step; never when `every` is 0) is due at `step`."""
        return bool(every) and (step % every == 0 or last)


def evaluate(loop, eval_iterator, eval_steps):
    """The task's metrics over `eval_steps` global batches of an iterator."""
    metrics = SumMetrics(loop.task)
    for _ in range(max(eval_steps, 1)):
        metrics.update(loop.eval_step(eval_iterator))
    return metrics.result()


def train(loop, iterator, checkpoints, logs, schedule, learning_rate, start_step=0,
          evaluator=None, samples=None):
    """Trains from `start_step` to `schedule.train_steps`, or until
    `schedule.stop_time_seconds` have passed; returns the last loss.

    It logs every step to `train_log.jsonl`, the task's metrics, the
    learning rate, the gradient norm and the throughput to TensorBoard
    every `log_every_steps`, evaluates, writes pictures and sample text
    (attention heatmaps, masked-LM predictions) and saves checkpoints when
    due, and stops with `FloatingPointError` naming the step when the loss
    is NaN or infinite, before saving, so the last checkpoint is a good
    one.

    Args:
        loop: the `TrainingLoop`.
        iterator: an iterator of the distributed training dataset.
        checkpoints: the run's `trainer.checkpoints.Checkpoints`.
        logs: the run's `trainer.summaries.RunLogs`.
        schedule: the `LoopSchedule`.
        learning_rate: the learning rate of a step (0-based), for the logs.
        start_step: the step restored from the latest checkpoint.
        evaluator: None, or a function returning the evaluation metrics
            (run at `eval_every_steps` and at the end, with the optimizer's
            averaged weights when it keeps them: `ema_momentum`).
        samples: None, or a function `(writers, step)` that writes pictures
            and sample text (`trainer.summaries.sample_writer`) with the
            run's `SummaryWriters`, called at `images_every_steps` (and at
            the last step).

    Raises:
        FloatingPointError: when a step's loss is NaN or infinite.
    """
    metrics = SumMetrics(loop.task)
    throughput = Throughput()
    progress = Progress(schedule.train_steps, start=start_step,
                        interval_seconds=schedule.progress_every_seconds)
    started = time.monotonic()
    step, loss = start_step, None
    while step < schedule.train_steps:
        rate = float(learning_rate(step))
        logs.profiler.before_step(step + 1)
        with logs.profiler.step_trace(step + 1):
            sums = loop.train_step(iterator)
        step += 1
        checkpoints.step.assign(step)
        logs.profiler.after_step(step)
        loss = sums["loss"]
        if not math.isfinite(loss):
            raise FloatingPointError(
                f"The training loss is {loss} at step {step}. Training stopped; the "
                "last checkpoint is kept. Lower --learning_rate, set --clip_norm, or "
                "use --mixed_precision=bfloat16 instead of float16, then re-run to "
                "resume from that checkpoint."
            )
        last = step == schedule.train_steps or out_of_time(schedule, started)
        metrics.update(sums)
        progress.update(step, examples=sums.get("examples", 0), tokens=sums.get("tokens", 0),
                        loss=loss)
        logs.train_log.write({
            "step": step, "loss": loss, **loop.task.step_record(sums),
            "learning_rate": rate, "gradient_norm": sums["gradient_norm"],
        })
        if schedule.due(schedule.log_every_steps, step, last):
            values = metrics.result()
            values.update(throughput.rates(metrics.totals["examples"], metrics.totals["tokens"]))
            values["learning_rate"] = rate
            values["gradient_norm"] = sums["gradient_norm"]
            logs.writers.scalars(logs.writers.train, values, step)
            LOGGER.info("step %d: %s", step, _format(values))
            metrics.reset()
        if samples and schedule.due(schedule.images_every_steps, step, last):
            samples(logs.writers, step)
        if evaluator and (last or schedule.due(schedule.eval_every_steps, step)):
            with optimization.averaged_weights(loop.optimizer):
                values = evaluator()
            logs.writers.scalars(logs.writers.eval, values, step)
            logs.eval_log.write({"step": step, **values})
            LOGGER.info("eval at step %d: %s", step, _format(values))
            throughput.reset()
        if last or schedule.due(schedule.checkpoint_every_steps, step):
            checkpoints.save(step)
        if last:
            if step < schedule.train_steps:
                LOGGER.info("Stopped at step %d of %d: %.0f seconds of training have passed.",
                            step, schedule.train_steps, time.monotonic() - started)
            break
    return loss


def out_of_time(schedule, started):
    """Whether `schedule.stop_time_seconds` (when set) have passed since
    `started` (a `time.monotonic()` reading)."""
    return bool(schedule.stop_time_seconds) and (
        time.monotonic() - started >= schedule.stop_time_seconds)


def _format(values):
    return ", ".join(f"{name}={value:.4g}" for name, value in values.items())
