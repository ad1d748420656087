"""The JSON formats, without HTTP: requests to arrays, arrays to responses."""

import base64
import json

import numpy as np
import pytest

from tfnlp.serve.rest_api import (
    RequestError,
    format_predict_response,
    json_bytes,
    parse_json_object,
    parse_predict_request,
)


@pytest.fixture(scope="module")
def signatures(model_store):
    return model_store.get("toy", 1).signatures


def parse(request, signatures):
    return parse_predict_request(request, signatures, max_string_bytes=10)


def test_row_format_with_a_single_input_takes_plain_values(signatures):
    request = parse({"instances": ["ab", {"b64": base64.b64encode(b"\xff").decode()}]},
                    signatures)
    assert request.signature.name == "serving_default"
    assert request.row_format and request.batch_size == 2
    assert request.inputs["text"].tolist() == [b"ab", b"\xff"]


def test_row_format_with_named_inputs_stacks_every_input(signatures):
    request = parse({"signature_name": "weighted_sum", "instances": [
        {"ids": [1, 2], "scale": 1}, {"ids": [3, 4], "scale": 0.5}]}, signatures)
    assert request.inputs["ids"].dtype == np.int32
    assert request.inputs["ids"].tolist() == [[1, 2], [3, 4]]
    assert request.inputs["scale"].dtype == np.float32
    assert request.inputs["scale"].tolist() == [1.0, 0.5]


def test_columnar_format_takes_a_value_or_an_object_of_inputs(signatures):
    single = parse({"inputs": ["a", "b"]}, signatures)
    named = parse({"inputs": {"text": ["a", "b"]}}, signatures)
    assert not single.row_format
    assert single.inputs["text"].tolist() == named.inputs["text"].tolist() == [b"a", b"b"]


@pytest.mark.parametrize("request_object, message", [
    ({"instances": [1]}, r"'text' has a number \(1\) where text"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": ["x"], "scale": 1.0}]},
     r"'ids' has a string .* an integer is expected \(dtype int32\)"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [1.5], "scale": 1.0}]},
     r"'ids' has a number \(1\.5\) where an integer"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [2**40], "scale": 1.0}]},
     r"outside the range of int32"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [1], "scale": True}]},
     r"'scale' has a boolean .* a number is expected"),
    ({"instances": [{"b64": "not base64!"}]}, r"not valid base64"),
    ({"instances": ["x" * 11]}, r"Over-long text in input 'text': 11 bytes.*--max_string_bytes=10"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [[1]], "scale": 1.0}]},
     r"'ids' has shape \[1, 1, 1\], but signature 'weighted_sum' expects \[-1, -1\]"),
    ({"signature_name": "weighted_sum", "inputs": [[1]]}, r"must be an object with all of them"),
    ({"instances": ["a", {"text": "b"}]}, r"mixes objects and plain values"),
])
def test_wrong_values_are_rejected_with_what_was_expected(signatures, request_object, message):
    with pytest.raises(RequestError, match=message):
        parse(request_object, signatures)


def test_body_must_be_a_json_object():
    assert parse_json_object(b'{"inputs": []}') == {"inputs": []}
    with pytest.raises(RequestError, match="not valid JSON"):
        parse_json_object(b"\xff{")
    with pytest.raises(RequestError, match="JSON list, not an object"):
        parse_json_object(b"[1]")


def test_responses_of_both_formats(signatures):
    outputs = {"length": np.array([2, 3], np.int32),
               "upper": np.array([b"AB", b"\xc3"], object),
               "text_bytes": np.array([b"ab", b"abc"], object)}
    rows = parse({"instances": ["ab", "abc"]}, signatures)
    assert written(format_predict_response(outputs, rows)) == {"predictions": [
        {"length": 2, "upper": "AB", "text_bytes": {"b64": "YWI="}},
        {"length": 3, "upper": {"b64": "ww=="}, "text_bytes": {"b64": "YWJj"}},
    ]}
    columns = parse({"inputs": ["ab", "abc"]}, signatures)
    assert written(format_predict_response(
        {"sum": np.array([0.1, 2.5], np.float32), "count": np.array(7, np.int64)}, columns)) == {
        "outputs": {"sum": [0.1, 2.5], "count": 7}}
    assert json_bytes({"x": np.array([0.1], np.float32)}) == b'{"x":[0.1]}'


def written(response):
    """The response as a client reads it."""
    return json.loads(json_bytes(response))
