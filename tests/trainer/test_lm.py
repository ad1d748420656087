"""`python -m trainer.lm`: a tiny GPT on a few KB of Shakespeare, from the
data job's records to the served export."""

import json
import math
import os
import shutil

import pytest

from tests.conftest import REPOSITORY
from tests.serve.client import call
from tests.trainer import helpers
from tfnlp.serve.http_server import start_server
from tfnlp.serve.model_store import ModelStore

TEXT = (REPOSITORY / "demo" / "data" / "tinyshakespeare.txt").read_text()[:20000]
STEPS = 30


def lm_flags(data_dir, model_dir, **overrides):
    values = {
        "train_data": f"{data_dir}/train-*",
        "eval_data": f"{data_dir}/validation-*",
        "model_dir": model_dir,
        "config": "tiny",
        "global_batch_size": 16,
        "train_steps": STEPS,
        "warmup_steps": 5,
        "learning_rate": 3e-3,
        "log_every_steps": 5,
        "eval_every_steps": 15,
        "sample_tokens": 12,
        "dropout": 0.0,
    }
    values.update(overrides)
    return [f"--{name}={value}" for name, value in values.items()]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from pipelines import lm_data

    folder = tmp_path_factory.mktemp("lm")
    (folder / "train.txt").write_text(TEXT[:18000])
    (folder / "validation.txt").write_text(TEXT[18000:])
    lm_data.main([f"--input_file={folder / 'train.txt'}",
                  f"--validation_file={folder / 'validation.txt'}",
                  f"--output_dir={folder / 'data'}", "--document_boundary=file",
                  "--sequence_length=32", "--num_shards=2"])
    return folder / "data"


@pytest.fixture(scope="module")
def run_dir(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm_run")
    model_dir, export_dir = folder / "run", folder / "export"
    helpers.run_here(lm_flags(data_dir, model_dir, export_dir=export_dir), module="trainer.lm")
    return model_dir, export_dir


def eval_log(model_dir):
    with open(os.path.join(model_dir, "eval_log.jsonl"), encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def test_training_lowers_the_loss_and_evaluation_reports_bits_per_character(run_dir):
    model_dir, _ = run_dir
    steps = helpers.train_log(model_dir)
    assert [record["step"] for record in steps] == list(range(1, STEPS + 1))
    assert steps[-1]["loss"] < steps[0]["loss"] - 0.5
    evaluations = eval_log(model_dir)
    assert [record["step"] for record in evaluations] == [15, 30]
    for record in evaluations:
        # One character per token: bits per character is the loss in bits.
        assert record["bits_per_character"] == pytest.approx(record["loss"] / math.log(2),
                                                             rel=1e-6)
        assert record["perplexity"] == pytest.approx(math.exp(record["loss"]), rel=1e-6)
    assert math.log(68) > evaluations[-1]["loss"]


def test_the_best_checkpoint_is_the_lowest_validation_loss(run_dir):
    model_dir, _ = run_dir
    with open(os.path.join(model_dir, "best", "best.json"), encoding="utf-8") as file:
        best = json.load(file)
    lowest = min(eval_log(model_dir), key=lambda record: record["loss"])
    assert best["step"] == lowest["step"]
    assert best["loss"] == pytest.approx(lowest["loss"])


def test_tensorboard_has_the_figures_and_the_sampled_text(run_dir):
    model_dir, _ = run_dir
    train = helpers.tensorboard_values(model_dir, "train")
    evaluation = helpers.tensorboard_values(model_dir, "eval")
    assert {"loss/loss", "metrics/perplexity", "metrics/bits_per_character",
            "throughput/tokens_per_second", "optimization/learning_rate"} <= set(train)
    assert {"loss/loss", "metrics/bits_per_character", "samples"} <= set(evaluation)
    step, table = evaluation["samples"][-1]
    text = table.item().decode() if hasattr(table, "item") else str(table)
    assert step == STEPS and "ROMEO:" in text and "continuation" in text


def test_the_sampled_text_never_has_the_tokenizer_s_non_text_ids(data_dir):
    from tests.export.helpers import constant_language_model
    from tfnlp.text import load_language_model_tokenizer
    from trainer.tasks.language_model import (
        SampleWriter,
        language_model_signatures,
        serving_record,
    )

    # <unk> and <pad> are far likelier than "a" after any text.
    tokenizer = load_language_model_tokenizer(str(data_dir))
    model = constant_language_model(
        tokenizer, {tokenizer.unknown_id: 50.0, tokenizer.pad_id: 45.0, "a": 40.0}, 32)
    samples = SampleWriter(language_model_signatures(model, tokenizer, serving_record(
        str(data_dir), 32, 32)), ["ROMEO:"], 8, temperature=0.8, top_p=0.9, seed=1)

    class Writers:
        eval = "eval"
        logged = []

        def text(self, writer, values, step):
            self.logged.append((writer, values, step))

    writers = Writers()
    samples(writers, 7)
    [(writer, values, step)] = writers.logged
    assert (writer, step) == ("eval", 7)
    assert "ROMEO:" in values["samples"] and "a" * 8 in values["samples"]
    assert "\ufffd" not in values["samples"]


def test_a_resumed_run_goes_on_from_its_last_checkpoint(data_dir, run_dir, tmp_path):
    model_dir, _ = run_dir
    copy = tmp_path / "run"
    shutil.copytree(model_dir, copy)
    output = helpers.run_here(lm_flags(data_dir, copy, train_steps=STEPS + 5,
                                       eval_every_steps=0, sample_prompts=""),
                              module="trainer.lm")
    assert f"resuming from step {STEPS}" in output
    steps = [record["step"] for record in helpers.train_log(copy)]
    assert steps[-5:] == list(range(STEPS + 1, STEPS + 6))


def test_the_export_serves_completions_and_scores_with_limits(run_dir):
    _, export_dir = run_dir
    server = start_server(ModelStore(export_dir), max_new_tokens=8)
    try:
        path = f"/v1/models/{os.path.basename(export_dir)}:predict"
        status, body = call(server, "POST", path, {
            "signature_name": "generate_with_options",
            "instances": [{"prompts": "ROMEO:", "seed": 1, "max_new_tokens": 8},
                          {"prompts": "ROMEO:", "seed": 1, "max_new_tokens": 8,
                           "stop": "\n"}]})
        assert status == 200, body
        first, cut = body["predictions"]
        assert first["new_tokens"] <= 8
        assert cut["completions"] == first["completions"].split("\n")[0]
        status, body = call(server, "POST", path, {
            "signature_name": "generate_with_options",
            "instances": [{"prompts": "ROMEO:", "max_new_tokens": 9}]})
        assert status == 400 and "--max_new_tokens=8" in body["error"]
        status, body = call(server, "POST", path, {
            "signature_name": "generate_with_options",
            "instances": [{"prompts": "ROMEO:", "top_p": 1.5}]})
        assert status == 400 and "top_p=1.5 must be <= 1" in body["error"]
        status, body = call(server, "POST", path, {"signature_name": "score",
                                                   "instances": ["ROMEO:"]})
        assert status == 200 and body["predictions"][0]["token_count"] == 6
        assert body["predictions"][0]["log_likelihood"] < 0
    finally:
        server.shutdown()
