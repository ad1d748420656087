"""A long fuzzing run: tfnlp's two BERT tokenizers against the original.

    python -m benchmarks.fuzz_tokenizers [--max_examples=20000
        --hostile_max_examples=2000 --property="unicode text" --seed=0]

Checks, with Hypothesis, that the in-graph `BertTokenizer`, the plain-Python
`PlainBertTokenizer` and the reference re-statement of google-research/bert
(tests/text/reference_bert_tokenizer.py) give the same ids, on the
properties of tests/text/tokenizer_properties.py: arbitrary Unicode text and
arbitrary bytes (a batch of up to 16 strings per example, over a small fixed
vocabulary, cased and uncased), and hostile vocabulary files (tokens listed
twice, whitespace inside tokens, blank lines, "\\r\\n"), drawn with text
from their own alphabet. The suite runs the same properties on a few dozen
derandomized examples (tests/text/test_tokenizer_fuzzing.py); this draws
`--max_examples` fresh ones per property (`--hostile_max_examples` for the
hostile vocabularies, each of which builds three tokenizers), from
`--seed` when given.

Prints a table (property, examples checked, failures, seconds) and writes
JSON (default benchmarks/results/fuzz_tokenizers.json). Hypothesis stops a
property at its first disagreement and shrinks it, so failures is 0 or 1;
the examples column counts every example checked, shrinking included. On a
disagreement it prints the minimal counterexample and exits with status 1.
With the defaults it takes about 20 minutes on two busy cores.
"""

import argparse
import platform
import sys
import time
import traceback

import hypothesis
import tensorflow as tf
import tensorflow_text as tf_text

from benchmarks.reporting import write_report
from tests.text.tokenizer_properties import PROPERTIES, run_property


def fuzz(name, max_examples, seed):
    """Runs one property; returns its row of the table and the failure's
    text (None when the tokenizers agreed on every example)."""
    examples = 0

    def count():
        nonlocal examples
        examples += 1

    start = time.perf_counter()
    failure = None
    try:
        # The fixed vocabularies serve every example: a traced tokenize
        # pays off. A hostile vocabulary serves one.
        run_property(name, max_examples, derandomize=False, seed=seed,
                     compiled=name != "hostile vocabulary", on_example=count)
    except AssertionError as error:
        failure = "".join(traceback.format_exception_only(error))
    seconds = time.perf_counter() - start
    row = {
        "property": name,
        "max_examples": max_examples,
        "examples": examples,
        "failures": int(failure is not None),
        "seconds": round(seconds, 2),
    }
    return row, failure


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max_examples", type=int, default=20000,
                        help="examples per property of text or bytes")
    parser.add_argument("--hostile_max_examples", type=int, default=2000,
                        help="examples of the hostile-vocabulary property")
    parser.add_argument("--property", action="append", choices=sorted(PROPERTIES),
                        help="run only this property (repeatable); default: all")
    parser.add_argument("--seed", type=int, default=None,
                        help="Hypothesis seed, to repeat a run; default: random")
    parser.add_argument("--output", default="benchmarks/results/fuzz_tokenizers.json")
    args = parser.parse_args(argv)

    rows, failures = [], {}
    for name in args.property or sorted(PROPERTIES):
        max_examples = (
            args.hostile_max_examples if name == "hostile vocabulary" else args.max_examples
        )
        row, failure = fuzz(name, max_examples, args.seed)
        rows.append(row)
        if failure is not None:
            failures[name] = failure

    print(f"{'property':20} {'examples':>9} {'failures':>9} {'seconds':>9}")
    for row in rows:
        print(f"{row['property']:20} {row['examples']:9d} {row['failures']:9d} "
              f"{row['seconds']:9.1f}")
    for name, failure in failures.items():
        print(f"\n{name}: the tokenizers disagree; minimal counterexample:\n{failure}")
    write_report({
        "benchmark": "fuzz_tokenizers",
        "seed": args.seed,
        "rows": rows,
        "counterexamples": failures,
        "versions": {
            "python": platform.python_version(),
            "tensorflow": tf.__version__,
            "tensorflow_text": tf_text.__version__,
            "hypothesis": hypothesis.__version__,
        },
    }, args.output)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
