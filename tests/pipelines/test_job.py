"""`pipelines.job.run_job` ends a job with its counters, each top-level
step's time and its summary line; a step's `UserError` and an empty output
end it with a `UsageError`."""

import gc
import logging
import time

import apache_beam as beam
import pytest

from pipelines import job
from pipelines.user_errors import BeamLogFilter, UserError, user_error_message
from tfnlp.command_line import UsageError


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


def run(build_pipeline, stats_file, **options):
    return job.run_job(build_pipeline, [], name="test", stats_file=stats_file,
                       summary_line=lambda stats, seconds: "the summary",
                       logger=logging.getLogger("test_job"), **options)


def refuse(number):
    raise UserError(f"SentencePiece refuses {number}. Give --vocab_size={number} or less.")


def test_a_steps_user_error_ends_the_job_in_its_message(tmp_path):
    def build_pipeline(pipeline):
        _ = pipeline | beam.Create([2406]) | "Refuse" >> beam.Map(refuse)

    # The message alone: neither the marker nor Beam's "[while running 'Refuse']".
    with pytest.raises(UsageError, match=r"^SentencePiece refuses 2406\. "
                       r"Give --vocab_size=2406 or less\.$"):
        run(build_pipeline, str(tmp_path / "stats.json"))


def test_a_user_errors_message_is_found_in_a_runners_text():
    # Dataflow and the portable runners hand the launcher the worker's
    # traceback as text, its line breaks escaped or not.
    text = ('Traceback (most recent call last):\n  File "learn.py", line 9\n'
            "pipelines.user_errors.UserError: "
            f"{UserError('Give --vocab_size=2406 or less.')} "
            "[while running 'LearnTargetModel/TrainSentencePiece']\n\nDuring handling...")
    for wrapped in (RuntimeError(text), RuntimeError(text.replace("\n", "\\n"))):
        assert user_error_message(wrapped) == "Give --vocab_size=2406 or less."
    try:
        raise RuntimeError("Pipeline failed") from UserError("Give more text.")
    except RuntimeError as error:
        assert user_error_message(error) == "Give more text."
    assert user_error_message(RuntimeError("KeyError: 'a bug'")) is None


def test_beams_log_of_a_user_error_is_left_out():
    def record(name, error):
        return logging.LogRecord(name, logging.ERROR, "common.py", 1, str(error), None,
                                 (type(error), error, None))

    log_filter = BeamLogFilter()
    assert not log_filter.filter(record("apache_beam.runners.common",
                                        UserError("Give more.")))
    assert log_filter.filter(record("apache_beam.runners.common", KeyError("a bug")))
    assert log_filter.filter(record("pipelines.lm_data", UserError("Give more.")))


def test_an_empty_output_ends_the_job_after_its_summary(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="test_job")
    stats_file = str(tmp_path / "stats.json")

    def build_pipeline(pipeline):
        _ = pipeline | beam.Create([{"records": 0}]) | job.WriteStats(stats_file)

    def output_problems(stats):
        return ("wrote no record; give more text" if not stats["records"] else None,
                ["wrote no validation record"])

    with pytest.raises(UsageError, match="^wrote no record; give more text$"):
        run(build_pipeline, stats_file, output_problems=output_problems)
    # Written, and summed up, before the error.
    assert job.read_stats(stats_file) == {"records": 0}
    lines = [(record.levelname, record.getMessage()) for record in caplog.records
             if record.name == "test_job"]
    assert lines[-2:] == [("INFO", "the summary"),
                          ("WARNING", "wrote no validation record")]

