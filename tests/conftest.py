"""Fixtures shared by the whole suite.

Real-data checks: the tests that read the shared real text (BERT's
vocabularies, the Gutenberg books, WikiText-2, Multi30k, SST-2) take the
`shared_data_dir` fixture. Where that folder is missing (a fresh clone with
nothing beside it) they are skipped, and the run ends with one line saying
how many did not run and how to run them. With `TFNLP_REQUIRE_DATA=1` (CI,
which has the data) a missing folder stops the run at its start instead.
"""

import os
import pathlib

import pytest

# XLA's LLVM optimisation passes dominate the compile time of the suite's
# tiny models and buy nothing at their sizes; subprocesses inherit this.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

REPOSITORY = pathlib.Path(__file__).resolve().parent.parent
DATA_DIR_VARIABLE = "TFNLP_DATA_DIR"
REQUIRE_DATA_VARIABLE = "TFNLP_REQUIRE_DATA"
# Begins the reason of every real-data skip; the summary counts them by it.
MISSING_DATA_REASON = "real data missing"


def shared_data_path():
    """$TFNLP_DATA_DIR, or `../shared/data` beside the checkout when it is
    unset or empty."""
    return pathlib.Path(
        os.environ.get(DATA_DIR_VARIABLE, "").strip() or REPOSITORY.parent / "shared" / "data")


# The folders of the real data (docs/DATA.md); any of them marks its place.
DATA_FOLDERS = ("cls", "lm", "mono", "mt", "vocab")


def shared_data_present(path):
    return any((path / folder).is_dir() for folder in DATA_FOLDERS)


def data_required():
    return os.environ.get(REQUIRE_DATA_VARIABLE, "") not in ("", "0")


def missing_data_message(path):
    return (
        f"The real data is not at {path} (none of its folders {', '.join(DATA_FOLDERS)}). "
        f"Tests read it from ../shared/data beside the checkout; set {DATA_DIR_VARIABLE} "
        "to its folder if it lives elsewhere (docs/DATA.md lists the files)."
    )


def pytest_sessionstart(session):
    path = shared_data_path()
    if data_required() and not shared_data_present(path):
        pytest.exit(f"{REQUIRE_DATA_VARIABLE} is set: {missing_data_message(path)}",
                    returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def shared_data_dir():
    """The real text beside the checkout (`../shared/data`), or $TFNLP_DATA_DIR.

    Skips the test where the folder is missing (fails it under
    TFNLP_REQUIRE_DATA=1).
    """
    path = shared_data_path()
    if not shared_data_present(path):
        if data_required():
            pytest.fail(missing_data_message(path))
        pytest.skip(f"{MISSING_DATA_REASON} at {path}")
    return path


# `make test` hands whole modules to two workers (--dist loadscope) in
# collection order (--no-loadscope-reorder): the modules that train, export
# or run Beam jobs, a minute each at most, go first, so that the run ends on
# small modules and neither worker waits long for the other.
LONG_MODULES_FIRST = ("tests/test_tour", "tests/trainer/", "tests/export/", "tests/test_demo",
                      "tests/test_readme", "tests/models/", "tests/pipelines/", "tests/text/",
                      "tests/serve/")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return next((index for index, prefix in enumerate(LONG_MODULES_FIRST)
                     if path.startswith(prefix)), len(LONG_MODULES_FIRST))

    items.sort(key=rank)  # stable: each module's tests stay together, in order


def missing_data_skips(terminal_reporter):
    """The skip reports of real-data checks (on xdist workers too)."""
    return [report for report in terminal_reporter.stats.get("skipped", [])
            if MISSING_DATA_REASON in str(report.longrepr)]


def pytest_unconfigure(config):
    """Ends the run (after pytest's own summary) with one line counting the
    real-data checks that were skipped, if any."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(config, "workerinput"):  # an xdist worker
        return
    skipped = len(missing_data_skips(reporter))
    if skipped:
        reporter.write_sep(
            "!",
            f"{skipped} real-data checks did not run: no shared data at "
            f"{shared_data_path()}. Run them with {DATA_DIR_VARIABLE}=/path/to/data "
            "make test",
            red=True, bold=True,
        )
