"""`--runner=dask` (`pipelines.dask_runner`) on a dask.distributed cluster of
a scheduler and two worker processes on the loopback address: what Beam's
own Dask runner gets wrong, on the smallest pipelines that show it."""

import uuid

import apache_beam as beam
import pytest
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from pipelines import beam_options

BEAM_DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"


def dask_options(address, runner="dask"):
    return beam_options.pipeline_options([f"--runner={runner}",
                                          f"--dask_client_address={address}"])


class _WithFinishBundle(beam.DoFn):
    def process(self, element):
        yield element

    def finish_bundle(self):
        yield WindowedValue("end of bundle", 0, [GlobalWindow()])


class _WithOddTag(beam.DoFn):
    def process(self, element):
        yield element
        if element % 2:
            yield beam.pvalue.TaggedOutput("odd", -element)


def written(folder):
    return sorted(path.name for path in folder.iterdir())


def write_marker(folder, name):
    def write(element):
        (folder / f"{name}{element}").write_text(str(element))

    return write


# What the pipeline below writes: each tag's outputs in its own collection,
# and that `finish_bundle`'s outputs arrived.
TAGGED_LINES = ["bundles ended", "main 1", "main 2", "main 3", "odd -1", "odd -3"]


def tagged_lines(options, folder):
    with beam.Pipeline(options=options) as pipeline:
        numbers = pipeline | beam.Create([1, 2, 3]) | beam.Reshuffle()
        main, odd = numbers | beam.ParDo(_WithOddTag()).with_outputs("odd", main="main")
        ends = (numbers | "Bundles" >> beam.ParDo(_WithFinishBundle())
                | beam.Filter(lambda element: element == "end of bundle")
                | beam.combiners.Count.Globally()
                | beam.Map(lambda count: "bundles ended" if count else "no bundle ended"))
        lines = ((main | "Main" >> beam.Map(lambda element: f"main {element}"),
                  odd | "Odd" >> beam.Map(lambda element: f"odd {element}"), ends)
                 | beam.Flatten() | beam.combiners.ToList()
                 | beam.Map(lambda values: "\n".join(sorted(values))))
        _ = lines | beam.Map(lambda text: (folder / "lines").write_text(text))
    return (folder / "lines").read_text().splitlines()


def test_outputs_of_tags_and_finish_bundle_reach_their_own_collections(dask_scheduler,
                                                                        tmp_path):
    assert tagged_lines(dask_options(dask_scheduler), tmp_path) == TAGGED_LINES


def test_beams_own_dask_runner_mixes_tags_and_drops_finish_bundle(dask_scheduler, tmp_path):
    lines = tagged_lines(dask_options(dask_scheduler, BEAM_DASK_RUNNER), tmp_path)
    assert "main -1" in lines  # The odd tag's elements reach the main output's consumer.
    assert "no bundle ended" in lines


@pytest.mark.parametrize("runner, expected", [
    ("dask", ["a1", "a2", "b1", "b2"]),
    (BEAM_DASK_RUNNER, ["b1", "b2"]),
])
def test_every_sink_runs(runner, expected, dask_scheduler, tmp_path):
    with beam.Pipeline(options=dask_options(dask_scheduler, runner)) as pipeline:
        numbers = pipeline | beam.Create([1, 2])
        _ = numbers | "A" >> beam.Map(write_marker(tmp_path, "a"))
        _ = numbers | "B" >> beam.Map(write_marker(tmp_path, "b"))
    assert written(tmp_path) == expected


class _BundleEnds(beam.DoFn):
    def process(self, element):
        return []

    def finish_bundle(self):
        yield WindowedValue("bundle", 0, [GlobalWindow()])


def test_a_reshuffle_splits_one_partition_for_every_worker_thread(dask_scheduler, tmp_path):
    # 16 elements are one partition of a Create; the cluster has 2 threads.
    with beam.Pipeline(options=dask_options(dask_scheduler)) as pipeline:
        _ = (pipeline | beam.Create(range(16)) | beam.Reshuffle()
             | beam.ParDo(_BundleEnds()) | beam.combiners.Count.Globally()
             | beam.Map(lambda count: (tmp_path / "bundles").write_text(str(count))))
    assert (tmp_path / "bundles").read_text() == "4"


class _MarkEachCall(beam.DoFn):
    """Writes a file per call, and each element's count as a second output."""

    def __init__(self, folder):
        self.folder = folder

    def process(self, element):
        (self.folder / f"call-{element}-{uuid.uuid4().hex}").touch()
        yield element
        yield beam.pvalue.TaggedOutput("counts", 1)


def test_a_pardo_whose_other_output_feeds_a_side_input_runs_once(dask_scheduler, tmp_path):
    calls, outputs = tmp_path / "calls", tmp_path / "outputs"
    calls.mkdir()
    outputs.mkdir()
    with beam.Pipeline(options=dask_options(dask_scheduler)) as pipeline:
        marked = (pipeline | beam.Create(range(12)) | beam.Reshuffle()
                  | beam.ParDo(_MarkEachCall(calls)).with_outputs("counts", main="elements"))
        total = marked.counts | beam.CombineGlobally(sum)
        _ = marked.elements | beam.Map(
            lambda element, total: (outputs / f"{element}-of-{total}").touch(),
            total=beam.pvalue.AsSingleton(total))
    assert len(written(outputs)) == 12 and written(outputs)[0] == "0-of-12"
    assert len(written(calls)) == 12


def test_dask_is_a_runner_name_a_job_accepts():
    beam_options.check_arguments(["--runner=dask", "--dask_client_address=tcp://127.0.0.1:1"])
    options = beam_options.pipeline_options(["--runner=Dask"])
    assert options.view_as(beam.options.pipeline_options.StandardOptions).runner == \
        "pipelines.dask_runner.DaskRunner"


def test_a_job_says_when_its_runner_gives_no_counters():
    from pipelines import job

    class NoMetrics:
        def metrics(self):
            raise NotImplementedError

    assert job.runner_report(NoMetrics()) == [
        "The runner reports no counters or stage times; stats.json holds the job's counts."]
