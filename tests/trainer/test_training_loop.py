"""The host loop `trainer.training_loop.train`: when it stops, evaluates and
saves, with a fake training step and a fake clock."""

import json
import types

from trainer import progress, training_loop
from trainer.summaries import RunLogs
from trainer.training_loop import LoopSchedule, train

SECONDS_PER_STEP = 10.0


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


class FakeLoop:
    """A step that takes `SECONDS_PER_STEP` on the fake clock."""

    task = types.SimpleNamespace(
        sum_names=("loss_sum", "examples", "tokens"),
        results=lambda totals: {"loss": totals["loss_sum"] / max(totals["examples"], 1)},
        step_record=lambda sums: {},
    )
    optimizer = None  # no moving average of the weights

    def __init__(self, clock):
        self.clock = clock

    def train_step(self, iterator):
        self.clock.now += SECONDS_PER_STEP
        return {"loss": 1.0, "gradient_norm": 0.5, "loss_sum": 1.0, "examples": 1.0,
                "tokens": 1.0}


class FakeCheckpoints:
    def __init__(self):
        self.step = types.SimpleNamespace(assign=lambda value: None)
        self.saved = []

    def save(self, step):
        self.saved.append(step)


def run_schedule(tmp_path, monkeypatch, **schedule):
    clock = FakeClock()
    monkeypatch.setattr(training_loop, "time", types.SimpleNamespace(
        monotonic=clock.monotonic, perf_counter=clock.monotonic))
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    checkpoints, evaluations = FakeCheckpoints(), []
    logs = RunLogs(str(tmp_path))

    def evaluator():
        evaluations.append(clock.now)
        return {"bleu": 1.0}

    try:
        train(FakeLoop(clock), iter(()), checkpoints, logs, LoopSchedule(**schedule),
              learning_rate=lambda step: 1e-3, evaluator=evaluator)
    finally:
        logs.close()
    steps = [json.loads(line)["step"] for line in open(tmp_path / "train_log.jsonl")]
    return steps, checkpoints.saved, evaluations


def test_runs_to_train_steps_without_a_time_limit(tmp_path, monkeypatch):
    steps, saved, evaluations = run_schedule(
        tmp_path, monkeypatch, train_steps=7, checkpoint_every_steps=3, eval_every_steps=5)
    assert steps == list(range(1, 8))
    assert saved == [3, 6, 7]
    assert evaluations == [50.0, 70.0]


def test_logs_progress_every_interval_with_the_steps_examples_and_tokens(
        tmp_path, monkeypatch, caplog):
    caplog.set_level("INFO", logger="trainer.progress")
    run_schedule(tmp_path, monkeypatch, train_steps=7, progress_every_seconds=25)
    lines = [record.getMessage() for record in caplog.records
             if record.name == "trainer.progress"]
    assert [line.split()[2] for line in lines] == ["1/7", "4/7", "7/7"]
    # One example and one token a step, 10 s a step, measured after the first.
    assert lines[1] == ("train: step 4/7 (57%) | 0 tokens/s, 0.1 examples/s | loss 1 | "
                        "40s elapsed, ~30s left")


def test_stops_at_the_first_step_past_the_time_limit_and_evaluates_and_saves_it(
        tmp_path, monkeypatch):
    # Steps end at 10 s, 20 s, ...: the limit of 35 s is passed by step 4.
    steps, saved, evaluations = run_schedule(
        tmp_path, monkeypatch, train_steps=100, checkpoint_every_steps=3,
        eval_every_steps=50, stop_time_seconds=35)
    assert steps == [1, 2, 3, 4]
    assert saved == [3, 4]
    assert evaluations == [40.0]


def test_a_time_limit_reached_exactly_stops_at_that_step(tmp_path, monkeypatch):
    # Step 4 ends at exactly 40 s: the limit is reached there, not one step on.
    steps, saved, _ = run_schedule(tmp_path, monkeypatch, train_steps=100,
                                   checkpoint_every_steps=0, stop_time_seconds=40)
    assert steps == [1, 2, 3, 4]
    assert saved == [4]


def test_zero_steps_between_evaluations_and_checkpoints_means_only_at_the_end(
        tmp_path, monkeypatch):
    steps, saved, evaluations = run_schedule(
        tmp_path, monkeypatch, train_steps=7, checkpoint_every_steps=0, eval_every_steps=0)
    assert steps == list(range(1, 8))
    assert saved == [7]
    assert evaluations == [70.0]


def test_what_is_done_every_zero_steps_is_never_due_not_even_at_the_last():
    schedule = LoopSchedule(train_steps=6)
    assert [schedule.due(3, step) for step in range(1, 7)] == [False, False, True] * 2
    assert schedule.due(3, 5, last=True)
    assert not any(schedule.due(0, step, last) for step in range(1, 7)
                   for last in (False, True))
    assert schedule.due(1, 1) and schedule.due(1, 2)
