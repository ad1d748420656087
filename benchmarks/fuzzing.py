"""What the fuzzing benchmarks share: running one property to its end and
the table and JSON report of the runs, whose "figures" are the examples
checked and the properties that failed (without a reference)."""

import platform
import time
import traceback

import hypothesis

from benchmarks.reporting import FIGURES_KEY, figure, write_report


def fuzz(run_property, name, max_examples, seed, **options):
    """Runs one property with `run_property(name, max_examples,
    derandomize=False, seed=seed, on_example=..., **options)`; returns its
    row of the table and the failure's text (None when it held on every
    example)."""
    examples = 0

    def count():
        nonlocal examples
        examples += 1

    start = time.perf_counter()
    failure = None
    try:
        run_property(name, max_examples, derandomize=False, seed=seed, on_example=count,
                     **options)
    except Exception as error:  # The minimal counterexample's failure, whatever it is.
        failure = "".join(traceback.format_exception_only(error))
    row = {
        "property": name,
        "max_examples": max_examples,
        "examples": examples,
        "failures": int(failure is not None),
        "seconds": round(time.perf_counter() - start, 2),
    }
    return row, failure


def fuzz_all(run_property, max_examples, seed, options=None):
    """Runs each property of `max_examples` (a dict from property name to
    its number of examples) with `fuzz`, with `options[name]` if given;
    returns the rows and the failures by property name."""
    rows, failures = [], {}
    for name, examples in max_examples.items():
        row, failure = fuzz(run_property, name, examples, seed, **(options or {}).get(name, {}))
        rows.append(row)
        if failure is not None:
            failures[name] = failure
    return rows, failures


def headline_figures(rows):
    """The examples checked and the properties that failed, over all rows."""
    return [
        figure("examples checked", sum(row["examples"] for row in rows), "examples"),
        figure("failures", sum(row["failures"] for row in rows), "properties",
               higher_is_better=False),
    ]


def report(benchmark, rows, failures, seed, versions, output):
    """Prints the table and the counterexamples, writes the JSON report;
    returns the exit status (1 if a property failed)."""
    print(f"{'property':20} {'examples':>9} {'failures':>9} {'seconds':>9}")
    for row in rows:
        print(f"{row['property']:20} {row['examples']:9d} {row['failures']:9d} "
              f"{row['seconds']:9.1f}")
    for name, failure in failures.items():
        print(f"\n{name}: minimal counterexample:\n{failure}")
    write_report({
        "benchmark": benchmark,
        "seed": seed,
        "rows": rows,
        "counterexamples": failures,
        FIGURES_KEY: headline_figures(rows),
        "versions": {"python": platform.python_version(),
                     "hypothesis": hypothesis.__version__, **versions},
    }, output)
    return 1 if failures else 0
