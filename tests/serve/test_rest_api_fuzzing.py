"""Property tests: arbitrary request objects, bodies and HTTP requests get
a client error (4xx) or an answer, never a server error (the properties are
in tests/serve/rest_api_properties.py).

The examples are derandomized, so every run checks the same ones in a few
seconds.
"""

import pytest

from tests.serve.rest_api_properties import PROPERTIES, run_property

MAX_EXAMPLES = {"request objects": 300, "request bodies": 150, "http requests": 40}


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_no_drawn_request_gets_a_server_error(name):
    run_property(name, MAX_EXAMPLES[name], derandomize=True)
