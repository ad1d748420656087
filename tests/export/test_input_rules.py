"""`InputRules.violation`: each range bound holds at its limit, or just
inside it for the strict ones, and is broken one step past it."""

import numpy as np
import pytest

from tfnlp.export.input_rules import InputRules


@pytest.mark.parametrize("bound, limit, inside, outside", [
    ("above", 0, [1e-6], [0, -1e-6]),
    ("at_least", 1, [1, 2], [0]),
    ("below", 1, [1 - 1e-6], [1, 2]),
    ("at_most", 1, [1, 0.5], [1 + 1e-6]),
])
def test_each_bound_at_its_limit_and_one_step_past_it(bound, limit, inside, outside):
    rules = InputRules(ranges={"x": {bound: limit}})
    assert rules.violation("x", np.array(inside)) is None
    for value in outside:
        message = rules.violation("x", np.array([*inside, value]))
        assert message is not None and message.startswith(f"x={value}")

