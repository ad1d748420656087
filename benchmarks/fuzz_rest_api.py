"""A long fuzzing run of the REST server: no request gets a server error.

    python -m benchmarks.fuzz_rest_api [--max_examples=20000
        --http_max_examples=2000 --property="request objects" --seed=0]

Checks, with Hypothesis, the properties of tests/serve/rest_api_properties.py:
arbitrary JSON request objects parsed against signatures of every dtype and
shape, arbitrary request bodies (bytes, nesting thousands deep, integers of
thousands of digits), and arbitrary HTTP requests (methods, paths,
Content-Length headers, bodies) sent to a server of the toy model, get a
client error (4xx) or an answer, never a server error, and the server keeps
serving. The suite runs the same properties on a few hundred derandomized
examples (tests/serve/test_rest_api_fuzzing.py); this draws
`--max_examples` fresh ones per property (`--http_max_examples` for the
HTTP requests, each a connection to the server), from `--seed` when given.

Prints a table (property, examples checked, failures, seconds) and writes
JSON (`--output`, default benchmarks/results/fuzz_rest_api.json) whose
"figures" are the examples checked and the failures, over all properties.
Hypothesis stops a property at its first failure and shrinks it, so
failures is 0 or 1 per property; the examples column counts every example
checked, shrinking included. On a failure it prints the minimal
counterexample and exits with status 1. With the defaults it takes about 6
minutes on 2 cores, with `--max_examples=200 --http_max_examples=20` about
20 seconds.
"""

import argparse
import sys

import tensorflow as tf

from benchmarks.fuzzing import fuzz_all, report
from tests.serve.rest_api_properties import PROPERTIES, run_property


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max_examples", type=int, default=20000,
                        help="examples per property of request objects or bodies")
    parser.add_argument("--http_max_examples", type=int, default=2000,
                        help="examples of the HTTP-request property")
    parser.add_argument("--property", action="append", choices=sorted(PROPERTIES),
                        help="run only this property (repeatable); default: all")
    parser.add_argument("--seed", type=int, default=None,
                        help="Hypothesis seed, to repeat a run; default: random")
    parser.add_argument("--output", default="benchmarks/results/fuzz_rest_api.json")
    args = parser.parse_args(argv)

    names = args.property or sorted(PROPERTIES)
    rows, failures = fuzz_all(run_property, {
        name: args.http_max_examples if name == "http requests" else args.max_examples
        for name in names}, args.seed)
    return report("fuzz_rest_api", rows, failures, args.seed,
                  {"tensorflow": tf.__version__}, args.output)


if __name__ == "__main__":
    sys.exit(main())
