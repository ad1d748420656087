"""The task protocol: everything `trainer.training_loop` asks of a task.

A model family trains on the shared loop by giving it one object with
these members; `TrainingLoop` checks them when it is built, so a task that
leaves one out fails at once with its name rather than in the middle of
a run.
"""

import typing


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
            "A task gives the loop every member of trainer.tasks.TrainingTask."
        )


# The protocol's attributes and methods, in the order they are declared.
MEMBERS = (*TrainingTask.__annotations__,
           *(name for name, value in vars(TrainingTask).items()
             if callable(value) and not name.startswith("_")))
