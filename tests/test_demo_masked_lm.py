"""The default demo (`make demo`, `tfnlp demo`) on the first 1,500 lines of
its embedded Tiny Shakespeare, with a tiny BERT trained a few steps: the
stages, their accounting, the export and its serving over HTTP are under
test, not what the model learns. Needs no shared data."""

import contextlib
import io
import json
import math
import os
import re
import socket
import subprocess

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the ops of the fill_mask signature)

from tfnlp_cli.demo import masked_lm
from tfnlp_cli.demo.__main__ import main, wants_translation
from tests.conftest import REPOSITORY

MAX_LINES, HELDOUT_PERCENT = 1500, 10
# 96 held-out lines, sent in 2 requests after the 2 shown; 30 steps teach the
# model the most frequent tokens, so that its top-5 accuracy is not 0.
TINY_FLAGS = [f"--max_lines={MAX_LINES}", f"--heldout_percent={HELDOUT_PERCENT}",
              "--vocab_size=400", "--min_token_count=2", "--dupe_factor=1",
              "--train_steps=30", "--batch_size=16", "--examples_shown=2"]
STAGES = ["text", "vocabulary", "pretraining data", "training", "export", "serving"]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The demo run once: its output folder, summary and printed output."""
    output_dir = tmp_path_factory.mktemp("masked_lm")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        summary = main([f"--output_dir={output_dir}", *TINY_FLAGS])
    return output_dir, summary, printed.getvalue()


def corpus_lines():
    """The lines of the slice the tests run on, read here independently."""
    with open(REPOSITORY / "demo" / "data" / "tinyshakespeare.txt", encoding="utf-8") as file:
        return file.read().split("\n")[:MAX_LINES]


def lines_spoken(lines):
    """The non-blank lines that do not start a block (the speakers' names
    start the blocks of Tiny Shakespeare)."""
    return [line for index, line in enumerate(lines)
            if line.strip() and index > 0 and lines[index - 1].strip()]


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return file.read().splitlines()


def read_jsonl(path):
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def test_every_stage_ran_in_order_and_wrote_its_artefacts(demo_run):
    output_dir, summary, printed = demo_run
    assert json.loads((output_dir / "summary.json").read_text("utf-8")) == summary
    assert list(summary["stage_seconds"]) == list(summary["artefacts"]) == STAGES
    assert "failed" not in summary
    for stage, artefacts in summary["artefacts"].items():
        for path in artefacts.values():
            matched = tf.io.gfile.glob(path)
            assert matched and all(os.path.getsize(name) > 0 or os.path.isdir(name)
                                   for name in matched), (stage, path)
    for number, stage in enumerate(STAGES, start=1):
        assert f"=== Stage {number}/6: {stage} ===" in printed
        assert f'--- stage "{stage}" took {summary["stage_seconds"][stage]:.1f} s' in printed
    assert summary["export"] == str(output_dir / "export" / "1")
    assert (output_dir / "export" / "1" / "saved_model.pb").exists()
    events = tf.io.gfile.glob(
        str(output_dir / "run" / "tensorboard" / "train" / "events.out.tfevents.*"))
    assert events
    tensorboard = f"tensorboard --logdir={output_dir / 'run'}"
    assert summary["training"]["tensorboard"] == tensorboard and tensorboard in printed
    assert summary["training"]["steps"] == 30
    assert [record["step"] for record in read_jsonl(output_dir / "run" / "train_log.jsonl")] \
        == list(range(1, 31))


def test_the_text_stage_accounts_for_every_corpus_line(demo_run):
    output_dir, summary, _ = demo_run
    lines = corpus_lines()
    stats = summary["text"]
    split = stats["training_part_lines"]
    # The held-out part starts with the first speech of its last 10% of lines.
    tail = MAX_LINES - math.ceil(MAX_LINES * HELDOUT_PERCENT / 100)
    assert tail < split and lines[split].endswith(":") and not lines[split - 1].strip()
    assert all(not (lines[index].strip() and not lines[index - 1].strip())
               for index in range(tail, split))
    training, heldout = lines_spoken(lines[:split]), lines_spoken(lines[split:])
    assert read_lines(output_dir / "text" / "heldout.txt") == heldout
    passages = read_lines(output_dir / "text" / "train.txt")
    assert [line for line in passages if line] == training
    blank = sum(1 for line in lines if not line.strip())
    speakers = sum(1 for index, line in enumerate(lines)
                   if line.strip() and (index == 0 or not lines[index - 1].strip()))
    assert stats == {
        "corpus_file": masked_lm.EMBEDDED_TEXT, "corpus_lines": MAX_LINES,
        "training_part_lines": split, "heldout_part_lines": MAX_LINES - split,
        "blank_lines": blank, "speaker_lines": speakers,
        "training_verse_lines": len(training), "heldout_verse_lines": len(heldout),
        "passages": passages.count("") + 1, "passage_lines": 8,
    }
    assert blank + speakers + len(training) + len(heldout) == MAX_LINES
    # Passages of at least 8 lines, each made of whole speeches.
    lengths = [len(passage.split("\n")) for passage in "\n".join(passages).split("\n\n")]
    assert min(lengths[:-1]) >= 8 and max(lengths) > 8


def test_the_beam_jobs_account_for_every_line_of_the_passages(demo_run):
    output_dir, summary, printed = demo_run
    passages = read_lines(output_dir / "text" / "train.txt")
    blank = passages.count("")
    vocabulary = summary["vocabulary"]["input"]
    assert (vocabulary["lines_read"], vocabulary["lines_used"],
            vocabulary["lines_skipped"]["blank"]) == (len(passages), len(passages) - blank, blank)
    assert sum(vocabulary["lines_skipped"].values()) == blank
    data = summary["pretraining_data"]
    assert (data["lines"]["read"], data["lines"]["used"], data["lines"]["skipped"]["blank"]) \
        == (len(passages), len(passages) - blank, blank)
    assert data["documents"] == {"read": blank + 1, "used": blank + 1, "skipped": {"empty": 0}}
    assert summary["vocabulary"]["size"] == len(read_lines(output_dir / "vocabulary" / "vocab.txt"))
    records = tf.io.gfile.glob(str(output_dir / "pretraining_data" / "pretraining-*"))
    assert sum(1 for _ in tf.data.TFRecordDataset(records)) == data["instances"] > 0
    assert f"Beam job stats: {len(passages):,} lines read, {len(passages) - blank:,} used" \
        in printed


def test_the_served_answers_are_the_exports_fill_mask(demo_run):
    output_dir, summary, _ = demo_run
    served = read_jsonl(output_dir / "serving" / "predictions.jsonl")
    assert len(served) == summary["masked_word_accuracy"]["lines"] > 10
    fill_mask = tf.saved_model.load(summary["export"]).signatures["fill_mask"]
    outputs = fill_mask(text=tf.constant([row["text"] for row in served]))
    tokens = [[token.decode("utf-8") for token in row[0]] for row in outputs["tokens"].numpy()]
    assert [row["tokens"] for row in served] == tokens
    np.testing.assert_allclose([row["scores"] for row in served], outputs["scores"].numpy()[:, 0],
                               rtol=1e-6)
    # Each row is a held-out line with one of its words masked.
    heldout = read_lines(output_dir / "text" / "heldout.txt")
    for row in served:
        assert row["line"] in heldout and row["text"].count("[MASK]") == 1
        before, after = row["text"].split("[MASK]")
        start, end = len(before), len(row["line"]) - len(after)
        assert (row["line"][:start], row["line"][end:]) == (before, after)
        assert row["line"][start:end].lower() == row["word"]


def test_the_answers_came_over_http_and_the_server_stopped(demo_run):
    output_dir, summary, printed = demo_run
    serving = summary["serving"]
    log = (output_dir / "serving" / "server.log").read_text("utf-8")
    answered = re.findall(r"POST /v1/models/shakespeare:predict 200", log)
    # 2 lines shown, 1 line not from the corpus, then the 96 held-out lines
    # in requests of 64.
    assert summary["masked_word_accuracy"]["lines"] == 96
    assert len(answered) == serving["requests"] == 2 + 1 + 2
    assert serving["server_exit_status"] == 0
    port = int(serving["url"].split(":")[2].split("/")[0])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)
    assert printed.count(f"POST {serving['url']}:predict") == 5


def test_the_accuracy_is_that_of_the_served_answers(demo_run):
    output_dir, summary, _ = demo_run
    served = read_jsonl(output_dir / "serving" / "predictions.jsonl")
    scores = summary["masked_word_accuracy"]
    assert scores["top_1"] == np.mean([row["word"] == row["tokens"][0] for row in served])
    assert scores["top_5"] == np.mean([row["word"] in row["tokens"] for row in served])
    assert scores["top_5"] > scores["top_1"]  # So that swapping them shows.
    baseline = scores["baseline_words"]
    assert len(baseline) == 5 and baseline[0] == "the"
    assert scores["baseline_top_1"] == np.mean([row["word"] == "the" for row in served])
    assert scores["baseline_top_5"] == np.mean([row["word"] in baseline for row in served])
    assert scores["baseline_top_5"] > scores["baseline_top_1"] > 0


def test_accuracy_counts_the_first_k_answers():
    lines = [masked_lm.MaskedLine("", "", word) for word in ("thee", "lord", "sir", "good")]
    predictions = [["thee", "a"], ["my", "lord"], ["sir", "lord"], ["a", "b"]]
    assert masked_lm.accuracy(lines, predictions, 1) == 0.5
    assert masked_lm.accuracy(lines, predictions, 2) == 0.75
    assert masked_lm.accuracy([], [], 5) == 0.0


def test_a_masked_word_is_a_whole_word_of_the_vocabulary():
    words = {"i", "know", "t", "lord", "my", "good"}
    line = "I know't, my good lord; 2nd"
    assert [match.group() for match in masked_lm.maskable_words(line, words)] == [
        "I", "my", "good", "lord"]  # Not "know" or "t" (a contraction), nor "2nd".
    masked = masked_lm.mask_lines([line, "nothing here"] * 20, words, seed=1)
    assert len(masked) == 20
    assert {(line.text, line.word) for line in masked} == {
        ("[MASK] know't, my good lord; 2nd", "i"),
        ("I know't, [MASK] good lord; 2nd", "my"),
        ("I know't, my [MASK] lord; 2nd", "good"),
        ("I know't, my good [MASK]; 2nd", "lord")}
    assert masked_lm.mask_lines([line] * 20, words, seed=1) == masked
    assert masked_lm.mask_lines([line] * 20, words, seed=2) != masked


def test_a_failing_stage_is_named_and_the_earlier_stages_output_is_kept(tmp_path):
    missing = tmp_path / "missing_config.json"
    with pytest.raises(SystemExit) as raised:
        main([f"--output_dir={tmp_path / 'out'}", *TINY_FLAGS, f"--config={missing}"])
    message = str(raised.value.code)
    assert message.startswith('demo: stage "training" failed: ') and "--config" in message
    assert str(missing) in message
    output_dir = tmp_path / "out"
    summary = json.loads((output_dir / "summary.json").read_text("utf-8"))
    assert summary["failed"]["stage"] == "training"
    assert list(summary["stage_seconds"]) == STAGES[:4]
    assert list(summary["artefacts"]) == STAGES[:3]
    for artefacts in summary["artefacts"].values():
        for path in artefacts.values():
            assert tf.io.gfile.glob(path), path
    assert not tf.io.gfile.glob(str(output_dir / "run" / "ckpt-*"))
    assert not os.listdir(output_dir / "export") and not os.listdir(output_dir / "serving")


def test_the_server_stops_when_the_serving_stage_fails(demo_run, tmp_path):
    output_dir, _, _ = demo_run
    server = masked_lm.ServerProcess(str(output_dir / "export"), str(tmp_path / "server.log"))
    with pytest.raises(RuntimeError, match="a request went wrong"):
        with server:
            _, (prediction,) = server.predict(["to be or not to [MASK]."])
            assert len(prediction["tokens"][0]) == 5
            raise RuntimeError("a request went wrong")
    assert server.process.poll() == server.exit_status == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5)


def test_without_data_dir_the_demo_is_the_embedded_one(capsys):
    assert not wants_translation(["--output_dir=x", "--train_steps=5"])
    assert wants_translation(["--data_dir=../shared/data"])
    assert wants_translation(["--data_dir", "../shared/data"])
    with pytest.raises(SystemExit) as raised:
        main(["--help"])
    assert raised.value.code == 0
    help_text = capsys.readouterr().out
    assert "Tiny Shakespeare" in help_text and "--data_dir=DIR" in help_text
    assert "--train_steps" in help_text and "--train_pairs" not in help_text


@pytest.mark.parametrize("data_dir, expected", [
    ("", "-m tfnlp_cli.demo --output_dir=demo_output"),
    ("/some/data", "-m tfnlp_cli.demo --data_dir=/some/data --output_dir=demo_output"),
])
def test_make_demo_passes_data_dir_only_when_it_is_set(data_dir, expected):
    command = ["make", "--dry-run", "--always-make", "demo"]
    if data_dir:
        command.append(f"DATA_DIR={data_dir}")
    # Neither a DATA_DIR of the environment nor the flags of a `make test` above.
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("DATA_DIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    printed = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True,
                             check=True, env=environment).stdout
    (demo_line,) = [line for line in printed.splitlines() if "-m tfnlp_cli.demo" in line]
    assert demo_line.endswith(expected)
