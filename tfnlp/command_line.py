"""What the command lines of tfnlp's jobs, trainers and server share.

`ArgumentParser` (argparse's, with `--config_file`, `--verbose` and one-line
errors), absl-style boolean flags (`add_boolean_flag`) and the shared flag
helpers; the checks of input and output paths before any work starts
(`check_input_file`, `check_output_directory`, ...); and `run_main`, which
reports a user's mistake (`UsageError`) as one line and exit status 2.
TensorFlow-free, so the Beam workers can import it.
"""

import argparse
import contextlib
import difflib
import json
import os
import re
import sys
import tempfile
import traceback

USAGE_EXIT_STATUS = 2
VERBOSE_FLAG = "--verbose"
CONFIG_FILE_FLAG = "--config_file"
VERBOSE_ENVIRONMENT_VARIABLE = "TFNLP_VERBOSE"
# The name of the file that the output checks create and delete.
PROBE_FILE_PREFIX = ".tfnlp-write-check-"
# The readable names of the flag types, for the messages on config files.
TYPE_NAMES = {int: "an integer", float: "a number"}
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


def mode_help(mode, text):
    """`text` as a flag's help: after "MODE: " when the flag is for one
    mode or case of the command ("sentencepiece", "BiLSTM"), else
    capitalized."""
    return f"{mode}: {text}" if mode else text[0].upper() + text[1:]


def add_text_column_flag(parser, files, mode="", segment=""):
    """Adds `--text_column` (default "text"): the column (field) of the text
    (`segment`, e.g. " (or first segment)") in the labelled `files`."""
    parser.add_argument("--text_column", default="text",
                        help=mode_help(mode, f"the column (field) of the text{segment} in "
                                             f"{files}."))


def add_label_column_flag(parser, files, mode=""):
    """Adds `--label_column` (default "label"): the column (field) of the
    label in the labelled `files`."""
    parser.add_argument("--label_column", default="label",
                        help=mode_help(mode, f"the column (field) of the label in {files}."))


def add_labels_flag(parser, default, trained="", note=""):
    """Adds `--labels` (default: `default`, which its help names): the
    classes in order, comma-separated; `trained` says what set that order,
    `note` what else the help says (a sentence)."""
    parser.add_argument("--labels", default="",
                        help=f"Comma-separated labels (class i is the i-th){trained}; "
                             f"default: {default}." + (f" {note}" if note else ""))


def add_lower_case_flag(parser, default, when, name="do_lower_case", mode=""):
    """Adds `--do_lower_case` (or `--name`), a boolean flag: "Lower-case
    and strip accents (`when`).", after "MODE: " when given."""
    add_boolean_flag(parser, name, default,
                     mode_help(mode, f"lower-case and strip accents ({when})."))


def add_boolean_flag(parser, name, default, help_text):
    """Adds `--name[=BOOL]` and `--noname` to `parser` (or an argument group).

    The Beam jobs (`pipelines`) and the trainers (`trainer`) take the
    boolean flags of google-research/bert's scripts in all their absl
    spellings: `--flag`, `--flag=true`, `--flag=False`, `--noflag`.
    """
    parser.add_argument(f"--{name}", type=boolean, nargs="?", const=True, default=default,
                        metavar="true|false", help=help_text)
    parser.add_argument(f"--no{name}", dest=name, action="store_false", help=argparse.SUPPRESS)


# The name of the program that `invoked_as` gives the command lines (None:
# their own, "python -m MODULE").
_invoked_as = None


@contextlib.contextmanager
def invoked_as(program):
    """Within the block, every `ArgumentParser` and `run_main` call their
    program `program` (in `--help`, usage and error lines) instead of the
    `prog` they were given.

    The `tfnlp` command (`tfnlp_cli.commands`) runs an entry point's `main` within
    `invoked_as("tfnlp pretrain")`, so that what the user reads names what
    they typed.

    Example:

    >>> with invoked_as("tfnlp example"):
    ...     ArgumentParser(prog="python -m example").prog
    'tfnlp example'
    """
    global _invoked_as
    previous, _invoked_as = _invoked_as, program
    try:
        yield
    finally:
        _invoked_as = previous


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, with each flag's default after its help,
    as `argparse.ArgumentDefaultsHelpFormatter` shows it: "(default:
    10000)", booleans as true and false, an unset (None or empty) default
    as "none".

    No default is shown for a required flag (or one of a required group:
    `--model_dir` or `--export_dir`), a flag without a value (`--verbose`),
    a hidden one (`--noflag`) or one whose default is SUPPRESS, nor where
    the help already says its default ("default: ...", "the default").
    """

    # The flags of the parser's required mutually exclusive groups
    # (`ArgumentParser._get_formatter` sets them).
    required_alternatives = ()

    def _get_help_string(self, action):
        help_text = action.help or ""
        shown = default_text(action)
        if (shown is None or action in self.required_alternatives
                or DEFAULT_STATED.search(help_text)):
            return help_text
        return f"{help_text} (default: {shown.replace('%', '%%')})"


# A help text that says its flag's default itself: "(default: the best)",
# "; default: 10% of the steps", "(tiny, tang2019; the default)".
DEFAULT_STATED = re.compile(r"\bdefault:|\bthe default\b", re.IGNORECASE)


def default_text(action):
    """How `HelpFormatter` shows the default of `action`, or None where it
    shows none (a required flag, one without a value, a hidden one).

    Example:

    >>> parser = argparse.ArgumentParser()
    >>> [default_text(parser.add_argument(flag, **options)) for flag, options in [
    ...     ("--steps", {"type": int, "default": 10_000}), ("--tpu", {"default": ""}),
    ...     ("--gzip", {"type": boolean, "default": False}), ("--data", {"required": True}),
    ...     ("--prompts", {"nargs": "*", "default": ["\\n", "The "]})]]
    ['10000', 'none', 'false', None, "'\\\\n' 'The '"]
    """
    default = action.default
    if (not action.option_strings or action.required or action.nargs == 0
            or action.help is argparse.SUPPRESS or default is argparse.SUPPRESS):
        return None
    if default is None or (isinstance(default, (str, list, tuple)) and not default):
        return "none"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, (list, tuple)):
        return " ".join(repr(item) if isinstance(item, str) else str(item) for item in default)
    return str(default)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with `--verbose`, `--config_file`, each flag's
    default in `--help` (`HelpFormatter`) and errors of one line.

    A usage error prints `PROGRAM: error: MESSAGE`, pointing to `--help`,
    then exits with status 2 (argparse prints the whole usage first, 20
    lines for a trainer). `--verbose` (a flag of every tfnlp
    command line, absent from the namespace unless given) asks `run_main`
    for the traceback of an error; a parser that has a `--verbose` of its
    own replaces it by passing `conflict_handler="resolve"`.

    `--config_file=FILE` reads flag values from a YAML or JSON mapping
    (`read_config_file`) before the command line: each key is a flag's name
    without dashes, each value is checked by the flag's own `type` and
    `choices`, a `null` leaves the flag at its default, and the flags on the
    command line override the file. The file's flags count as given, so a
    required flag may come from it. The namespace is the same as if the
    file's flags had been typed first; it holds no `config_file`.

    Within `invoked_as(program)`, `prog` is `program`.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        if _invoked_as is not None:
            self.prog = _invoked_as
        self.add_argument(
            VERBOSE_FLAG, action="store_true", default=argparse.SUPPRESS,
            help=f"On an error, print its traceback too (as {VERBOSE_ENVIRONMENT_VARIABLE}=1 "
                 "in the environment does).")
        self.add_argument(
            CONFIG_FILE_FLAG, action=_ConfigFileAction, default=argparse.SUPPRESS,
            metavar="FILE",
            help="A YAML or JSON file of flag values, keyed by the flag names without "
                 "dashes (a trainer writes its run's as MODEL_DIR/flags.yaml); the flags "
                 "on the command line override it.")

    def _get_formatter(self):
        formatter = super()._get_formatter()
        formatter.required_alternatives = [
            action for group in self._mutually_exclusive_groups if group.required
            for action in group._group_actions]
        return formatter

    def error(self, message):
        self.exit(USAGE_EXIT_STATUS, f"{self.prog}: error: {message.rstrip('.')}. "
                                     "Run with --help for the flags.\n")

    def parse_known_args(self, args=None, namespace=None):
        """argparse's `parse_known_args`, with the flags of `--config_file`
        (when given) placed before the command line's.

        Raises:
            UsageError: the config file cannot be read, is not a mapping,
                names a flag this parser lacks or holds a value its flag
                refuses.
        """
        arguments = list(sys.argv[1:] if args is None else args)
        self.config_files_given = config_file_paths(arguments)
        if self.config_files_given:
            from_file = self.config_file_arguments(
                self.config_files_given[-1], skip=self._overridden_flags(arguments))
            arguments = [*from_file, *arguments]
        return super().parse_known_args(arguments, namespace)

    def _overridden_flags(self, command_line):
        """The flags of a mutually exclusive group (`--model_dir` or
        `--export_dir`) whose other member the command line gives: the
        command line overrides the config file there too."""
        given = {argument.split("=", 1)[0] for argument in command_line
                 if argument.startswith("--")}
        overridden = set()
        for group in self._mutually_exclusive_groups:
            options = {option for action in group._group_actions
                       for option in action.option_strings}
            if given & options:
                overridden |= options - given
        return overridden

    def config_file_arguments(self, path, skip=()):
        """The command-line arguments that the config file `path` stands for
        (`["--vocab_size=30000", ...]`), each value checked by its flag,
        less the flags in `skip` ("--model_dir").

        Raises:
            UsageError: as `parse_known_args`.
        """
        flags = self.config_file_flags()
        arguments = []
        for name, value in read_config_file(path).items():
            action = flags.get(name)
            if action is None:
                raise UsageError(_unknown_key_message(name, path, flags, self.prog))
            if f"--{name}" not in skip:
                arguments.extend(_config_value_arguments(action, name, value, path))
        return arguments

    def config_file_flags(self):
        """The flags a config file may set, by name without dashes: those
        `--help` shows, except `--help` and `--config_file`."""
        return {
            option.lstrip("-"): action
            for action in self._actions
            if action.help is not argparse.SUPPRESS
            and not isinstance(action, (argparse._HelpAction, _ConfigFileAction))
            for option in action.option_strings if option.startswith("--")
        }


class _ConfigFileAction(argparse.Action):
    """`--config_file`, read before argparse parses (by
    `ArgumentParser.parse_known_args`, from the values `config_file_paths`
    finds); argparse's own pass leaves nothing in the namespace and refuses
    a value that reading missed: an abbreviation (`--config_f=FILE`, where
    the parser allows them)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values not in getattr(parser, "config_files_given", ()):
            parser.error(f"write {CONFIG_FILE_FLAG} in full (its value {values!r} was not "
                         "read)")


def config_file_paths(arguments):
    """The values of the `--config_file` flags in `arguments` (before a
    `--`), in order; the last one is read.

    Example:

    >>> config_file_paths(["--config_file", "a.yaml", "--config_file=b.yaml", "--x=1"])
    ['a.yaml', 'b.yaml']
    """
    paths = []
    for index, argument in enumerate(arguments):
        if argument == "--":
            break
        if argument.startswith(CONFIG_FILE_FLAG + "="):
            paths.append(argument.split("=", 1)[1])
        elif (argument == CONFIG_FILE_FLAG and index + 1 < len(arguments)
              and not arguments[index + 1].startswith("-")):
            paths.append(arguments[index + 1])
    return paths


def read_config_file(path):
    """The settings of a config file: a dict from flag names to values.

    A `.json` file is read as JSON, any other as YAML (PyYAML's safe
    loader); an empty file holds no settings. A path with a scheme
    (`gs://...`) is read with TensorFlow's file systems.

    Raises:
        UsageError: the file cannot be read or parsed, or does not hold a
            mapping from names to values.
    """
    given = f"{CONFIG_FILE_FLAG}={path}"
    expected = "expected a YAML or JSON mapping from flag names (without dashes) to values"
    try:
        text = _read_text(path)
    except OSError as error:
        raise UsageError(f"{given} cannot be read ({error.strerror or error}); {expected}. "
                         "Check the path.") from error
    except UnicodeDecodeError as error:
        raise UsageError(f"{given} is not UTF-8 text; {expected}.") from error
    try:
        settings = _parse_settings(path, text)
    except ValueError as error:
        raise UsageError(f"{given} cannot be parsed: {_one_line(error)}; {expected}. "
                         "Fix the file.") from error
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise UsageError(f"{given} holds a {type(settings).__name__}; {expected}, such as "
                         "'vocab_size: 30000'. Fix the file.")
    return settings


def _read_text(path):
    if _is_remote(path):
        import tensorflow as tf  # Only for remote files: the Beam workers never need it.

        with tf.io.gfile.GFile(path) as file:
            return file.read()
    with open(path, encoding="utf-8") as file:
        return file.read()


def _parse_settings(path, text):
    """The value that `text` holds, as JSON for a `.json` path, else YAML.

    Raises:
        ValueError: the text is not valid JSON or YAML.
    """
    if path.lower().endswith(".json"):
        return json.loads(text)
    import yaml  # PyYAML; imported only for a YAML file.

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(str(error)) from error


def _one_line(error):
    return " ".join(str(error).split())


def _unknown_key_message(name, path, flags, program):
    given = f"{CONFIG_FILE_FLAG}={path}"
    if name == CONFIG_FILE_FLAG.lstrip("-"):
        return (f"{given} names another config file; a config file cannot include one. "
                "Copy its settings into this one.")
    close = difflib.get_close_matches(str(name), list(flags), n=3)
    hint = (f"did you mean {' or '.join(close)}?" if close
            else f"see {program} --help for the flags.")
    return (f"{given}: {name!r} is not a flag of {program}; {hint} The keys are flag "
            "names without dashes.")


def _config_value_arguments(action, name, value, path):
    """The command-line arguments that set flag `name` (of `action`) to the
    config file's `value` (`[]` for null); the value is checked by the
    flag's own type and choices first.

    Raises:
        UsageError: the value is not one the flag takes.
    """
    flag = f"--{name}"
    if value is None:
        return []
    if action.nargs == 0:  # A flag without a value (--verbose): true gives it.
        if not isinstance(value, bool):
            raise _bad_value(name, value, path, "expected true or false")
        return [flag] if value else []
    if isinstance(value, list) and action.nargs in (None, "?"):
        raise _bad_value(name, value, path, f"expected one value, as {flag}=VALUE takes")
    values = value if isinstance(value, list) else [value]
    strings = [_config_value_string(action, name, item, path) for item in values]
    for string in strings:
        _check_flag_value(action, name, string, path)
    if action.nargs in (None, "?"):
        return [f"{flag}={strings[0]}"]
    return [flag, *strings]


def _config_value_string(action, name, value, path):
    """A config file's value as its flag would be typed: booleans as
    true/false (flags of type `boolean` only), numbers and text as
    written."""
    if isinstance(value, bool):
        if action.type is not boolean:
            raise _bad_value(name, value, path,
                             "a boolean, which this flag does not take (YAML reads yes, no, "
                             "on and off as booleans: quote such a text)")
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        raise _bad_value(name, value, path, "expected one value")
    return str(value)


def _check_flag_value(action, name, string, path):
    """Raises `UsageError` unless the flag's own `type` and `choices` take
    `string`."""
    value = string
    if callable(action.type):
        try:
            value = action.type(string)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
            expected = TYPE_NAMES.get(action.type)
            raise _bad_value(name, string, path,
                             f"expected {expected}" if expected else _one_line(error)) from error
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(str(choice) for choice in action.choices)
        raise _bad_value(name, string, path, f"expected one of {choices}")


def _bad_value(name, value, path, problem):
    return UsageError(f"{CONFIG_FILE_FLAG}={path}: {name}: {value!r} is not a value of "
                      f"--{name}: {problem}. Fix it in the file.")


def settings_text(settings, comment_lines=()):
    """YAML text of flag settings that `--config_file` reads back.

    The trainers write their resolved flags into `MODEL_DIR/flags.yaml`
    with it.

    Args:
        settings: a dict from flag names to values (`vars(flags)` of a
            parsed namespace: text, numbers, booleans, None).
        comment_lines: lines written first, as YAML comments.

    Returns:
        The text: the comments, then one `name: value` line per flag, in
        the order of `settings`.

    Example:

    >>> print(settings_text({"vocab_size": 30000, "lower_case": True, "labels": "yes"}), end="")
    vocab_size: 30000
    lower_case: true
    labels: 'yes'
    """
    import yaml  # PyYAML; imported only when settings are written.

    comments = "".join(f"# {line}\n" for line in comment_lines)
    return comments + yaml.safe_dump(dict(settings), sort_keys=False,
                                     default_flow_style=False, allow_unicode=True)


def run_main(main, argv=None):
    """Runs a command line's `main(argv)`; a user's mistake exits with status 2.

    The errors that `main` raises on the user's input, `UsageError`, the
    `OSError`s of `USER_ERRORS` and, when TensorFlow is loaded, its
    `NotFoundError`, `DataLossError` and `PermissionDeniedError`, are
    printed as one line on stderr, `PROGRAM: error: MESSAGE`, after their
    traceback only if `--verbose` is in `argv` or `TFNLP_VERBOSE` is set to
    a true value; then the process exits with status 2. Any other
    exception, a bug, keeps its traceback (and exit status 1).

    The entry points check their flags and the paths they name before any
    work starts (`check_input_file`, `check_input_directory`,
    `check_output_file`, `check_output_directory`, or `UsageError` raised
    by their own checks), and their `__main__` blocks call `run_main`:

        def main(argv=None):
            flags = parse_flags(argv)  # a `command_line.ArgumentParser`
            command_line.check_output_directory("--output_dir", flags.output_dir)
            ...

        if __name__ == "__main__":
            command_line.run_main(main)

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
        if verbose_requested(argv):
            traceback.print_exc()
        print(f"{program_name(main)}: error: {describe_error(error)}", file=sys.stderr)
        raise SystemExit(USAGE_EXIT_STATUS) from None


def _user_error_types():
    tensorflow = sys.modules.get("tensorflow")
    errors = getattr(tensorflow, "errors", None)
    if errors is None:
        return (UsageError, *USER_ERRORS)
    return (UsageError, *USER_ERRORS, *(getattr(errors, name) for name in TENSORFLOW_USER_ERRORS))


def verbose_requested(argv=None):
    """Whether `argv` (default `sys.argv[1:]`) has `--verbose`, its
    `--config_file` sets `verbose: true`, or the environment sets
    TFNLP_VERBOSE to anything but empty, 0 or false."""
    arguments = sys.argv[1:] if argv is None else argv
    value = os.environ.get(VERBOSE_ENVIRONMENT_VARIABLE, "").strip().lower()
    if VERBOSE_FLAG in arguments or value not in ("", "0", "false", "f", "no"):
        return True
    return _config_file_sets_verbose(config_file_paths(arguments))


def _config_file_sets_verbose(paths):
    """Whether the last of the config files `paths` sets `verbose` true (a
    file that cannot be read counts as not: its error comes later)."""
    if not paths:
        return False
    try:
        setting = read_config_file(paths[-1]).get("verbose", False)
    except (UsageError, OSError):
        return False
    return setting is True


def program_name(main):
    """How the user started `main`'s module: "python -m pipelines.job" (or
    the script's name; within `invoked_as(program)`, `program`)."""
    if _invoked_as is not None:
        return _invoked_as
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
    """Raises `UsageError` unless `path` is a directory this process can
    write files in; creates it, and its missing parents, if needed.

    Proves it by doing: `os.makedirs`, then a probe file created in the
    directory and deleted. The directory stays, empty if it was new.

    Args:
        flag: the flag that named it, e.g. "--output_dir".
        path: a local path; remote paths (gs://...) are left to the writer.
    """
    if _is_remote(path):
        return
    _check_not_empty(flag, path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(
            f"{flag}={path} is a file; expected a directory (created if missing). "
            "Pick another path, or move the file away.")
    _make_directory(flag, path, path)
    _probe_directory(flag, path, path)


def check_output_file(flag, path):
    """Raises `UsageError` unless `path` can be written as a file: it is not
    a directory, its directory exists or can be created (it is created) and
    takes new files, and an existing file at `path` opens for writing.

    Proves it by doing, as `check_output_directory` does for the file's
    directory; an existing file is opened for appending and closed,
    unchanged, so the check never clobbers it.

    Args:
        flag: the flag that named it, e.g. "--output_file".
        path: a local path; remote paths are left to the writer.
    """
    if _is_remote(path):
        return
    _check_not_empty(flag, path)
    if os.path.isdir(path):
        raise UsageError(
            f"{flag}={path} is a directory; expected the path of a file to write. "
            "Add a file name.")
    directory = os.path.dirname(os.path.abspath(path))
    _make_directory(flag, path, directory)
    _probe_directory(flag, path, directory)
    if os.path.exists(path):
        try:
            with open(path, "ab"):
                pass
        except OSError as error:
            raise UsageError(
                f"{flag}={path} cannot be written: opening the existing file failed "
                f"({error.strerror or error}). Pick another path, or make the file "
                "writable.") from error


def _check_not_empty(flag, path):
    if not str(path).strip():
        raise UsageError(f"{flag} is empty; expected a path to write. Give one.")


def _make_directory(flag, path, directory):
    """Creates `directory` (the output of `flag`, or its file's folder) and
    its missing parents, or raises `UsageError` saying what stopped it."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        blocker = _nearest_existing_ancestor(directory)
        if not os.path.isdir(blocker):
            raise UsageError(
                f"{flag}={path} cannot be created: {blocker} is a file, not a directory. "
                "Pick a path under a directory.") from error
        raise UsageError(
            f"{flag}={path} cannot be created: making the directory "
            f"{error.filename or directory} failed ({error.strerror or error}). Pick a "
            "writable location, or create the directory first.") from error


def _nearest_existing_ancestor(path):
    ancestor = os.path.abspath(path)
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    return ancestor


def _probe_directory(flag, path, directory):
    """Creates and deletes a file in `directory`, or raises `UsageError`
    saying why it could not.

    Writing proves the output can be written; `os.access` would not do: it
    says yes to root even on a read-only file system.
    """
    try:
        descriptor, probe = tempfile.mkstemp(prefix=PROBE_FILE_PREFIX, dir=directory)
        os.close(descriptor)
        os.remove(probe)
    except OSError as error:
        raise UsageError(
            f"{flag}={path} cannot be written: creating a file in {directory} failed "
            f"({error.strerror or error}). Pick a writable location, or make the "
            "directory writable.") from error
