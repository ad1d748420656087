"""Failures inside a running job that the user can fix.

A step that meets a setting its library refuses (SentencePiece's "Vocabulary
size too high (8000)") raises `UserError`, whose message starts with
`MARKER`. Beam wraps a worker's exception: the in-process runner re-raises
it with the step's name appended, other runners (Dataflow, Flink, a direct
runner's worker processes) hand the launcher its text. `user_error_message`
finds the message in either, so that `pipelines.job.run_job` can report it
as a `tfnlp.command_line.UsageError`: one line, no traceback.
`BeamLogFilter` keeps Beam's own log of the failure, with its traceback,
off the launcher's console.
"""

import logging
import re

MARKER = "[tfnlp user error] "
# The message runs to the end of its line (a real or an escaped line break),
# or to the step that Beam names after it.
_MESSAGE = re.compile(re.escape(MARKER) + r"(.*?)\s*(?:\[while running |\\n|\n|$)")


class UserError(ValueError):
    """A failure of a job's step that a flag or the input can fix.

    Args:
        message: what went wrong (the library's own reason) and what to
            change; one line. `MARKER` is put first, once (Beam rebuilds
            the exception from its message).
    """

    def __init__(self, message):
        message = " ".join(str(message).split())
        super().__init__(message if message.startswith(MARKER) else MARKER + message)


def user_error_message(error):
    """The message of the `UserError` behind `error`, or None.

    Args:
        error: the exception a pipeline's run or wait raised: the
            `UserError` itself, Beam's wrapping of it, or any exception
            whose text (or whose cause's) holds a `UserError`'s.

    Returns:
        The message without `MARKER` and without Beam's step annotation,
        or None when no `UserError` is behind `error` (a bug).
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        match = _MESSAGE.search(str(error))
        if match:
            return match.group(1)
        error = error.__cause__ or error.__context__
    return None


class BeamLogFilter(logging.Filter):
    """Drops the records that Beam's loggers write about a `UserError` (a
    worker's error and its traceback), which the launcher reports as one
    line; `--verbose` still prints the traceback there."""

    def filter(self, record):
        if not record.name.startswith("apache_beam"):
            return True
        error = record.exc_info[1] if record.exc_info else None
        return MARKER not in record.getMessage() and user_error_message(error) is None

