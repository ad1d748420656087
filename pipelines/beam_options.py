"""Beam's options on a job's command line: which arguments are Beam's, the
runner they name, and the `PipelineOptions` they make.

Every argument a job's parser does not know must be an option of one of
Beam's `PipelineOptions` classes (those of every runner Beam ships, and
Dask's when it is installed); `check_arguments` refuses any other, and a
`--runner` that Beam could not load, before the job does any work.
"""

import difflib
import importlib

from apache_beam.options import pipeline_options as beam_pipeline_options
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from tfnlp.command_line import UsageError

LOCAL_RUNNER = "FnApiRunner"
# Modules whose `PipelineOptions` classes Beam defines only with their runner.
RUNNER_OPTIONS_MODULES = ("apache_beam.runners.dask.dask_runner",)
# `--runner` names of tfnlp's own: Dask's runner with what a multi-output
# job needs (`pipelines.dask_runner`).
RUNNER_ALIASES = {"dask": "pipelines.dask_runner.DaskRunner",
                  "daskrunner": "pipelines.dask_runner.DaskRunner"}
# The pip extra of Beam that a runner's module path needs, by a word in it.
RUNNER_EXTRAS = {"dask": "dask", "dataflow": "gcp", "interactive": "interactive"}
# Beam's runner classes by their class name in lower case, where
# `apache_beam.runners.runner.create_runner` looks a `--runner` up (as given
# in lower case, then with "runner" added: `--runner=direct`).
RUNNER_PATHS = {path.rsplit(".", 1)[-1].lower(): path
                for path in StandardOptions.ALL_KNOWN_RUNNERS}


def pipeline_options(beam_arguments):
    """`PipelineOptions` from a job's Beam options (see `check_arguments`).

    Without `--runner`, the job runs on Beam's in-process direct runner, the
    FnApiRunner that the DirectRunner itself uses for batch pipelines
    (`--direct_num_workers` and `--direct_running_mode` apply). It is named
    outright because Beam 2.77's `DirectRunner` first tries to download its
    Prism runner binary, which a machine without network access cannot do,
    and which ignores `--direct_num_workers`. Any `--runner` (DirectRunner,
    DataflowRunner, FlinkRunner, SparkRunner, ...) is used as given.
    """
    options = PipelineOptions(beam_arguments)
    standard_options = options.view_as(StandardOptions)
    if standard_options.runner is None:
        standard_options.runner = LOCAL_RUNNER
    elif isinstance(standard_options.runner, str):
        standard_options.runner = RUNNER_ALIASES.get(standard_options.runner.lower(),
                                                     standard_options.runner)
    return options


class _OptionParser(beam_pipeline_options._BeamArgumentParser):
    """Beam's own parser of its options (it knows their ValueProvider
    arguments), whose errors are `UsageError`s."""

    def error(self, message):
        raise UsageError(message)


def option_parser():
    """An argparse parser of every option of every `PipelineOptions` class
    (as `PipelineOptions.get_all_options` builds it), Dask's included when
    Dask is installed."""
    for module in RUNNER_OPTIONS_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    parser = _OptionParser(allow_abbrev=False, add_help=False)
    classes = {}
    for options_class in PipelineOptions.__subclasses__():
        classes.setdefault(str(options_class), options_class)
    for options_class in classes.values():
        options_class._add_argparse_args(parser)
    return parser


def check_arguments(arguments, job_flags=()):
    """Checks that `arguments` are Beam options and that their `--runner`
    is a runner Beam can load.

    Args:
        arguments: the arguments a job's parser left.
        job_flags: the job's own flags ("--input_file", ...), for the
            suggestions.

    Raises:
        UsageError: an argument is no Beam option (nor a value of one), a
            Beam option's value is invalid, or `--runner` names no runner
            (see `check_runner`); the message names the closest flags.
    """
    parser = option_parser()
    options, unknown = parser.parse_known_args(list(arguments))
    if unknown:
        flags = [*job_flags, *(option for action in parser._actions
                               for option in action.option_strings)]
        raise UsageError("; ".join(
            _unknown_argument_message(argument, flags) for argument in _named(unknown)))
    if options.runner is not None:
        check_runner(options.runner)


def _named(unknown):
    """The unknown arguments worth naming: not the value that follows an
    unknown `--flag` written without "=" (it is that flag's)."""
    named = []
    for index, argument in enumerate(unknown):
        previous = unknown[index - 1] if index else ""
        if (not argument.startswith("-") and previous.startswith("-")
                and "=" not in previous):
            continue
        named.append(argument)
    return named


def _unknown_argument_message(argument, flags):
    """What `argument` is not, and the closest of `flags` to it."""
    name = argument.split("=", 1)[0]
    if argument.startswith("-"):
        message = (f"unrecognized argument {argument}: neither this job's flag nor a Beam "
                   "option")
    else:
        message = f"unrecognized argument {argument!r}: a value without its flag"
        name = "--" + name
    close = difflib.get_close_matches(name, flags, n=1)
    return message + (f" (did you mean {close[0]}?)" if close else "")


def check_runner(name):
    """Checks that Beam can load the runner `name` without running it:
    resolved as `apache_beam.runners.runner.create_runner` does (a short
    name in any case, with or without "Runner", or a class's module path),
    its module imported.

    Raises:
        UsageError: `name` is no runner Beam knows, or its module or class
            cannot be loaded (with the pip extra it needs, if any).
    """
    lowered = name.lower()
    path = RUNNER_ALIASES.get(lowered) or RUNNER_PATHS.get(
        lowered, RUNNER_PATHS.get(lowered + "runner", name))
    if "." not in path:
        close = difflib.get_close_matches(name, StandardOptions.KNOWN_RUNNER_NAMES, n=1,
                                          cutoff=0.85)
        raise UsageError(
            f"--runner={name} is not a runner Beam knows"
            + (f" (did you mean {close[0]}?)" if close else "")
            + f"; name one of {', '.join(StandardOptions.KNOWN_RUNNER_NAMES)}, or a runner "
            "class by its module path; --runner=dask runs on a Dask cluster (which needs "
            'pip install "apache-beam[dask]")')
    module_name, class_name = path.rsplit(".", 1)
    try:
        runner_class = getattr(importlib.import_module(module_name), class_name, None)
    except ImportError as error:
        extras = [extra for word, extra in RUNNER_EXTRAS.items() if word in path.lower()]
        raise UsageError(
            f"--runner={name} cannot be loaded: {error}"
            + (f'; install it with pip install "apache-beam[{extras[0]}]"' if extras
               else "")
        ) from error
    if not (isinstance(runner_class, type) and issubclass(runner_class, PipelineRunner)):
        raise UsageError(f"--runner={name}: {module_name} has no PipelineRunner class "
                         f"{class_name}")
