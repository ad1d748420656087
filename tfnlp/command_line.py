"""What the command lines of tfnlp's jobs, trainers and server share.

- absl-style boolean flags: the Beam jobs (`pipelines`) and the trainers
  (`trainer`) take the boolean flags of google-research/bert's scripts in
  all their absl spellings: `--flag`, `--flag=true`, `--flag=False`,
  `--noflag` (`add_boolean_flag`).
- How a user's mistake is reported: a missing or unreadable input, an
  output that cannot be written, a bad flag value. The entry points check
  their flags and the paths they name before any work starts
  (`check_input_file`, `check_input_directory`, `check_output_file`,
  `check_output_directory`, or `UsageError` raised by their own checks),
  and their `__main__` blocks call `run_main`, which prints such an error as
  one line, `PROGRAM: error: MESSAGE`, and exits with status 2; with
  `--verbose` on the command line, or `TFNLP_VERBOSE=1` in the environment,
  the traceback comes first. `ArgumentParser` is argparse's parser with
  that `--verbose` flag and one-line usage errors (argparse prints the
  whole usage first, 20 lines for a trainer).

TensorFlow-free, so the Beam workers can import it.

Example:

    def main(argv=None):
        flags = parse_flags(argv)  # a `command_line.ArgumentParser`
        command_line.check_output_directory("--output_dir", flags.output_dir)
        ...

    if __name__ == "__main__":
        command_line.run_main(main)
"""

import argparse
import contextlib
import os
import re
import sys
import traceback

USAGE_EXIT_STATUS = 2
VERBOSE_FLAG = "--verbose"
VERBOSE_ENVIRONMENT_VARIABLE = "TFNLP_VERBOSE"
# Errors on the files a command line names: the user's to fix. TensorFlow's
# own (by name, from `tf.errors`) count when TensorFlow is loaded.
USER_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
               PermissionError)
TENSORFLOW_USER_ERRORS = ("NotFoundError", "DataLossError", "PermissionDeniedError")


class UsageError(ValueError):
    """A mistake in a command line or in the files it names.

    Its message says what was wrong, what was expected and how to fix it,
    naming the flag; `run_main` prints it as one line and exits with
    status 2.
    """


def boolean(value):
    """Parses an absl-style boolean flag value ("true", "False", "1", ...)."""
    lowered = str(value).strip().lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


def add_boolean_flag(parser, name, default, help_text):
    """Adds `--name[=BOOL]` and `--noname` to `parser` (or an argument group)."""
    parser.add_argument(
        f"--{name}", type=boolean, nargs="?", const=True, default=default, help=help_text
    )
    parser.add_argument(f"--no{name}", dest=name, action="store_false", help=argparse.SUPPRESS)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with `--verbose` and errors of one line.

    A usage error prints `PROGRAM: error: MESSAGE`, pointing to `--help`,
    then exits with status 2. `--verbose` (a flag of every tfnlp
    command line, absent from the namespace unless given) asks `run_main`
    for the traceback of an error; a parser that has a `--verbose` of its
    own replaces it by passing `conflict_handler="resolve"`.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument(
            VERBOSE_FLAG, action="store_true", default=argparse.SUPPRESS,
            help=f"On an error, print its traceback too (as {VERBOSE_ENVIRONMENT_VARIABLE}=1 "
                 "in the environment does).")

    def error(self, message):
        self.exit(USAGE_EXIT_STATUS, f"{self.prog}: error: {message.rstrip('.')}. "
                                     "Run with --help for the flags.\n")


def run_main(main, argv=None):
    """Runs a command line's `main(argv)`; a user's mistake exits with status 2.

    The errors that `main` raises on the user's input, `UsageError`, the
    `OSError`s of `USER_ERRORS` and, when TensorFlow is loaded, its
    `NotFoundError`, `DataLossError` and `PermissionDeniedError`, are
    printed as one line on stderr, `PROGRAM: error: MESSAGE`, after their
    traceback only if `--verbose` is in `argv` or `TFNLP_VERBOSE` is set to
    a true value; then the process exits with status 2. Any other
    exception, a bug, keeps its traceback (and exit status 1).

    Args:
        main: the entry point's `main(argv=None)`.
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        What `main` returns.

    Raises:
        SystemExit: status 2 on a user's mistake (argparse's own usage
            errors exit the same way).

    Example:

        if __name__ == "__main__":
            run_main(main)
    """
    try:
        return main(argv)
    except _user_error_types() as error:
        arguments = sys.argv[1:] if argv is None else argv
        if VERBOSE_FLAG in arguments or _verbose_environment():
            traceback.print_exc()
        print(f"{program_name(main)}: error: {describe_error(error)}", file=sys.stderr)
        raise SystemExit(USAGE_EXIT_STATUS) from None


def _user_error_types():
    tensorflow = sys.modules.get("tensorflow")
    errors = getattr(tensorflow, "errors", None)
    if errors is None:
        return (UsageError, *USER_ERRORS)
    return (UsageError, *USER_ERRORS, *(getattr(errors, name) for name in TENSORFLOW_USER_ERRORS))


def _verbose_environment():
    value = os.environ.get(VERBOSE_ENVIRONMENT_VARIABLE, "").strip().lower()
    return value not in ("", "0", "false", "f", "no")


def program_name(main):
    """How the user started `main`'s module: "python -m pipelines.job" (or
    the script's name)."""
    spec = getattr(sys.modules.get(main.__module__), "__spec__", None)
    if spec is None:
        return os.path.basename(sys.argv[0])
    return "python -m " + spec.name.removesuffix(".__main__")


def describe_error(error):
    """The one-line message of an error for `run_main`.

    Our own messages are printed as they are. An `OSError` with an errno and
    a TensorFlow error say less: their text is kept, with a pointer to
    `--verbose`.

    Example:

    >>> describe_error(FileNotFoundError(2, "No such file or directory", "a.txt"))
    'No such file or directory: a.txt (run with --verbose for the traceback)'
    """
    if isinstance(error, OSError) and error.errno is not None:
        message = f"{error.strerror}: {error.filename}" if error.filename else str(error)
    elif hasattr(error, "message") and hasattr(error, "op"):  # tf.errors.OpError
        # Without the op's "{{function_node ...}}" and "[Op:...]" decorations.
        message = re.sub(r"\{\{[^}]*\}\}|\[Op:.*", "", str(error.message))
    else:
        return " ".join(str(error).split("\n"))
    return " ".join(message.split()) + f" (run with {VERBOSE_FLAG} for the traceback)"


@contextlib.contextmanager
def usage_errors(*error_types):
    """Turns the errors of `error_types` raised inside into `UsageError`s.

    For the checks of a command line's inputs that raise, say, ValueError
    with a message for the user: within them such an error is the user's
    mistake, not a bug. The original error is the new one's `__cause__`.

    Args:
        error_types: the exception classes to turn into `UsageError`.

    Example:

    >>> with usage_errors(ValueError):
    ...     int("ten")
    Traceback (most recent call last):
    ...
    tfnlp.command_line.UsageError: invalid literal for int() with base 10: 'ten'
    """
    try:
        yield
    except UsageError:
        raise
    except error_types as error:
        raise UsageError(str(error)) from error


def _is_remote(path):
    # gs://, s3://, ...: checked by the filesystem when read or written.
    return "://" in str(path)


def check_input_file(flag, path, expected):
    """Raises `UsageError` unless `path` is a file this process can read.

    Args:
        flag: the flag that named it, e.g. "--vocab_file".
        path: a local path; remote paths (gs://...) are left to the reader.
        expected: what the file should be, for the message ("the WordPiece
            vocabulary, one token a line").
    """
    if _is_remote(path):
        return
    if not os.path.exists(path):
        problem = "does not exist"
    elif os.path.isdir(path):
        problem = "is a directory"
    elif not os.access(path, os.R_OK):
        problem = "cannot be read (permission denied)"
    else:
        return
    raise UsageError(f"{flag}={path} {problem}; expected {expected}. Check the path.")


def check_input_directory(flag, path, expected):
    """Raises `UsageError` unless `path` is a directory this process can read.

    Args:
        flag: the flag that named it, e.g. "--model_dir".
        path: a local path; remote paths are left to the reader.
        expected: what the directory should hold, for the message.
    """
    if _is_remote(path):
        return
    if not os.path.exists(path):
        problem = "does not exist"
    elif not os.path.isdir(path):
        problem = "is a file, not a directory"
    elif not os.access(path, os.R_OK | os.X_OK):
        problem = "cannot be read (permission denied)"
    else:
        return
    raise UsageError(f"{flag}={path} {problem}; expected {expected}. Check the path.")


def check_output_directory(flag, path):
    """Raises `UsageError` unless `path` is, or can be created as, a
    directory this process can write into. Creates nothing.

    Args:
        flag: the flag that named it, e.g. "--output_dir".
        path: a local path; remote paths are left to the writer.
    """
    if _is_remote(path):
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(
            f"{flag}={path} is a file; expected a directory (created if missing). "
            "Pick another path, or move the file away.")
    _check_writable_ancestor(flag, path, path)


def check_output_file(flag, path):
    """Raises `UsageError` unless `path` can be written as a file: it is not
    a directory, and its directory exists or can be created, writable.
    Creates nothing.

    Args:
        flag: the flag that named it, e.g. "--output_file".
        path: a local path; remote paths are left to the writer.
    """
    if _is_remote(path):
        return
    if os.path.isdir(path):
        raise UsageError(
            f"{flag}={path} is a directory; expected the path of a file to write. "
            "Add a file name.")
    _check_writable_ancestor(flag, path, os.path.dirname(os.path.abspath(path)))


def _check_writable_ancestor(flag, path, directory):
    """Checks the nearest existing ancestor of `directory` (itself included)."""
    ancestor = os.path.abspath(directory)
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise UsageError(
            f"{flag}={path} cannot be created: {ancestor} is a file, not a directory. "
            "Pick a path under a directory.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(
            f"{flag}={path} cannot be written: {ancestor} is not writable (permission "
            "denied). Pick a writable location.")
