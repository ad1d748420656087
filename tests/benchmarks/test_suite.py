"""The benchmark suite: every benchmark registered, RESULTS.md sections
written, replaced and kept, failures and skips reported."""

import ast
import pathlib
import subprocess
import sys

import pytest

from benchmarks import suite
from benchmarks.reporting import figure
from tests.conftest import REPOSITORY

WHEN, MACHINE, COMMIT = "2026-01-02 03:04 UTC", "a test CPU, 2 cores", "abc1234"


def runnable_benchmark_modules():
    """The modules of benchmarks/ with a `__main__` block, but the suite's own."""
    names = set()
    for path in (REPOSITORY / "benchmarks").glob("*.py"):
        if path.stem.startswith("__"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for node in tree.body):
            names.add(path.stem)
    return names


def test_every_benchmark_script_is_in_the_suite():
    assert runnable_benchmark_modules() == set(suite.BENCHMARKS)


def outcome(name, value, reference_value, status="ran", detail=""):
    report = {"figures": [figure("speed", value, "items/s", reference="the original",
                                 reference_value=reference_value, goal=2.0)]}
    return suite.Outcome(suite.BENCHMARKS[name], "hour", status, 12.0,
                         report if status == "ran" else None, detail)


def test_a_section_shows_each_figure_its_reference_ratio_goal_and_command():
    section = suite.results_section(outcome("decoding", 3000.0, 1000.0), WHEN, MACHINE, COMMIT)
    assert "## decoding" in section
    assert "| speed | 3,000 items/s | 1,000 items/s (the original) | 3× | ≥ 2× met |" in section
    assert "`python -m benchmarks decoding`" in section
    assert WHEN in section and MACHINE in section and COMMIT in section
    missed = suite.results_section(outcome("decoding", 1500.0, 1000.0), WHEN, MACHINE, COMMIT)
    assert "| 1.5× | ≥ 2× **not met** |" in missed


def test_a_reports_details_follow_its_figures():
    ran = outcome("pretraining_scaling", 3000.0, 1000.0)
    ran.report["details"] = ["| copies | seconds |", "|---|---|", "| 1 | 9.5 |", "",
                             "![plot](pretraining_scaling.png)"]
    section = suite.results_section(ran, WHEN, MACHINE, COMMIT)
    assert section.index("| speed |") < section.index("| 1 | 9.5 |")
    assert section.index("![plot](pretraining_scaling.png)") < section.index("<!-- end:")


def test_rerunning_some_benchmarks_replaces_their_sections_and_keeps_the_others(tmp_path):
    path = tmp_path / "RESULTS.md"
    first = {name: suite.results_section(outcome(name, 300.0, 100.0), WHEN, MACHINE, COMMIT)
             for name in ("serving", "decoding")}
    suite.update_results_file(path, first)
    again = {"serving": suite.results_section(outcome("serving", 500.0, 100.0), WHEN,
                                              MACHINE, COMMIT)}
    suite.update_results_file(path, again)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(suite.HEADER)
    assert text.count("## serving") == 1 and "| 5× |" in text
    assert text.count("## decoding") == 1 and "| 3× |" in text
    # In the suite's order, whatever order they ran in.
    assert text.index("## decoding") < text.index("## serving")


def test_a_failed_benchmark_is_reported_with_the_end_of_its_log(tmp_path):
    missing = suite.Benchmark("no_such_benchmark", "nothing", needs_data=False)
    result = suite.run_benchmark(missing, "quick", tmp_path / "reports", tmp_path / "logs")
    assert result.status == "failed"
    assert "exited with status 1" in result.detail
    assert "No module named benchmarks.no_such_benchmark" in result.detail
    section = suite.results_section(result, WHEN, MACHINE, COMMIT)
    assert "**Failed**: exited with status 1" in section


def test_a_benchmark_that_needs_absent_data_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(suite, "DATA_DIR", str(tmp_path / "nowhere"))
    result = suite.run_benchmark(suite.BENCHMARKS["pretraining_data"], "quick",
                                 tmp_path / "reports", tmp_path / "logs")
    assert result.status == "skipped" and "shared real data" in result.detail


def run_suite_command(*arguments):
    return subprocess.run([sys.executable, "-m", "benchmarks", *arguments], cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=600)


def test_an_unknown_name_is_a_usage_error_that_lists_the_benchmarks():
    finished = run_suite_command("no_such_benchmark")
    assert finished.returncode == 2
    assert "no benchmark named no_such_benchmark" in finished.stderr
    assert "pretraining_data" in finished.stderr


def test_list_names_every_benchmark_and_the_total_time():
    finished = run_suite_command("--list")
    assert finished.returncode == 0
    for name in suite.BENCHMARKS:
        assert name in finished.stdout
    assert finished.stdout.splitlines()[-1].startswith("all")


def test_the_report_flag_goes_before_flags_passed_on():
    command = suite.BENCHMARKS["rnn_attention_variants"].command("hour", "out.json")
    assert command.index("--output=out.json") < command.index("--")
    assert suite.BENCHMARKS["decoding"].command("quick", "out.json")[-2:] == [
        "--quick", "--output=out.json"]


def test_a_quick_run_writes_the_benchmark_section_with_its_figures(tmp_path):
    results_file = tmp_path / "RESULTS.md"
    finished = run_suite_command("--quick", "attention_layers",
                                 f"--results_file={results_file}",
                                 f"--reports_dir={tmp_path / 'reports'}")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "1 ran, 0 failed, 0 skipped" in finished.stdout
    text = results_file.read_text(encoding="utf-8")
    assert "## attention_layers" in text
    assert "quick size: a smoke run, not a measurement" in text
    assert "| MultiHeadAttention" in text and "keras.layers.MultiHeadAttention" in text
    assert (tmp_path / "reports" / "attention_layers.json").is_file()
    assert (tmp_path / "reports" / "logs" / "attention_layers.log").is_file()


def test_a_figure_where_lower_is_better_says_so():
    report = {"figures": [figure("latency", 5.0, "ms", reference="Keras", reference_value=10.0,
                                 higher_is_better=False)]}
    section = suite.results_section(
        suite.Outcome(suite.BENCHMARKS["serving"], "hour", "ran", 1.0, report),
        WHEN, MACHINE, COMMIT)
    assert "| latency (lower is better) | 5 ms | 10 ms (Keras) | 0.5× |  |" in section


@pytest.mark.parametrize("value, verdict", [(5.0, "met"), (6.0, "**not met**")])
def test_a_lower_is_better_goal_is_a_ceiling(value, verdict):
    report = {"figures": [figure("memory", value, "MB", reference="the original",
                                 reference_value=10.0, goal=0.5, higher_is_better=False)]}
    section = suite.results_section(
        suite.Outcome(suite.BENCHMARKS["serving"], "hour", "ran", 1.0, report),
        WHEN, MACHINE, COMMIT)
    assert f"| ≤ 0.5× {verdict} |" in section
