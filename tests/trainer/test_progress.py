"""Progress lines: step/total, rates from the first step on, time left, at
a steady interval off a terminal and as a redrawn bar on one."""

import io
import types

import pytest

from trainer import progress as progress_module
from trainer.progress import Progress, format_duration


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(progress_module, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    return clock


def run_steps(clock, progress, seconds_per_step, steps, first_step_seconds=None):
    """Steps `progress.start + 1 ...` of 32 examples and 4,096 tokens each."""
    for index, step in enumerate(range(progress.start + 1, progress.start + steps + 1)):
        clock.now += first_step_seconds if index == 0 and first_step_seconds else seconds_per_step
        progress.update(step, examples=32, tokens=4096, loss=2.0)


def test_off_a_terminal_a_line_comes_at_the_first_step_every_interval_and_the_last(clock):
    stream = io.StringIO()
    progress = Progress(total=10, interval_seconds=30, stream=stream)
    run_steps(clock, progress, seconds_per_step=10, steps=10)
    lines = stream.getvalue().splitlines()
    assert [line.split()[2] for line in lines] == ["1/10", "4/10", "7/10", "10/10"]
    assert lines[-1].startswith("train: step 10/10 (100%)")


def test_rates_and_time_left_leave_out_the_first_step(clock):
    stream = io.StringIO()
    progress = Progress(total=10, interval_seconds=0, stream=stream)
    # The first step traces and compiles for 100 s; then 10 s a step.
    run_steps(clock, progress, seconds_per_step=10, steps=4, first_step_seconds=100)
    line = stream.getvalue().splitlines()[-1]
    assert line == ("train: step 4/10 (40%) | 410 tokens/s, 3.2 examples/s | loss 2 | "
                    "2m10s elapsed, ~1m00s left")


def test_a_resumed_run_counts_from_its_checkpoint_step(clock):
    stream = io.StringIO()
    progress = Progress(total=1000, start=900, interval_seconds=0, stream=stream)
    run_steps(clock, progress, seconds_per_step=2, steps=51)
    line = stream.getvalue().splitlines()[-1]
    assert line.startswith("train: step 951/1,000 (95%)")
    assert line.endswith("1m42s elapsed, ~1m38s left")


def test_on_a_terminal_one_line_is_redrawn_with_a_bar(clock, monkeypatch):
    terminal = io.StringIO()
    terminal.isatty = lambda: True
    monkeypatch.setattr(progress_module.sys, "stderr", terminal)
    progress = Progress(total=4, interval_seconds=3600)
    run_steps(clock, progress, seconds_per_step=1, steps=4)
    output = terminal.getvalue()
    assert output.count("\r\033[K") == 4  # a redraw every half second or more
    assert output.count("\n") == 1 and output.endswith("\n")
    assert "[############............]" in output  # step 2 of 4
    assert "[########################]" in output


def test_no_line_is_written_between_intervals(clock):
    stream = io.StringIO()
    progress = Progress(total=100, interval_seconds=60, stream=stream)
    run_steps(clock, progress, seconds_per_step=1, steps=59)
    assert progress.lines_written == 1


@pytest.mark.parametrize("seconds, expected", [
    (0, "0s"), (59.4, "59s"), (60, "1m00s"), (3599, "59m59s"), (3600, "1h00m"),
    (7322, "2h02m"),
])
def test_format_duration(seconds, expected):
    assert format_duration(seconds) == expected
