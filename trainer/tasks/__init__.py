"""Training tasks, one module per family, registered by name.

A family's module holds its flags and their checks, how it builds its
model, data, loss, metrics and evaluator, its loop-level task
(`trainer.training_loop.TrainingTask`), and how a run of it is loaded and
exported; it registers itself with `registry.register_task`.
`trainer.train` and `trainer.export` find it by name.
"""

from trainer.tasks.registry import TaskEntry, get_task, register_task, task_names

__all__ = ["TaskEntry", "get_task", "register_task", "task_names"]
