"""Property-based checks that no request can make the REST server fail with
anything but a client error, run by tests/serve/test_rest_api_fuzzing.py.

- "request objects": arbitrary JSON objects, most of them shaped like
  predict requests (a known or arbitrary "signature_name", "instances" or
  "inputs" holding arbitrary JSON: unpaired surrogates, integers of
  hundreds of digits, NaN and infinities, deep lists, objects, "b64"
  objects), parsed against plain signatures of every dtype and shape
  (tests/serve/plain_signatures.py). Parsing either gives a request whose
  arrays have the signature's dtypes, one leading row per instance, or
  raises `RequestError` with a 4xx status; the response to it (made from
  fake outputs, one row per instance) and every error body can be written
  as JSON.
- "request bodies": arbitrary bytes, and the UTF-8 of arbitrary JSON text
  (nesting thousands deep, integers of thousands of digits), as a request
  body: `parse_json_object` gives a JSON object or raises `RequestError`.
- "http requests": arbitrary methods, paths, Content-Length headers and
  bodies sent to a server of the toy model (tests/serve/toy_models.py):
  every answer is an HTTP response with a client error's status, a success,
  or 501 or 505 (an unsupported method, API or HTTP version), never 500 or
  none at all, and the server keeps answering a good request.
"""

import functools
import http.client
import json
import socket
import tempfile

import numpy as np
from hypothesis import strategies as st

from tests import property_runs
from tests.serve.plain_signatures import OTHER_SIGNATURES, SIGNATURES
from tfnlp.serve.rest_api import (
    RequestError,
    error_body,
    format_predict_response,
    json_bytes,
    parse_json_object,
    parse_predict_request,
)

ALL_SIGNATURES = {**SIGNATURES, **OTHER_SIGNATURES}
MAX_STRING_BYTES = 64
MAX_INSTANCES = 20

# Text with unpaired surrogates, which JSON's \ud800 escapes can carry.
texts = st.text(st.characters(exclude_categories=()), max_size=20)
scalars = (
    st.none() | st.booleans() | texts
    | st.integers() | st.integers(min_value=-10**300, max_value=10**300)
    | st.sampled_from([2**31, -2**31 - 1, 2**63, 10**40])
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e39, -3.5e38])
    | st.builds(lambda text: {"b64": text}, texts | st.sampled_from(["YWI=", "////"]))
)
json_values = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=6)
                      | st.dictionaries(texts | st.sampled_from(["text", "ids", "scale", "b64"]),
                                        children, max_size=4)),
    max_leaves=40,
)


def nested(depth, leaf):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


deep_values = st.builds(nested, st.integers(0, 200), scalars)
signature_names = st.sampled_from(sorted(ALL_SIGNATURES)) | texts | json_values
request_objects = st.one_of(
    st.dictionaries(texts, json_values, max_size=4),
    st.fixed_dictionaries(
        {"instances": st.lists(json_values | deep_values, min_size=0, max_size=8)},
        optional={"signature_name": signature_names}),
    st.fixed_dictionaries(
        {"inputs": json_values | deep_values},
        optional={"signature_name": signature_names}),
    st.fixed_dictionaries({"instances": json_values, "inputs": json_values}),
)


def check_request_object(request):
    """Parsing `request` gives a consistent request or a 4xx RequestError."""
    try:
        parsed = parse_predict_request(request, ALL_SIGNATURES, MAX_STRING_BYTES, MAX_INSTANCES)
    except RequestError as error:
        assert 400 <= error.status < 500, error.status
        json_bytes(error_body(error.message))
        return
    results = []
    for part in parsed.parts:
        for key, array in part.inputs.items():
            assert array.dtype == parsed.signature.inputs[key].numpy_dtype
            assert not array.ndim or array.shape[0] == len(part.rows)
        results.append((part.rows, {"row": np.arange(len(part.rows)),
                                    "score": np.full(len(part.rows), np.nan)}))
    assert sorted(np.concatenate([part.rows for part in parsed.parts])) == list(
        range(parsed.batch_size))
    json_bytes(format_predict_response(parsed, results))


def check_request_body(body):
    """A body gives a JSON object or a 4xx RequestError."""
    try:
        request = parse_json_object(body)
    except RequestError as error:
        assert 400 <= error.status < 500, error.status
        json_bytes(error_body(error.message))
        return
    assert isinstance(request, dict)
    check_request_object(request)


request_bodies = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda depth: b'{"inputs": ' + b"[" * depth + b"]" * depth + b"}",
              st.integers(0, 20_000)),
    st.builds(lambda digits: b'{"instances": [' + b"7" * digits + b"]}", st.integers(1, 6000)),
    st.builds(lambda value: json.dumps(value).encode("utf-8", "surrogatepass"),
              request_objects),
)


@functools.cache
def toy_server():
    """A server of the toy model, started once per process."""
    from tests.serve.toy_models import export_toy_model
    from tfnlp.serve.http_server import start_server
    from tfnlp.serve.model_store import ModelStore

    export_dir = export_toy_model(tempfile.mkdtemp(prefix="fuzz_rest_api_") + "/toy")
    return start_server(ModelStore(export_dir), max_body_bytes=10_000,
                        max_string_bytes=MAX_STRING_BYTES,
                        max_instances_per_request=MAX_INSTANCES, request_timeout=0.2)


http_methods = st.sampled_from(["GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "BREW",
                                "get", "G ET", ""])
http_paths = st.sampled_from([
    "/v1/models/toy", "/v1/models/toy:predict", "/v1/models/toy/versions/1:predict",
    "/v1/models/toy/versions/0002/metadata", "/v1/models/toy:classify",
    "/v1/models/toy/labels/x", "/", "*", "/v1/models/%ff:predict",
]) | st.text(st.characters(min_codepoint=33, max_codepoint=255), max_size=30)
content_lengths = st.none() | st.integers(0, 300).map(str) | st.sampled_from(
    ["-1", "\u00b2", "1e3", "", " 5 ", "9" * 30, "0x10"])


def check_http_request(method, path, content_length, body):
    """The server answers with a status that is not a server fault, and
    keeps serving."""
    server = toy_server()
    head = f"{method} {path} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n"
    if content_length is not None:
        head += f"Content-Length: {content_length}\r\n"
    data = head.encode("latin-1", "replace") + b"\r\n" + body
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        try:
            connection.sendall(data)
        except OSError:
            pass  # The server answered, and closed, before reading it all.
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1."), answer[:200]
    status = int(status_line.split(b" ")[1])
    assert status < 500 or status in (501, 505), answer[:500]
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("POST", "/v1/models/toy:predict",
                           body=b'{"signature_name": "length", "instances": ["ab"]}')
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b'{"predictions":[1002]}')
    finally:
        connection.close()


# Each property: the function that checks one drawn example, and the
# strategy of its arguments.
PROPERTIES = {
    "request objects": (check_request_object, st.tuples(request_objects)),
    "request bodies": (check_request_body, st.tuples(request_bodies)),
    "http requests": (check_http_request, st.tuples(
        http_methods, http_paths, content_lengths, st.binary(max_size=300) | request_bodies)),
}


def run_property(name, max_examples, derandomize):
    """Runs the property `name` (a key of PROPERTIES) on `max_examples`
    drawn examples; see `tests.property_runs.run_property` for the rest."""
    check, arguments = PROPERTIES[name]
    property_runs.run_property(check, arguments, max_examples, derandomize)
