"""A quiet start for tfnlp's command lines: the frameworks' import noise.

Importing TensorFlow 2.21 writes C++ log lines to stderr (oneDNN, CUDA
drivers, CPU instructions), and finding its devices one more (cuInit
failing where there is no GPU), before its logging is set up, where
`TF_CPP_MIN_LOG_LEVEL` does not reach them, and importing Apache Beam
logs that apitools is missing. A user of `python -m trainer.pretrain` sees
six such lines before anything of theirs. The packages of the command
lines (`pipelines`, `trainer`, `tfnlp.serve`'s `__main__`, `demo`) call
`import_quietly(...)` with the frameworks they use before anything else:
it imports them with
the process's stderr (file descriptor 2) pointed at /dev/null, and sets
`TF_CPP_MIN_LOG_LEVEL=2` (unless set) for TensorFlow's later C++ logs.
Later imports of them are then free and silent. With `--verbose` on the
command line, or `TFNLP_VERBOSE=1`, nothing is hidden.

A library user who imports `tfnlp` in their own program is not affected.
`verbose_requested` is `tfnlp.command_line`'s, the one `run_main` uses.

Example:

    >>> from tfnlp import quiet_start
    >>> quiet_start.verbose_requested(["--model_dir=run", "--verbose"])
    True
"""

import contextlib
import importlib
import os
import sys

from tfnlp.command_line import verbose_requested

@contextlib.contextmanager
def stderr_silenced():
    """Points file descriptor 2 (C++ and Python writes alike) at /dev/null
    for the block, then restores it."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w", encoding="utf-8") as null:
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def import_quietly(module_names, argv=None):
    """Imports `module_names` (such as "tensorflow", "apache_beam"; those
    installed) without their start-up lines, unless
    `verbose_requested(argv)`.

    A module that is not installed is left for its real import to report.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    pending = [name for name in module_names if name not in sys.modules]
    if not pending or verbose_requested(argv):
        return
    with stderr_silenced():
        for name in pending:
            with contextlib.suppress(ModuleNotFoundError):
                module = importlib.import_module(name)
                if name == "tensorflow":
                    # Finding the devices logs, on a machine without a GPU
                    # driver, an ERROR line about cuInit that means nothing
                    # more than "no GPU".
                    module.config.list_physical_devices()
