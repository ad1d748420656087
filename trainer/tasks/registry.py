"""The registry of training tasks, by the name `--task` and a run's
`serving.json` give them.

A family's task module registers one `TaskEntry` with `register_task`;
`trainer.train` trains and `trainer.export` exports through it, so a new
family needs no row anywhere else. Every module of `trainer.tasks` is
imported the first time a name is looked up.
"""

import dataclasses
import importlib
import pkgutil
import typing

from tfnlp.command_line import UsageError

_TASKS = {}


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """What `trainer.train` and `trainer.export` ask of a task.

    Attributes:
        names: the task's `--task` values; the first is its name. A run
            records the one it trained as its serving record's "model".
        summary: one line for `tfnlp train --help`.
        parse_flags: `argv -> flags` (the task's parser; exits 2 on errors).
        check_paths: `flags -> None`, raising `UsageError` for an input
            that cannot be read or an output that cannot be written,
            before any work.
        run: `flags -> result`, the training run.
        export_run: `(export_flags, record) -> path`, exporting a run of the
            task (`trainer.export`'s flags and the run's serving record).
        command: the `tfnlp` command that trains it (`tfnlp lm`).
        add_export_flags: None, or `parser -> None`: the task's own flags of
            `trainer.export` (decoding settings, ...), which default to None,
            "as the run recorded".
        check_export_flags: None, or `(parser, flags) -> None`: exits
            through `parser.error` on a bad value of those flags.
    """

    names: tuple
    summary: str
    parse_flags: typing.Callable
    check_paths: typing.Callable
    run: typing.Callable
    export_run: typing.Callable
    command: str = ""
    add_export_flags: typing.Callable = None
    check_export_flags: typing.Callable = None

    @property
    def name(self):
        return self.names[0]


def register_task(entry):
    """Registers `entry` under each of its names; returns it.

    Raises:
        ValueError: a name is registered already.
    """
    for name in entry.names:
        if name in _TASKS and _TASKS[name] is not entry:
            raise ValueError(f"The task name {name!r} is registered twice.")
        _TASKS[name] = entry
    return entry


def _import_task_modules():
    package = importlib.import_module("trainer.tasks")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"trainer.tasks.{module.name}")


def task_names():
    """Every registered task name, in registration order."""
    _import_task_modules()
    return tuple(_TASKS)


def task_entries():
    """Every registered `TaskEntry` once, in registration order."""
    _import_task_modules()
    return tuple({id(entry): entry for entry in _TASKS.values()}.values())


def get_task(name):
    """The `TaskEntry` registered under `name`.

    Raises:
        UsageError: no task has that name (the message lists them).
    """
    if name not in _TASKS:
        _import_task_modules()
    if name not in _TASKS:
        raise UsageError(f"Unknown task {name!r}; expected one of {', '.join(_TASKS)}.")
    return _TASKS[name]
