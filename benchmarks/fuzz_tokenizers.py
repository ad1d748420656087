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
JSON (`--output`, default benchmarks/results/fuzz_tokenizers.json) whose
"figures" are the examples checked and the failures, over all properties.
Hypothesis stops a property at its first disagreement and shrinks it, so
failures is 0 or 1 per property; the examples column counts every example
checked, shrinking included. On a disagreement it prints the minimal
counterexample and exits with status 1. With the defaults it takes about
20 minutes on two busy cores; `--max_examples=2000
--hostile_max_examples=200` about 3 minutes, `--max_examples=200
--hostile_max_examples=20` under half a minute.
"""

import argparse
import sys

import tensorflow as tf
import tensorflow_text as tf_text

from benchmarks.fuzzing import fuzz_all, report
from tests.text.tokenizer_properties import PROPERTIES, run_property


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

    names = args.property or sorted(PROPERTIES)
    # The fixed vocabularies serve every example: a traced tokenize pays
    # off. A hostile vocabulary serves one.
    rows, failures = fuzz_all(run_property, {
        name: args.hostile_max_examples if name == "hostile vocabulary" else args.max_examples
        for name in names}, args.seed,
        {name: {"compiled": name != "hostile vocabulary"} for name in names})
    return report("fuzz_tokenizers", rows, failures, args.seed,
                  {"tensorflow": tf.__version__, "tensorflow_text": tf_text.__version__},
                  args.output)


if __name__ == "__main__":
    sys.exit(main())
