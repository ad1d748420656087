"""Runs the benchmark suite and writes benchmarks/RESULTS.md.

    python -m benchmarks                      # every benchmark, about an hour
    python -m benchmarks serving decoding     # some of them, by name
    python -m benchmarks --quick decoding     # a smoke run (not a measurement)
    python -m benchmarks --list               # the names, with their times

Each benchmark runs in its own process, one after another (the figures of
benchmarks running side by side would measure each other). Its JSON report
goes to benchmarks/results/NAME.json, its output to
benchmarks/results/logs/NAME.log, and its figures to its section of
benchmarks/RESULTS.md (see `benchmarks.suite`). A benchmark that fails is
reported there with the end of its log, and the others still run; the exit
status is 1 if any failed.
"""

import sys

from benchmarks import suite
from benchmarks.reporting import from_root
from tfnlp.command_line import ArgumentParser, run_main


def parse_arguments(argv=None):
    parser = ArgumentParser(prog="python -m benchmarks",
                            description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="Benchmarks to run (default: all; see --list).")
    parser.add_argument("--quick", action="store_true",
                        help="Smoke-run sizes: checks that each runs, measures nothing.")
    parser.add_argument("--list", action="store_true",
                        help="List the benchmarks and their times, run nothing.")
    parser.add_argument("--results_file", default=suite.RESULTS_FILE,
                        help="The markdown file of results (from the repository root).")
    parser.add_argument("--reports_dir", default=suite.REPORTS_DIR,
                        help="Where each benchmark's JSON report and log go.")
    flags = parser.parse_args(argv)
    unknown = [name for name in flags.names if name not in suite.BENCHMARKS]
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}; the benchmarks are "
                     f"{', '.join(suite.BENCHMARKS)}")
    return flags


def list_benchmarks():
    width = max(map(len, suite.BENCHMARKS))
    for benchmark in suite.BENCHMARKS.values():
        data = " (shared data)" if benchmark.needs_data else ""
        print(f"{benchmark.name:<{width}}  {benchmark.minutes:>3g} min  "
              f"{benchmark.summary}{data}")
    total = sum(benchmark.minutes for benchmark in suite.BENCHMARKS.values())
    print(f"{'all':<{width}}  {total:>3g} min")


def main(argv=None):
    flags = parse_arguments(argv)
    if flags.list:
        list_benchmarks()
        return 0
    names = flags.names or list(suite.BENCHMARKS)
    size = "quick" if flags.quick else "hour"
    reports_dir = from_root(flags.reports_dir)
    outcomes = suite.run_suite(names, size, from_root(flags.results_file), reports_dir,
                               f"{reports_dir}/logs")
    failed = [outcome.benchmark.name for outcome in outcomes if outcome.status == "failed"]
    skipped = [outcome.benchmark.name for outcome in outcomes if outcome.status == "skipped"]
    print(f"Wrote {from_root(flags.results_file)}: {len(outcomes) - len(failed) - len(skipped)} "
          f"ran, {len(failed)} failed{' (' + ', '.join(failed) + ')' if failed else ''}, "
          f"{len(skipped)} skipped{' (' + ', '.join(skipped) + ')' if skipped else ''}.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
