"""Runs a Hypothesis property outside pytest's own collection, so that the
suite (a bounded, derandomized run) and the fuzzing benchmarks (long, fresh
runs) share the properties of tests/text/tokenizer_properties.py and
tests/serve/rest_api_properties.py."""

import hypothesis
from hypothesis import HealthCheck, given, settings


def run_property(check, arguments, max_examples, derandomize, seed=None, on_example=None):
    """Checks `check(*example)` on up to `max_examples` drawn examples.

    Args:
        check: a function that raises on a counterexample.
        arguments: the Hypothesis strategy of the tuple of its arguments.
        max_examples: how many examples Hypothesis draws (at most).
        derandomize: draw the same examples on every run.
        seed: the Hypothesis seed (None: a random one, or the derandomized
            one).
        on_example: called with no arguments before each example is
            checked (shrinking included), to count them.

    Raises:
        Whatever `check` raised on the minimal counterexample Hypothesis
        shrank it to (the error's notes show the example).
    """

    def checked(example):
        if on_example is not None:
            on_example()
        check(*example)

    test = settings(
        max_examples=max_examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(given(arguments)(checked))
    if seed is not None:
        test = hypothesis.seed(seed)(test)
    test()
