"""Runs a Hypothesis property outside pytest's own collection: the
properties of tests/text/tokenizer_properties.py and
tests/serve/rest_api_properties.py are named, so that one parametrized test
runs each with its own number of examples."""

from hypothesis import HealthCheck, given, settings


def run_property(check, arguments, max_examples, derandomize):
    """Checks `check(*example)` on up to `max_examples` drawn examples.

    Args:
        check: a function that raises on a counterexample.
        arguments: the Hypothesis strategy of the tuple of its arguments.
        max_examples: how many examples Hypothesis draws (at most).
        derandomize: draw the same examples on every run.

    Raises:
        Whatever `check` raised on the minimal counterexample Hypothesis
        shrank it to (the error's notes show the example).
    """

    def checked(example):
        check(*example)

    test = settings(
        max_examples=max_examples,
        derandomize=derandomize,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(given(arguments)(checked))
    test()
