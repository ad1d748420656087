"""Training any registered task on `tf.distribute`.

    python -m trainer.train --task=language_model --train_data='DATA/train-*' --model_dir=RUN

runs the task that `--task` names with that task's flags (`--task=NAME
--help` lists them). `tfnlp pretrain`, `finetune`, `translate`, `lm` and
`distill` are this command with their task given.
"""

import argparse
import sys

from tfnlp.command_line import (
    ArgumentParser,
    HelpFormatter,
    config_file_paths,
    read_config_file,
    run_main,
)
from trainer import runtime
from trainer.tasks.registry import get_task, task_names


def run_task(entry, argv):
    """Parses `argv` with the task's flags, checks their paths, trains."""
    runtime.configure_logging()
    flags = entry.parse_flags(argv)
    entry.check_paths(flags)
    return entry.run(flags)


def task_main(name, module_name):
    """The `main(argv=None)` of the command that trains the task `name`
    (`python -m trainer.lm` trains "language_model"); `module_name` names
    the program in its errors."""

    def main(argv=None):
        return run_task(get_task(name), sys.argv[1:] if argv is None else list(argv))

    main.__module__ = module_name
    return main


def requested_task(argv):
    """The `--task` of `argv`, else of its `--config_file`, else None."""
    finder = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    finder.add_argument("--task")
    task = finder.parse_known_args(argv)[0].task
    paths = config_file_paths(argv)
    if task is None and paths:
        task = read_config_file(paths[-1]).get("task")
    return task


class _TaskListFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The flags' defaults shown; the list of tasks as it is written."""


def _task_help():
    """The registered tasks, a line each: name, the command that trains it,
    its summary, and its other names."""
    lines = []
    for name in task_names():
        entry = get_task(name)
        if name == entry.name:
            command = f"tfnlp {entry.command}" if entry.command else ""
            lines.append(f"  {name:<16}{command:<18}{entry.summary}")
            if entry.names[1:]:
                lines.append(f"  {'':<34}also --task={', --task='.join(entry.names[1:])}")
    return "tasks:\n" + "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    name = requested_task(argv)
    if name is not None:
        return run_task(get_task(name), argv)
    parser = ArgumentParser(
        prog="python -m trainer.train", allow_abbrev=False,
        description="Trains a registered task; --task=NAME --help shows its flags.",
        epilog=_task_help(), formatter_class=_TaskListFormatter,
    )
    parser.add_argument("--task", required=True, help="The task to train (below).")
    parser.parse_args(argv)
    return None


if __name__ == "__main__":
    run_main(main)
