"""What every Beam job of `pipelines` does around its transforms.

A job's steps count what they read, keep and drop (`CountingDoFn`,
`SumCounts`); a job writes those counts, with its parameters, to a stats
file (`WriteStats`); and its command line runs the pipeline to the end,
reads the stats back and logs one summary line (`run_job`,
`command_line_main`). Each job module has the same command-line face:
`main(argv=None)` runs the job on `argv` (the arguments without the program
name: the job's flags and Beam's options) and returns the stats dict it
wrote; `summary_line(stats, seconds)` is the line `run_job` logs at the end.
"""

import atexit
import contextlib
import gc
import importlib
import json
import logging
import time

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.transforms import window

from pipelines import beam_options
from pipelines.user_errors import BeamLogFilter, user_error_message
from tfnlp.command_line import UsageError, run_main

METRICS_NAMESPACE = "tfnlp"
# Beam's system metric (namespace, name) of the time spent in a step.
EXECUTION_TIME_METRIC = ("beam", "metric:ptransform_execution_time:total_msecs:v1")
COUNTS_TAG = "counts"


class CountingDoFn(beam.DoFn):
    """A DoFn that counts by name and emits the counts once per bundle.

    Subclasses call `self.count(name, value)` in `process` (or, in a hot
    loop, add to `self.counts[name]` for a name in `COUNTER_NAMES`).
    `finish_bundle` adds the non-zero counts to the Beam counters of the
    same names and emits the bundle's dict of counts on the output tagged
    `COUNTS_TAG`, so apply the DoFn with
    `.with_outputs(COUNTS_TAG, main=...)` and sum that output with
    `SumCounts`. A subclass that overrides `start_bundle` or
    `finish_bundle` calls (for `finish_bundle`: yields from) the base's.

    Attributes:
        COUNTER_NAMES: names that every bundle's dict holds, zero when
            nothing was counted under them (other names appear once
            counted).
    """

    COUNTER_NAMES = ()

    def start_bundle(self):
        self.counts = dict.fromkeys(self.COUNTER_NAMES, 0)

    def count(self, name, value=1):
        """Adds `value` (an int or a bool) to the count `name`."""
        self.counts[name] = self.counts.get(name, 0) + value

    def finish_bundle(self):
        for name, value in self.counts.items():
            if value:
                beam.metrics.Metrics.counter(METRICS_NAMESPACE, name).inc(value)
        yield beam.pvalue.TaggedOutput(
            COUNTS_TAG, window.GlobalWindows.windowed_value(dict(self.counts))
        )


class SumCounts(beam.CombineFn):
    """Adds dicts of counts key by key (any keys).

    Args:
        names: names that the result holds even when no input has them
            (with zero).
    """

    def __init__(self, names=()):
        self._names = tuple(names)

    def create_accumulator(self):
        return dict.fromkeys(self._names, 0)

    def add_input(self, accumulator, counts):
        for name, value in counts.items():
            accumulator[name] = accumulator.get(name, 0) + value
        return accumulator

    def merge_accumulators(self, accumulators):
        merged = self.create_accumulator()
        for accumulator in accumulators:
            self.add_input(merged, accumulator)
        return merged

    def extract_output(self, accumulator):
        return dict(accumulator)


def write_file(contents, path):
    """Writes `contents` (bytes) to `path` on any Beam filesystem.

    Args:
        contents: the bytes to write.
        path: the destination; an existing file is replaced.

    Returns:
        `path`.
    """
    # Never compressed, whatever the file name ends with.
    with FileSystems.create(
        path, compression_type=CompressionTypes.UNCOMPRESSED
    ) as file:
        file.write(contents)
    return path


def read_file(path):
    """The bytes of `path` on any Beam filesystem, never decompressed
    whatever the file name ends with.

    Args:
        path: the file to read.

    Returns:
        Its contents.
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as file:
        return file.read()


def stats_file_bytes(stats):
    """The stats file's contents.

    Args:
        stats: the stats dict.

    Returns:
        The dict as indented, key-sorted UTF-8 JSON ending in a newline.
    """
    return (
        json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    ).encode("utf-8")


def read_stats(path):
    """The stats dict of the stats file at `path` (any Beam filesystem)."""
    return json.loads(read_file(path).decode("utf-8"))


class WriteStats(beam.PTransform):
    """Writes a job's stats dict to its stats file.

    Applied to a single-element PCollection holding the stats dict, it
    writes the dict as `stats_file_bytes` gives it to `path` (any Beam
    filesystem) and returns the PCollection of that path.

    Args:
        path: the stats file.
        label: an optional label for the transform.
    """

    def __init__(self, path, label=None):
        super().__init__(label)
        self.path = path

    def expand(self, stats):
        return stats | "WriteFile" >> beam.Map(_write_stats_file, self.path)


def _write_stats_file(stats, path):
    return write_file(stats_file_bytes(stats), path)


def share(part, whole):
    """`part / whole`, or 0.0 when `whole` is 0 (the stats' shares and means).

    Example:

    >>> share(1, 4), share(3, 0)
    (0.25, 0.0)
    """
    return part / whole if whole else 0.0


def run_job(build_pipeline, beam_arguments, *, name, stats_file, summary_line, logger,
            output_problems=None):
    """Runs a job's pipeline to the end and returns the stats it wrote.

    Args:
        build_pipeline: called with a new `beam.Pipeline`; adds the job's
            steps, one of which writes the stats file.
        beam_arguments: the command line's Beam options (see
            `pipelines.beam_options.pipeline_options`).
        name: the job's name, for the error message.
        stats_file: the path of the stats file the pipeline writes.
        summary_line: called with the stats dict and the run's wall time in
            seconds; returns the line that `logger` logs at INFO (each
            job's `summary_line`).
        logger: the job's logger.
        output_problems: called with the stats dict; returns `(error,
            warnings)`: why the output is empty and what to change (None
            when it is not), and sentences on an output that is empty but
            may be so (logged last, as warnings).

    Returns:
        The stats dict, as read back from `stats_file`.

    Raises:
        UsageError: a step raised a `pipelines.user_errors.UserError` (on
            any runner), or `output_problems` gave an error (after the
            summary).
        RuntimeError: the pipeline did not finish successfully.
    """
    start = time.monotonic()
    pipeline = beam.Pipeline(options=beam_options.pipeline_options(beam_arguments))
    build_pipeline(pipeline)
    with objects_frozen():
        try:
            result = pipeline.run()
            state = result.wait_until_finish()
        except Exception as error:
            message = user_error_message(error)
            if message is None:
                raise
            raise UsageError(message) from error
    if state != beam.runners.runner.PipelineState.DONE:
        raise RuntimeError(f"The {name} pipeline ended in state {state}.")
    stats = read_stats(stats_file)
    for line in runner_report(result):
        logger.info(line)
    logger.info(summary_line(stats, time.monotonic() - start))
    if output_problems is not None:
        error, warnings = output_problems(stats)
        for warning in warnings:
            logger.warning(warning)
        if error:
            raise UsageError(error)
    return stats


@contextlib.contextmanager
def objects_frozen():
    """Keeps the garbage collector off the objects alive on entry until exit.

    The modules Beam imported and the pipeline built live for the whole
    run, so scanning them again at every full collection (which a worker's
    allocations trigger) is wasted work; `gc.freeze` leaves them out until
    `gc.unfreeze` gives them back on exit.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def counter_totals(result):
    """`{name: value}` of the job's Beam counters (namespace
    `METRICS_NAMESPACE`), summed over steps, as the runner reports them;
    None from a runner that reports no metrics (Dask's)."""
    totals = {}
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    except NotImplementedError:
        return None
    for counter in counters["counters"]:
        name = counter.key.metric.name
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[name] = totals.get(name, 0) + (value or 0)
    return dict(sorted(totals.items()))


def stage_seconds(result):
    """`{top-level step: seconds}`: the time the runner's workers spent in
    each of the pipeline's top-level steps, summed over workers (Beam's
    `ptransform_execution_time` system metric; `{}` from a runner that does
    not report it)."""
    try:
        counters = result.monitoring_metrics().query()["counters"]
    except (AttributeError, NotImplementedError, KeyError):
        return {}
    seconds = {}
    for counter in counters:
        metric = (counter.key.metric.namespace, counter.key.metric.name)
        # The runner's own data-channel steps (ref_PCollection_...) are not the job's.
        if (metric != EXECUTION_TIME_METRIC or not counter.key.step
                or counter.key.step.startswith("ref_")):
            continue
        stage = counter.key.step.split("/")[0]
        seconds[stage] = seconds.get(stage, 0.0) + (counter.committed or 0) / 1000
    return seconds


def runner_report(result):
    """The lines a job logs at its end: its counters and each top-level
    step's time, slowest first."""
    lines = []
    counters = counter_totals(result)
    if counters is None:
        lines.append("The runner reports no counters or stage times; stats.json holds "
                     "the job's counts.")
    if counters:
        lines.append("Beam counters: " + ", ".join(
            f"{name}={value:,}" for name, value in counters.items()))
    seconds = stage_seconds(result)
    if seconds:
        slowest = sorted(seconds.items(), key=lambda item: (-item[1], item[0]))
        lines.append("Stage times (worker seconds): " + ", ".join(
            f"{stage} {value:.1f}" for stage, value in slowest))
    return lines


def parse_job_arguments(parser, flag_problems, argv=None):
    """A job's flags, checked, and its Beam options (`split_arguments`).

    Args:
        parser: the job's `tfnlp.command_line.ArgumentParser`.
        flag_problems: `flags -> list of sentences`, the problems of the
            parsed values (empty: none).
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`.

    Raises:
        SystemExit: an argument is unknown, or a flag is missing, invalid
            or inconsistent (status 2, one line naming every problem).
    """
    flags, beam_arguments = split_arguments(parser, argv)
    problems = flag_problems(flags)
    if problems:
        parser.error(" ".join(problems))
    return flags, beam_arguments


def split_arguments(parser, argv=None):
    """A job's flags and its Beam options; any other argument is refused.

    Args:
        parser: the job's argparse parser.
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        `(flags, beam_arguments)`: the parsed flags and the arguments the
        parser does not know, each an option of Beam's `PipelineOptions`
        (or its value).

    Raises:
        SystemExit: an argument is neither the job's flag nor a Beam option,
            or `--runner` names no runner Beam can load
            (`pipelines.beam_options.check_arguments`; status 2, one line
            naming it and the closest flag).
    """
    flags, beam_arguments = parser.parse_known_args(argv)
    job_flags = [option for action in parser._actions for option in action.option_strings
                 if option.startswith("--")]
    try:
        beam_options.check_arguments(beam_arguments, job_flags)
    except UsageError as error:
        parser.error(str(error))
    return flags, beam_arguments


def configure_command_line_logging():
    """Logs at INFO, except Beam's own INFO lines (batch-size statistics and
    the like), which would drown the job's summary, and its log of a step's
    `UserError` (`BeamLogFilter`); Beam's warnings stay.

    Replaces any handler already on the root logger: importing Beam without
    its GCP extras logs a warning through the root logger, which installs
    a WARNING-level handler that would otherwise hide the summary.
    """
    logging.basicConfig(level=logging.INFO, force=True)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.addFilter(BeamLogFilter())


def command_line_main(module_name, argv=None):
    """Runs a job from its command line (`python -m pipelines.X`, or
    `tfnlp X`).

    Configures the logging (`configure_command_line_logging`) and runs the
    `main` of the job's module imported by its name, rather than that of
    `__main__`, so that Beam pickles the job's DoFns by reference to the
    importable module, with `tfnlp.command_line.run_main`. The objects
    alive when the process exits are frozen first (`gc.freeze` at exit):
    the interpreter's last collections would only scan Beam's modules
    again.

    Args:
        module_name: the job's module, e.g. "pipelines.translation_data".
        argv: the arguments without the program name; `sys.argv[1:]` when
            None.

    Returns:
        What the module's `main()` returns (the stats dict).

    Raises:
        SystemExit: status 2 on a user's mistake (a missing input, an
            output that cannot be written, a bad flag value).
    """
    configure_command_line_logging()
    atexit.register(gc.freeze)
    return run_main(importlib.import_module(module_name).main, argv)
