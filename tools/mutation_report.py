"""Mutation testing of tfnlp's modules, with a kill-rate table.

    python -m tools.mutation_report [--module NAME ...] [--tests PATH ...]
        [--sample FRACTION] [--output tools/results/mutation_report.json]

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

`--sample 0.1` runs a tenth of each module's mutants, the same tenth on
every run of the same source: a mutant is in the sample when a hash of its
name (its function and its number there) falls below the fraction, so a
before-and-after comparison of two test suites sees the same mutants. The
table then gives the sampled count beside the total and the killed share of
the sample. Sampling is how the modules whose tests run TensorFlow models
(seconds a mutant) are measured in a sitting: a random sample estimates
the killed share without bias, to within about +/-10 points at 100 mutants.

A mutant in a function that no selected test calls in pytest's own process
is "no tests" (counted with the others, not killed): a test that runs the
code in a subprocess, as the end-to-end trainer tests do, checks it, but
mutmut cannot see it and cannot mutate it there.

The test selection of each pure-Python module is its fast, TensorFlow-free
tests and the module's doctests. The tests on real text that need TensorFlow
(`tests/text/test_bert_tokenizer_parity.py`, the Gutenberg tests of the
pretraining instances) take seconds per mutant and are left out; `--tests`
runs a module against other tests (pytest node ids) instead.
"""

import argparse
import dataclasses
import hashlib
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
# What the tests import: the packages are copied, only the module's files are mutated.
SOURCE_PACKAGES = ("tfnlp", "pipelines", "trainer")


@dataclasses.dataclass(frozen=True)
class Module:
    """One module under mutation and the tests that check it.

    Attributes:
        path: the source file, relative to the repository, or a folder's
            files as mutmut's glob (`tfnlp/decoding/*`).
        tests: pytest paths or node ids of its tests (doctests included).
        pytest_args: extra pytest arguments, e.g. a `-k` deselection.
        timeout_seconds: added to a mutant's expected test time before its
            CPU-time limit (2 x 2 x (expected + this)) is set. A module
            fixture's cost is counted in the first test that uses it, so a
            mutant that runs a later test alone pays it unbudgeted: the
            modules whose fixtures train or export a model need a minute.
        preload_tests: whether mutmut's fork server imports the tests
            before it forks a process per mutant (faster). Not for tests
            that import TensorFlow: a process forked after TensorFlow has
            run an op can hang on its first op, which mutmut reports as a
            timeout (seen: 7 of 14 decoding mutants, which survive when
            each process imports TensorFlow itself).
    """

    path: str
    tests: tuple
    pytest_args: tuple = ()
    timeout_seconds: int = 3
    preload_tests: bool = True


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
    # The translation path: TensorFlow models in every test, so these are
    # measured with --sample.
    "decoding": Module("tfnlp/decoding/*", ("tfnlp/decoding", "tests/decoding"),
                       timeout_seconds=30, preload_tests=False),
    "seq2seq": Module("tfnlp/models/seq2seq/*",
                      ("tfnlp/models/seq2seq", "tests/models/seq2seq"), timeout_seconds=30,
                      preload_tests=False),
    "translation_eval": Module(
        "trainer/translation_eval.py",
        ("trainer/translation_eval.py", "tests/trainer/test_translation_eval.py",
         "tests/trainer/test_translate.py", "tests/trainer/test_translate_rnn.py"),
        timeout_seconds=120,
        preload_tests=False,
    ),
    "translation_models": Module(
        "trainer/tasks/translation.py",
        ("trainer/tasks/translation.py", "tests/trainer/test_translation_models.py",
         "tests/trainer/test_translate.py", "tests/trainer/test_translate_rnn.py",
         "tests/serve/test_translation_serving.py"),
        timeout_seconds=120,
        preload_tests=False,
    ),
    "translation_signatures": Module(
        "tfnlp/export/translation_signatures.py",
        ("tfnlp/export/translation_signatures.py", "tests/export/test_translation_signatures.py",
         "tests/serve/test_translation_serving.py"),
        timeout_seconds=120,
        preload_tests=False,
    ),
}

# A mutant name that matches none: `mutmut run` with it generates the
# mutants and collects which tests call each function, then stops.
NO_MUTANT = "no.mutant.matches.this"

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
        f"forkserver_warmup = {'collect' if module.preload_tests else 'none'}\n"
        # A mutant that hangs (a batcher worker that never answers) is stopped
        # after 2 x (its tests' time + timeout_seconds), not mutmut's
        # 15 x (time + 1 s).
        "timeout_multiplier = 2\n"
        f"timeout_constant = {module.timeout_seconds}\n"
    )


def make_work_copy(module, work_directory):
    """Copies the sources, the tests and pytest.ini, and writes setup.cfg."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in (*SOURCE_PACKAGES, "tests"):
        shutil.copytree(REPOSITORY / name, work_directory / name, ignore=ignore)
    shutil.copy2(REPOSITORY / "pytest.ini", work_directory / "pytest.ini")
    (work_directory / "setup.cfg").write_text(mutmut_configuration(module), encoding="utf-8")


def run_mutmut(work_directory, *arguments, capture=True, check=True):
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
    if check and process.returncode != 0:
        raise RuntimeError(f"mutmut {' '.join(arguments)} failed (exit {process.returncode}).")
    return output


def in_sample(mutant, fraction):
    """Whether `mutant` (a mutmut name) is in the sample of `fraction`:
    the same answer on every run, whatever the other mutants."""
    digest = hashlib.sha256(mutant.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") < fraction * 2**64


def statuses_of(work_directory):
    """`{mutant: status}` of every mutant mutmut generated."""
    listing = run_mutmut(work_directory, "results", "--all", "true")
    return dict(re.findall(r"^\s+(\S+): (.+)$", listing, flags=re.MULTILINE))


def run_sample(work_directory, fraction):
    """Generates the mutants and runs those in the sample of `fraction`;
    returns `(statuses of the sample, number generated)`."""
    run_mutmut(work_directory, "run", "--max-children", "1", NO_MUTANT, check=False)
    generated = statuses_of(work_directory)
    sample = sorted(mutant for mutant in generated if in_sample(mutant, fraction))
    if not generated or not sample:
        raise RuntimeError(
            f"mutmut generated {len(generated)} mutants and none is in a sample of "
            f"{fraction}; give a larger --sample."
        )
    print(f"   running {len(sample)} of {len(generated)} mutants", flush=True)
    run_mutmut(work_directory, "run", "--max-children", "1", *sample, capture=False)
    statuses = statuses_of(work_directory)
    return {mutant: statuses[mutant] for mutant in sample}, len(generated)


def mutate_module(name, module, fraction=1.0):
    """Runs mutmut on one module (on a sample of `fraction` of its
    mutants); returns its figures and surviving diffs."""
    missing = [test for test in module.tests if not (REPOSITORY / test.split("::")[0]).exists()]
    if missing:
        raise FileNotFoundError(f"Tests of {name} not found: {missing}")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"tfnlp-mutation-{name}-") as directory:
        work_directory = pathlib.Path(directory)
        make_work_copy(module, work_directory)
        if fraction < 1:
            statuses, generated = run_sample(work_directory, fraction)
        else:
            run_mutmut(work_directory, "run", "--max-children", "1", capture=False)
            statuses = statuses_of(work_directory)
            generated = len(statuses)
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
        "mutants": generated,
        "sampled": len(statuses),
        "sample_fraction": fraction,
        "killed": killed,
        "survived": len(survivors),
        "other": other,
        "killed_share": round(100 * killed / len(statuses), 1) if statuses else None,
        "minutes": round((time.monotonic() - start) / 60, 1),
        "statuses": statuses,
        "surviving_mutants": survivors,
    }


def print_table(results):
    header = ("module", "mutants", "sampled", "killed", "survived", "timeouts/other",
              "killed %", "minutes")
    rows = [
        (
            name,
            result["mutants"],
            result.get("sampled", result["mutants"]),
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
    parser.add_argument("--sample", type=float, default=1.0,
                        help="the fraction of each module's mutants to run, chosen by a "
                             "hash of their names (default: 1, all)")
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT,
                        help="the JSON file to write")
    arguments = parser.parse_args()
    names = arguments.module or sorted(MODULES)
    if arguments.tests and len(names) != 1:
        parser.error("--tests needs exactly one --module")
    if not 0 < arguments.sample <= 1:
        parser.error(f"--sample={arguments.sample}: give a fraction in (0, 1].")
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    results = {}
    try:
        for name in names:
            module = MODULES[name]
            if arguments.tests:
                module = dataclasses.replace(module, tests=tuple(arguments.tests))
            print(f"== {name}: mutating {module.path} against {' '.join(module.tests)}",
                  flush=True)
            results[name] = mutate_module(name, module, arguments.sample)
    except KeyboardInterrupt:
        sys.exit("Interrupted; the temporary copy was removed, nothing was written.")
    print_table(results)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"Wrote {arguments.output}")


if __name__ == "__main__":
    main()
