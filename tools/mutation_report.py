"""Mutation testing of tfnlp's pure-Python modules, with a kill-rate table.

    python -m tools.mutation_report [--module NAME ...] [--tests PATH ...]
        [--output tools/results/mutation_report.json]

Needs the "mutation" extra (`pip install -e ".[mutation]"`, which brings
mutmut). For each module (all of them unless `--module` names some), mutmut
makes small changes ("mutants") to the module's functions, one at a time,
such as `<` to `<=`, `+ 1` to `+ 2` or a deleted call, and runs the tests
of that module that call the changed function. A mutant is killed when a
test fails. The script prints a table (mutants, killed, survived,
timeouts and others, killed share, minutes) and writes JSON with every
surviving mutant's diff, to be read when writing the tests that kill them.

Why: a line that the tests run is not a line that the tests check. A
surviving mutant is a change of behaviour that no test notices, so the
killed share measures how much of the code's behaviour the tests pin down,
which line coverage does not. Equivalent mutants (changes that cannot alter
behaviour) always survive, so 100% is not the goal; a low share is a list
of untested behaviours.

mutmut runs in a temporary copy of the sources and tests, with its
configuration (a generated setup.cfg) written there, so the working tree is
never mutated, and the copy is removed at the end, on Ctrl-C and on
SIGTERM. One worker process runs at a time (`--max-children 1`).

The test selection of each module is its fast, TensorFlow-free tests and
the module's doctests. The tests on real text that need TensorFlow
(`tests/text/test_bert_tokenizer_parity.py`, the Gutenberg tests of the
pretraining instances) take seconds per mutant and are left out; `--tests`
runs a module against other tests (pytest node ids) instead.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPOSITORY = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPOSITORY / "tools" / "results" / "mutation_report.json"
# What the tests import: both packages are copied, only one file is mutated.
SOURCE_PACKAGES = ("tfnlp", "pipelines")


@dataclasses.dataclass(frozen=True)
class Module:
    """One module under mutation and the tests that check it.

    Attributes:
        path: the source file, relative to the repository.
        tests: pytest paths or node ids of its tests (doctests included).
        pytest_args: extra pytest arguments, e.g. a `-k` deselection.
    """

    path: str
    tests: tuple
    pytest_args: tuple = ()


MODULES = {
    "rest_api": Module(
        "tfnlp/serve/rest_api.py",
        ("tests/serve/test_rest_api.py",),
        # This one loads the exported toy model (seconds a mutant).
        ("-k", "not test_the_plain_signatures_describe_the_toy_model"),
    ),
    "batching": Module(
        "tfnlp/serve/batching.py",
        ("tfnlp/serve/batching.py", "tests/serve/test_batching.py"),
    ),
    "pretraining_instances": Module(
        "pipelines/pretraining_instances.py",
        ("tests/pipelines/test_pretraining_instances.py",),
        # The Gutenberg tests tokenize a book with TensorFlow (6 s a mutant).
        ("-k", "not real_text"),
    ),
    "plain_bert_tokenizer": Module(
        "tfnlp/text/plain_bert_tokenizer.py",
        ("tfnlp/text/plain_bert_tokenizer.py", "tests/text/test_plain_bert_tokenizer.py"),
    ),
}

# mutmut's result names, grouped into the table's columns.
KILLED = {"killed", "caught by type check"}
SURVIVED = {"survived"}


def mutmut_configuration(module):
    """The [mutmut] section of setup.cfg for one module (lists one per line)."""

    def lines(values):
        return "".join(f"\n    {value}" for value in values)

    return (
        "[mutmut]\n"
        f"source_paths ={lines(SOURCE_PACKAGES)}\n"
        f"only_mutate ={lines([module.path])}\n"
        f"pytest_add_cli_args_test_selection ={lines(module.tests)}\n"
        f"pytest_add_cli_args ={lines(['-p', 'no:cacheprovider', *module.pytest_args])}\n"
        f"also_copy ={lines(['pytest.ini'])}\n"
        # A fork server keeps mutmut's own process free of TensorFlow,
        # which the serving tests' fixtures import and which is not fork-safe.
        "process_isolation = forkserver\n"
        # A mutant that hangs (a batcher worker that never answers) is stopped
        # after 2 x (its tests' time + 3 s), not mutmut's 15 x (time + 1 s).
        "timeout_multiplier = 2\n"
        "timeout_constant = 3\n"
    )


def make_work_copy(module, work_directory):
    """Copies the sources, the tests and pytest.ini, and writes setup.cfg."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in (*SOURCE_PACKAGES, "tests"):
        shutil.copytree(REPOSITORY / name, work_directory / name, ignore=ignore)
    shutil.copy2(REPOSITORY / "pytest.ini", work_directory / "pytest.ini")
    (work_directory / "setup.cfg").write_text(mutmut_configuration(module), encoding="utf-8")


def run_mutmut(work_directory, *arguments, capture=True):
    """Runs `python -m mutmut ARGUMENTS` in the work copy; returns its stdout.

    The command gets a process group of its own, so that on an interruption
    it is ended with the workers it forked, before the copy is removed.
    """
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    environment.setdefault("TFNLP_DATA_DIR", str(REPOSITORY.parent / "shared" / "data"))
    process = subprocess.Popen(
        [sys.executable, "-m", "mutmut", *arguments],
        cwd=work_directory,
        env=environment,
        stdout=subprocess.PIPE if capture else None,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0:
        raise RuntimeError(f"mutmut {' '.join(arguments)} failed (exit {process.returncode}).")
    return output


def mutate_module(name, module):
    """Runs mutmut on one module; returns its figures and surviving diffs."""
    missing = [test for test in module.tests if not (REPOSITORY / test.split("::")[0]).exists()]
    if missing:
        raise FileNotFoundError(f"Tests of {name} not found: {missing}")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"tfnlp-mutation-{name}-") as directory:
        work_directory = pathlib.Path(directory)
        make_work_copy(module, work_directory)
        run_mutmut(work_directory, "run", "--max-children", "1", capture=False)
        listing = run_mutmut(work_directory, "results", "--all", "true")
        statuses = dict(re.findall(r"^\s+(\S+): (.+)$", listing, flags=re.MULTILINE))
        survivors = {
            mutant: run_mutmut(work_directory, "show", mutant)
            for mutant, status in sorted(statuses.items())
            if status in SURVIVED
        }
    killed = sum(status in KILLED for status in statuses.values())
    other = {}
    for status in statuses.values():
        if status not in KILLED | SURVIVED:
            other[status] = other.get(status, 0) + 1
    return {
        "module": module.path,
        "tests": list(module.tests),
        "pytest_args": list(module.pytest_args),
        "mutants": len(statuses),
        "killed": killed,
        "survived": len(survivors),
        "other": other,
        "killed_share": round(100 * killed / len(statuses), 1) if statuses else None,
        "minutes": round((time.monotonic() - start) / 60, 1),
        "statuses": statuses,
        "surviving_mutants": survivors,
    }


def print_table(results):
    header = ("module", "mutants", "killed", "survived", "timeouts/other", "killed %", "minutes")
    rows = [
        (
            name,
            result["mutants"],
            result["killed"],
            result["survived"],
            sum(result["other"].values()),
            result["killed_share"],
            result["minutes"],
        )
        for name, result in results.items()
    ]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(str(cell).rjust(width) for cell, width in zip(row, widths)))


def raise_keyboard_interrupt(signal_number, frame):
    """Turns SIGTERM into KeyboardInterrupt, so that the copy is cleaned up."""
    raise KeyboardInterrupt


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="a module to mutate (repeatable; default: all)")
    parser.add_argument("--tests", nargs="+",
                        help="pytest paths or node ids to use instead of the "
                             "module's own tests (with one --module)")
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT,
                        help="the JSON file to write")
    arguments = parser.parse_args()
    names = arguments.module or sorted(MODULES)
    if arguments.tests and len(names) != 1:
        parser.error("--tests needs exactly one --module")
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    results = {}
    try:
        for name in names:
            module = MODULES[name]
            if arguments.tests:
                module = dataclasses.replace(module, tests=tuple(arguments.tests))
            print(f"== {name}: mutating {module.path} against {' '.join(module.tests)}",
                  flush=True)
            results[name] = mutate_module(name, module)
    except KeyboardInterrupt:
        sys.exit("Interrupted; the temporary copy was removed, nothing was written.")
    print_table(results)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"Wrote {arguments.output}")


if __name__ == "__main__":
    main()
