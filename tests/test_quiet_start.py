"""The command lines start without TensorFlow's and Beam's import noise,
which `--verbose` and TFNLP_VERBOSE=1 bring back."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPOSITORY
from tfnlp import quiet_start


PYTHON_M = (sys.executable, "-m", "pipelines.wordpiece_vocab")
# The console script installed beside the interpreter.
TFNLP = (os.path.join(os.path.dirname(sys.executable), "tfnlp"), "wordpiece-vocab")


def help_run(*arguments, command=PYTHON_M, **environment):
    """`COMMAND --help ARGUMENTS` (the WordPiece job imports TensorFlow and
    Beam); returns the finished process."""
    variables = {name: value for name, value in os.environ.items()
                 if name not in ("TF_CPP_MIN_LOG_LEVEL", "TFNLP_VERBOSE")}
    variables.update(environment)
    return subprocess.run(
        [*command, "--help", *arguments],
        cwd=REPOSITORY, env=variables, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("command", [PYTHON_M, TFNLP], ids=["python -m", "tfnlp"])
def test_a_command_line_starts_with_nothing_on_stderr(command):
    finished = help_run(command=command)
    assert finished.returncode == 0
    assert finished.stdout.startswith("usage: ")
    assert "wordpiece" in finished.stdout.splitlines()[0]
    assert finished.stderr == ""


def test_verbose_shows_the_frameworks_start_up_lines():
    # TFNLP_VERBOSE=1 asks the same `verbose_requested` (tested below).
    finished = help_run("--verbose")
    assert finished.returncode == 0
    assert "apitools" in finished.stderr  # Beam's
    # TensorFlow's C++ log lines name their source file ("cudart_stub.cc:31]",
    # "cpu_feature_guard.cc:227]"); which ones appear depends on the machine.
    assert re.search(r"\w\.cc:\d+\]", finished.stderr), finished.stderr


@pytest.mark.parametrize("arguments, environment, expected", [
    ([], {}, False),
    (["--verbose"], {}, True),
    (["--verbose_name=x"], {}, False),
    ([], {"TFNLP_VERBOSE": "1"}, True),
    ([], {"TFNLP_VERBOSE": "0"}, False),
    ([], {"TFNLP_VERBOSE": "False"}, False),
])
def test_verbose_requested(monkeypatch, arguments, environment, expected):
    monkeypatch.delenv("TFNLP_VERBOSE", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert quiet_start.verbose_requested(arguments) is expected


def test_silenced_stderr_is_restored_after_an_error(capfd):
    with pytest.raises(RuntimeError):
        with quiet_start.stderr_silenced():
            os.write(2, b"hidden\n")
            raise RuntimeError("raised inside")
    os.write(2, b"shown\n")
    assert capfd.readouterr().err == "shown\n"



# `python -c SCRIPT NAME`: run the job NAME's --help as `python -m NAME` does
# (argv[0] is "-m" while the package loads), or the subcommand NAME's as
# `tfnlp NAME` does, then say on stderr whether TensorFlow was imported.
LAUNCH_MODULE = """
import runpy, sys
module = sys.argv[1]
sys.argv = ["-m", "--help"]
try:
    runpy.run_module(module, run_name="__main__")
except SystemExit:
    pass
print("tensorflow" in sys.modules, file=sys.stderr)
"""
RUN_SUBCOMMAND = """
import sys
from tfnlp_cli import commands
try:
    commands.SUBCOMMANDS_BY_NAME[sys.argv[1]].run(["--help"])
except SystemExit:
    pass
print("tensorflow" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize("script, name", [
    (LAUNCH_MODULE, "pipelines.pretraining_data"),
    (LAUNCH_MODULE, "pipelines.translation_data"),
    (RUN_SUBCOMMAND, "pretraining-data"),
    (RUN_SUBCOMMAND, "translation-data"),
])
def test_jobs_without_tensorflow_start_without_it(script, name):
    """The quiet start imports only what a job uses: TensorFlow would cost
    the pretraining-data job seconds and about 600 MB it never needs."""
    finished = subprocess.run([sys.executable, "-c", script, name], cwd=REPOSITORY,
                              capture_output=True, text=True, timeout=120)
    assert finished.stdout.startswith("usage: ")
    assert finished.stderr.strip().splitlines()[-1] == "False"
