"""The README's five-minute tour runs as written, top to bottom, in a fresh
folder: its shell block is run by bash with one change, fewer training
steps through the `--train_steps` and `--warmup_steps` flags the tour
itself shows."""

import json
import os
import re
import socket
import subprocess
import sys

import pytest

from tests.conftest import REPOSITORY
from tests.test_readme import code_blocks

TOUR_HEADING = "## A five-minute tour"
# The tour's training steps and warmup, and the test's.
TOUR_STEPS = {"--train_steps": 600, "--warmup_steps": 60}
TEST_STEPS = {"--train_steps": 10, "--warmup_steps": 5}
# The ports the tour's TensorBoard and server listen on.
TOUR_PORTS = (6006, 8501)


def tour_block():
    """The tour's shell block: the first code block after its heading."""
    text = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    section = text.split(TOUR_HEADING, 1)[1].split("\n## ", 1)[0]
    blocks = [block for block in code_blocks("README.md") if block in section]
    assert blocks, f"no shell block under {TOUR_HEADING!r} in README.md"
    return blocks[0]


def port_is_free(port):
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def shorter(block):
    """The tour with the steps of TEST_STEPS."""
    for flag, steps in TOUR_STEPS.items():
        assert block.count(f"{flag}={steps}") == 1, f"the tour no longer trains with {flag}={steps}"
        block = block.replace(f"{flag}={steps}", f"{flag}={TEST_STEPS[flag]}")
    return block


@pytest.fixture(scope="module")
def tour_run(tmp_path_factory):
    busy = [port for port in TOUR_PORTS if not port_is_free(port)]
    if busy:
        pytest.skip(f"the tour's ports {busy} are taken on this machine")
    folder = tmp_path_factory.mktemp("tour")
    (folder / "demo").symlink_to(REPOSITORY / "demo")
    # Background jobs (TensorBoard, the server) end with the script.
    script = "set -eu\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + shorter(tour_block())
    environment = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ["PATH"])
    finished = subprocess.run(["bash", "-c", script], cwd=folder, env=environment,
                              capture_output=True, text=True, timeout=600)
    return folder, finished


def test_the_tour_runs_to_the_servers_answer(tour_run):
    folder, finished = tour_run
    assert finished.returncode == 0, finished.stderr[-4000:]
    answer = json.loads(finished.stdout.strip().splitlines()[-1])
    (prediction,) = answer["predictions"]
    (position, *_), (words, *_), (scores, *_) = (
        prediction["mask_positions"], prediction["tokens"], prediction["scores"])
    assert position == 3  # [CLS] my good [MASK]
    assert len(words) == len(scores) == 5
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert "[MASK]" not in words and "" not in words


def test_the_tour_writes_what_it_says(tour_run):
    folder, finished = tour_run
    assert finished.returncode == 0, finished.stderr[-4000:]
    stats = json.loads((folder / "tour" / "data" / "stats.json").read_text())
    assert stats
    assert (folder / "tour" / "export" / "1" / "saved_model.pb").is_file()
    vocabulary = (folder / "tour" / "vocab.txt").read_text().splitlines()
    config = json.loads((folder / "tour" / "run" / "config.json").read_text())
    assert config["vocab_size"] == len(vocabulary)
    assert re.search(r"tensorboard --logdir tour/run\b", tour_block())
