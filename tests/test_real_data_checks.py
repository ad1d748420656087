"""Without the shared data, real-data checks are skipped and counted; CI,
which sets TFNLP_REQUIRE_DATA=1, stops instead."""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPOSITORY, shared_data_present

# TensorFlow-free tests that read a BERT vocabulary through `shared_data_dir`.
REAL_DATA_TESTS = "tests/text/test_reference_bert_tokenizer.py"


def run_pytest(tmp_path, *arguments, cwd=REPOSITORY, **environment):
    """Runs pytest on REAL_DATA_TESTS (in `cwd`) with the shared data
    pointed at an empty folder; returns the finished process."""
    missing = tmp_path / "no-data-here"
    missing.mkdir(exist_ok=True)
    variables = {name: value for name, value in os.environ.items()
                 if name not in ("TFNLP_REQUIRE_DATA", "PYTEST_XDIST_WORKER")}
    variables["TFNLP_DATA_DIR"] = str(missing)
    variables.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(REPOSITORY / REAL_DATA_TESTS),
         "--rootdir", str(REPOSITORY), "-p", "no:cacheprovider", "-o", "addopts=-ra",
         *arguments],
        cwd=cwd, env=variables, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "xdist"])
def test_missing_data_skips_and_ends_with_one_line_counting_them(tmp_path, workers):
    finished = run_pytest(tmp_path, *workers)
    assert finished.returncode == 0, finished.stdout[-3000:]
    skipped = int(re.search(r"(\d+) skipped", finished.stdout).group(1))
    assert skipped > 10
    summary = [line for line in finished.stdout.splitlines() if "real-data checks" in line]
    assert len(summary) == 1
    assert f" {skipped} real-data checks did not run" in summary[0]
    assert "TFNLP_DATA_DIR=/path/to/data make test" in summary[0]
    assert finished.stdout.rstrip().splitlines()[-1] == summary[0]  # the last line


def test_required_data_stops_the_run_at_its_start(tmp_path):
    finished = run_pytest(tmp_path, TFNLP_REQUIRE_DATA="1")
    assert finished.returncode == pytest.ExitCode.USAGE_ERROR
    output = finished.stdout + finished.stderr
    assert "TFNLP_REQUIRE_DATA is set" in output
    assert str(tmp_path / "no-data-here") in output
    assert "passed" not in output and "skipped" not in output


def test_an_empty_data_variable_means_unset_not_the_current_folder(tmp_path):
    # The current folder looks like a data folder: an empty variable must
    # not make it one.
    (tmp_path / "README.md").write_text("not the shared data\n")
    (tmp_path / "vocab").mkdir()
    finished = run_pytest(tmp_path, cwd=tmp_path, TFNLP_DATA_DIR="")
    expected = REPOSITORY.parent / "shared" / "data"
    if shared_data_present(expected):
        assert "real-data checks" not in finished.stdout, finished.stdout[-3000:]
    else:
        assert f"no shared data at {expected}" in finished.stdout, finished.stdout[-3000:]
    assert finished.returncode == 0, finished.stdout[-3000:]


def test_present_data_runs_the_checks_without_the_line(shared_data_dir, tmp_path):
    finished = run_pytest(tmp_path, TFNLP_DATA_DIR=str(shared_data_dir),
                          TFNLP_REQUIRE_DATA="1")
    assert finished.returncode == 0, finished.stdout[-3000:]
    assert "real-data checks" not in finished.stdout
    assert "skipped" not in finished.stdout
