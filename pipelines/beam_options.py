"""Beam pipeline options shared by the tfnlp jobs."""

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

LOCAL_RUNNER = "FnApiRunner"


def pipeline_options(beam_arguments):
    """`PipelineOptions` from the command-line arguments a job does not know.

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
    return options
