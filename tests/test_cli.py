"""The `tfnlp` command (`tfnlp_cli.commands`): a subcommand for every
`python -m` entry point, with that module's flags, exit statuses and one-line errors
under the name `tfnlp SUBCOMMAND`.

The subcommands run in this process (`commands.main(argv)`); the installed
console script runs twice, for what only a real process shows: that it
exists, that `tfnlp --help` loads neither TensorFlow nor Beam, and its exit
status.
"""

import ast
import http.server
import importlib
import json
import logging
import os
import pathlib
import re
import subprocess
import sys
import threading

import pytest

import tfnlp
from tests.conftest import REPOSITORY
from tfnlp import command_line
from tfnlp.command_line import run_main
from tfnlp_cli import commands

SUBCOMMAND_NAMES = [subcommand.name for subcommand in commands.SUBCOMMANDS]
# What each subcommand must run: the `python -m` module of the same flags.
PYTHON_M_MODULES = {
    "wordpiece-vocab": "pipelines.wordpiece_vocab",
    "pretraining-data": "pipelines.pretraining_data",
    "translation-data": "pipelines.translation_data",
    "lm-data": "pipelines.lm_data",
    "distillation-data": "pipelines.distillation_data",
    "train": "trainer.train",
    "pretrain": "trainer.pretrain",
    "finetune": "trainer.finetune",
    "translate": "trainer.translate",
    "lm": "trainer.lm",
    "distill": "trainer.distill",
    "export": "trainer.export",
    "average-checkpoints": "trainer.average_checkpoints",
    "translate-text": "trainer.translate_text",
    "serve": "tfnlp.serve",
    "load-test": "tfnlp.serve.load_test",
    "demo": "tfnlp_cli.demo",
}
# The folders whose `if __name__ == "__main__"` modules are `python -m`
# entry points (benchmarks/, examples/ and tests/ hold scripts).
ENTRY_POINT_FOLDERS = ("pipelines", "trainer", "tfnlp", "tfnlp_cli", "tools")
# The entry points that are deliberately no subcommand, and why.
NOT_SUBCOMMANDS = {
    "tfnlp_cli.commands": "the tfnlp command itself",
    # tools/ is not installed (setup.py): the repository's own scripts, run
    # from a checkout.
    "tools.sentence_holdout": "data preparation for the SST-2 recipe of docs/BERT.md",
    "tools.broken_versions": "a check of the tests",
    "tools.mutation_report": "a check of the tests",
}
# One mistake per subcommand, found before any work; formatted with `paths`.
MISTAKES = {
    "wordpiece-vocab": ["--input_file={missing}", "--output_file={output}/vocab.txt",
                        "--vocab_size=100"],
    "pretraining-data": ["--input_file={text}", "--vocab_file={missing}",
                         "--output_dir={output}"],
    "translation-data": ["--source_file={missing}", "--target_file={text}",
                         "--output_dir={output}"],
    "lm-data": ["--input_file={missing}", "--output_dir={output}"],
    "distillation-data": ["--labelled_file={missing}", "--teacher_export={text}",
                          "--output_dir={output}"],
    "train": ["--task=language_model", "--train_data={missing}*", "--model_dir={output}",
              "--train_steps=1"],
    "pretrain": ["--train_data={missing}*", "--model_dir={output}", "--global_batch_size=2",
                 "--train_steps=1", "--warmup_steps=0"],
    "finetune": ["--task=classification", "--train_data={missing}", "--vocab_file={text}",
                 "--model_dir={output}", "--config=tiny"],
    "translate": ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"],
    "lm": ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"],
    "distill": ["--train_data={missing}*", "--model_dir={output}", "--train_steps=1"],
    "export": ["--model_dir={missing}", "--export_dir={output}"],
    "average-checkpoints": ["--model_dir={text}", "--num_checkpoints=0"],
    "translate-text": ["--model_dir={missing}"],
    "serve": ["--model_dir={missing}"],
    "load-test": ["--url=ftp://localhost/"],
    "demo": ["--no_such_flag"],
}
IMPORT_NOISE = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\)|[IWEF]\d{4} "
    r"|WARNING:root:apitools not found)"
)


@pytest.fixture(autouse=True)
def root_logging_restored(monkeypatch):
    """The jobs and the demo set up the root logger for a command line
    (`logging.basicConfig(force=True)`); pytest's handlers come back after
    each test."""
    monkeypatch.delenv(command_line.VERBOSE_ENVIRONMENT_VARIABLE, raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "text.txt").write_text("A sentence.\n", encoding="utf-8")
    return {"missing": str(tmp_path / "missing"), "text": str(tmp_path / "text.txt"),
            "output": str(tmp_path / "output")}


def run_tfnlp(arguments, capsys):
    """`tfnlp ARGUMENTS` in this process: (exit status, stdout, stderr)."""
    try:
        status = commands.main(arguments)
    except SystemExit as exit_info:
        status = exit_info.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_python_m(name, arguments, capsys):
    """`python -m MODULE ARGUMENTS` in this process, MODULE the one that
    subcommand `name` must run, as its `__main__` block runs it (`run_main`;
    the demo's `main` alone): (exit status, stdout, stderr)."""
    module = PYTHON_M_MODULES[name]
    main = importlib.import_module(module if name != "serve" and name != "demo"
                                   else f"{module}.__main__").main
    try:
        if name == "demo":
            main(arguments)
        else:
            run_main(main, arguments)
        status = 0
    except SystemExit as exit_info:
        status = exit_info.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def flags_of(help_text):
    return sorted(set(re.findall(r"--[A-Za-z][\w-]*", help_text)))


def lines(stderr):
    return [line for line in stderr.splitlines() if line.strip() and not IMPORT_NOISE.match(line)]


def entry_point_modules():
    """The modules of the checkout's product folders that run something
    under `if __name__ == "__main__":` (found in their syntax trees, so a
    docstring's example does not count)."""
    modules = set()
    for folder in ENTRY_POINT_FOLDERS:
        for path in sorted((REPOSITORY / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"')
                   == '__name__ == "__main__"' for node in tree.body):
                relative = path.relative_to(REPOSITORY).with_suffix("")
                modules.add(".".join(relative.parts))
    return modules


def test_every_python_m_entry_point_is_a_subcommand():
    modules = entry_point_modules()
    assert "trainer.pretrain" in modules  # The walk works.
    assert "tfnlp_cli.demo.__main__" in modules
    assert modules - set(NOT_SUBCOMMANDS) == {subcommand.module
                                              for subcommand in commands.SUBCOMMANDS}
    assert set(NOT_SUBCOMMANDS) <= modules
    assert sorted(PYTHON_M_MODULES) == sorted(SUBCOMMAND_NAMES)


@pytest.mark.parametrize("subcommand", commands.SUBCOMMANDS, ids=SUBCOMMAND_NAMES)
def test_each_subcommand_is_named_after_its_module(subcommand):
    module = subcommand.module.removesuffix(".__main__")
    assert subcommand.name == module.rsplit(".", 1)[-1].replace("_", "-")


def test_an_alias_runs_its_subcommand_under_the_name_typed(paths, capsys):
    status, out, _ = run_tfnlp(["average", "--help"], capsys)
    assert status == 0
    assert out.startswith("usage: tfnlp average ")
    assert flags_of(out) == flags_of(run_tfnlp(["average-checkpoints", "--help"], capsys)[1])
    status, _, err = run_tfnlp(["average", f"--model_dir={paths['missing']}"], capsys)
    assert status == 2
    assert lines(err)[0].startswith(f"tfnlp average: error: --model_dir={paths['missing']}")
    listed = run_tfnlp(["--help"], capsys)[1].split("commands:\n", 1)[1]
    assert "  average-checkpoints  " in listed and "  average  " not in listed


def test_help_lists_every_subcommand_with_one_line(capsys):
    status, out, err = run_tfnlp(["--help"], capsys)
    assert (status, err) == (0, "")
    assert out.startswith("usage: tfnlp ")
    listed = re.findall(r"^  (\S+) +(\S.*)$", out.split("commands:\n", 1)[1], re.MULTILINE)
    assert listed == [(subcommand.name, subcommand.summary)
                      for subcommand in commands.SUBCOMMANDS]


def test_version_is_the_package_version(capsys):
    assert run_tfnlp(["--version"], capsys) == (0, f"tfnlp {tfnlp.__version__}\n", "")
    assert re.fullmatch(r"\d+\.\d+\.\d+", tfnlp.__version__)


@pytest.mark.parametrize("name", SUBCOMMAND_NAMES)
def test_each_subcommand_help_shows_its_module_flags(name, capsys):
    status, out, _ = run_tfnlp([name, "--help"], capsys)
    module_status, module_out, _ = run_python_m(name, ["--help"], capsys)
    assert status == module_status == 0
    assert len(flags_of(module_out)) >= 2
    assert flags_of(out) == flags_of(module_out)


@pytest.mark.parametrize("name", SUBCOMMAND_NAMES)
def test_each_subcommand_help_names_it_tfnlp_subcommand(name, capsys):
    status, out, _ = run_tfnlp([name, "--help"], capsys)
    assert status == 0
    assert out.startswith(f"usage: tfnlp {name} ")


@pytest.mark.parametrize("name", SUBCOMMAND_NAMES)
def test_a_mistake_gives_the_python_m_status_and_error_under_the_tfnlp_name(
        name, paths, capsys):
    arguments = [argument.format(**paths) for argument in MISTAKES[name]]
    status, _, err = run_tfnlp([name, *arguments], capsys)
    module_status, _, module_err = run_python_m(name, arguments, capsys)
    assert status == module_status == 2
    module_program = f"python -m {PYTHON_M_MODULES[name]}"
    assert len(lines(err)) == 1, err
    assert lines(err)[0].startswith(f"tfnlp {name}: error: ")
    assert lines(module_err)[0].startswith(f"{module_program}: error: ")
    assert lines(err) == lines(module_err.replace(module_program, f"tfnlp {name}"))


def test_verbose_in_the_config_file_prints_the_traceback(paths, tmp_path, capsys):
    config_file = tmp_path / "run.yaml"
    config_file.write_text(f"model_dir: {paths['missing']}\nverbose: true\n")
    status, _, err = run_tfnlp(["average-checkpoints", f"--config_file={config_file}"], capsys)
    assert status == 2
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith(
        f"tfnlp average-checkpoints: error: --model_dir={paths['missing']}")


def test_verbose_prints_the_traceback_first(paths, capsys):
    status, _, err = run_tfnlp(
        ["average-checkpoints", f"--model_dir={paths['missing']}", "--verbose"], capsys)
    assert status == 2
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith(
        f"tfnlp average-checkpoints: error: --model_dir={paths['missing']}")


@pytest.mark.parametrize("arguments, message", [
    (["pretrian"], "unknown command 'pretrian'; did you mean pretrain or train?"),
    (["average_checkpoints"],
     "unknown command 'average_checkpoints'; did you mean average-checkpoints?"),
    (["averag"], "unknown command 'averag'; did you mean average-checkpoints?"),
    (["pipelines.wordpiece_vocab"], "did you mean wordpiece-vocab?"),
    (["xyz", "--help"], "unknown command 'xyz'; the commands are wordpiece-vocab, "
                        "pretraining-data, translation-data, lm-data, distillation-data, "
                        "train, pretrain,"),
    ([], "no command given; expected one of wordpiece-vocab,"),
    (["--verbose"], "unrecognized arguments: --verbose."),
])
def test_an_unknown_or_missing_command_is_one_line_and_status_2(arguments, message, capsys):
    status, out, err = run_tfnlp(arguments, capsys)
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1, err
    assert err.startswith("tfnlp: error: ") and message in err, err
    assert err.endswith(" Run tfnlp --help for the commands.\n")


class AnswerEveryPost(http.server.BaseHTTPRequestHandler):
    """A server that answers every POST with `{"predictions": [1]}`."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"predictions": [1]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_subcommand_runs_with_flags_from_a_config_file_and_returns_0(tmp_path, capsys):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AnswerEveryPost)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "load.yaml"
        config.write_text(f"url: http://127.0.0.1:{server.server_port}/v1/models/m:predict\n"
                          "requests: 50\nconcurrency: 2\nbody: '{\"instances\": [\"a\"]}'\n",
                          encoding="utf-8")
        status, out, err = run_tfnlp(
            ["load-test", f"--config_file={config}", "--requests=7"], capsys)
    finally:
        server.shutdown()
        server.server_close()
    assert (status, err) == (0, "")
    report = json.loads(out)
    assert report["requests"] == 7  # The command line's, over the file's 50.
    assert report["errors"] == 0


def installed_script():
    script = pathlib.Path(sys.executable).parent / "tfnlp"
    if not script.exists():
        pytest.fail(f"{script} is missing: the console script of setup.py is not installed. "
                    "Reinstall the package: pip install -e .")
    return str(script)


def test_the_installed_script_prints_its_help_without_tensorflow_or_beam(tmp_path):
    environment = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    completed = subprocess.run([installed_script(), "--help"], cwd=tmp_path, env=environment,
                               capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert all(name in completed.stdout for name in SUBCOMMAND_NAMES)
    imported = {line.rsplit("|", 1)[-1].strip() for line in completed.stderr.splitlines()
                if line.startswith("import time:")}
    assert "tfnlp_cli.commands" in imported  # The import log is read.
    assert not {name.split(".")[0] for name in imported} & {"tensorflow", "apache_beam", "keras"}


def test_the_installed_script_exits_2_with_one_line(tmp_path):
    completed = subprocess.run([installed_script(), "load-test", "--url=ftp://localhost/"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert lines(completed.stderr) == [
        "tfnlp load-test: error: --url=ftp://localhost/ is not an http URL; expected one such "
        "as http://127.0.0.1:8501/v1/models/NAME:predict. Run with --help for the flags."]
