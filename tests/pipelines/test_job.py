"""`pipelines.job.run_job` ends a job with its counters, each top-level
step's time and its summary line."""

import gc
import logging
import time

import apache_beam as beam
import pytest

from pipelines import job


class KeepEven(job.CountingDoFn):
    """Keeps even numbers, counting kept and dropped; sleeps a little on
    each so the step's time shows."""

    COUNTER_NAMES = ("kept", "dropped odd")

    def process(self, number):
        time.sleep(0.02)
        if number % 2:
            self.count("dropped odd")
            return
        self.count("kept")
        yield number


def build(stats_file):
    def build_pipeline(pipeline):
        results = (pipeline
                   | "Numbers" >> beam.Create(range(25))
                   | "KeepEven" >> beam.ParDo(KeepEven()).with_outputs(job.COUNTS_TAG, main="kept"))
        (results[job.COUNTS_TAG]
         | "SumCounts" >> beam.CombineGlobally(job.SumCounts(KeepEven.COUNTER_NAMES))
         | "WriteStats" >> job.WriteStats(stats_file))
    return build_pipeline


def test_run_job_logs_counters_step_times_and_summary(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="test_job")
    stats_file = str(tmp_path / "stats.json")
    stats = job.run_job(
        build(stats_file), [], name="test", stats_file=stats_file,
        summary_line=lambda stats, seconds: f"kept {stats['kept']} of 25",
        logger=logging.getLogger("test_job"),
    )
    assert stats == {"kept": 13, "dropped odd": 12}
    lines = [record.getMessage() for record in caplog.records if record.name == "test_job"]
    assert lines[0] == "Beam counters: dropped odd=12, kept=13"
    assert lines[1].startswith("Stage times (worker seconds): KeepEven ")
    # 25 sleeps of 20 ms in KeepEven, the slowest step. Beam samples the
    # running step every 200 ms or so, so the 0.5 s it took reads as 0.4 to 0.6.
    assert float(lines[1].split()[5].rstrip(",")) >= 0.2
    assert "Numbers" in lines[1] and "WriteStats" in lines[1]
    assert lines[2] == "kept 13 of 25"


def test_a_runner_without_monitoring_metrics_gives_no_step_times():
    class Result:
        def monitoring_metrics(self):
            raise NotImplementedError

    assert job.stage_seconds(Result()) == {}


def test_objects_frozen_keeps_the_collector_off_them_until_exit():
    with pytest.raises(RuntimeError):
        with job.objects_frozen():
            assert gc.get_freeze_count() > 0
            raise RuntimeError("the run failed")
    # Given back, also when the run fails.
    assert gc.get_freeze_count() == 0


def test_a_command_line_freezes_what_is_left_at_exit(monkeypatch, capsys):
    # The interpreter's last collections would scan Beam's objects again.
    registered = []
    monkeypatch.setattr(job.atexit, "register", registered.append)
    monkeypatch.setattr(job, "configure_command_line_logging", lambda: None)
    with pytest.raises(SystemExit):
        job.command_line_main("pipelines.pretraining_data", ["--no_such_flag"])
    assert registered == [gc.freeze]
