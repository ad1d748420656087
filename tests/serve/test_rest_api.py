"""The JSON formats, without HTTP: requests to arrays, arrays to responses.

The requests are parsed against plain descriptions of the toy model's
signatures (`SIGNATURES`), so that these tests need no SavedModel and run in
milliseconds (mutation testing runs them hundreds of times);
`test_the_plain_signatures_describe_the_toy_model` checks the descriptions
against the exported toy model.
"""

import base64
import json
import types

import ml_dtypes
import numpy as np
import pytest

from tfnlp.serve.rest_api import (
    RequestError,
    error_body,
    format_predict_response,
    json_bytes,
    parse_json_object,
    parse_predict_request,
)


def plain_signature(name, **inputs):
    """A signature as `rest_api` reads it: its name and, for each input (in
    key order, as `model_store.Signature` has them), the key, the dtype's
    name, the numpy dtype and the shape that `model_store.TensorInfo` gives."""
    return types.SimpleNamespace(name=name, inputs={
        key: types.SimpleNamespace(
            key=key,
            dtype=types.SimpleNamespace(name=dtype_name),
            numpy_dtype=np.dtype(object if dtype_name == "string" else dtype_name),
            shape=shape,
        )
        for key, (dtype_name, shape) in sorted(inputs.items())
    })


# The inputs of the toy model's signatures (tests/serve/toy_models.py).
SIGNATURES = {
    "serving_default": plain_signature("serving_default", text=("string", (None,))),
    "length": plain_signature("length", text=("string", (None,))),
    "weighted_sum": plain_signature(
        "weighted_sum", ids=("int32", (None, None)), scale=("float32", (None,))),
    "total_length": plain_signature("total_length", text=("string", (None,))),
}


def described(signatures):
    """What `rest_api` reads of each signature."""
    return {
        name: [(info.key, info.dtype.name, info.numpy_dtype, info.shape)
               for info in signature.inputs.values()]
        for name, signature in signatures.items()
    }


def test_the_plain_signatures_describe_the_toy_model(model_store):
    assert described(model_store.get("toy", 1).signatures) == described(SIGNATURES)


@pytest.fixture(scope="module")
def signatures():
    return SIGNATURES


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



# Signatures the toy model lacks, for the other dtypes and shapes.
OTHER_SIGNATURES = {
    "flags": plain_signature("flags", flag=("bool", (None,))),
    "complex": plain_signature("complex", z=("complex64", (None,))),
    "pairs": plain_signature("pairs", pair=("int32", (None, 2))),
    "any_rank": plain_signature("any_rank", x=("float32", None)),
}


def rejection(request, signatures=SIGNATURES):
    """The message of the RequestError that parsing `request` raises."""
    with pytest.raises(RequestError) as raised:
        parse(request, signatures)
    return raised.value.message


def test_errors_are_http_400_by_default_with_the_error_body_of_tf_serving():
    error = RequestError("wrong")
    assert (error.message, error.status, error.headers) == ("wrong", 400, {})
    allow = RequestError("use POST", status=405, headers={"Allow": "POST"})
    assert (allow.status, allow.headers) == (405, {"Allow": "POST"})
    assert error_body("wrong") == {"error": "wrong"}


@pytest.mark.parametrize("request_object, which", [
    ({"instances": ["a"], "inputs": ["a"]}, "both"),
    ({"signature_name": "serving_default"}, "neither"),
])
def test_a_request_needs_exactly_one_of_instances_and_inputs(request_object, which):
    assert rejection(request_object) == (
        'A predict request needs exactly one of "instances" (row format) and '
        f'"inputs" (columnar format); this one has {which}. Send e.g. '
        """{"instances": [...]} with the inputs 'text'."""
    )


@pytest.mark.parametrize("name", ["nope", ["serving_default"], None])
def test_an_unknown_signature_name_is_rejected_with_the_names_there_are(name):
    assert rejection({"signature_name": name, "instances": ["a"]}) == (
        f"Signature {name!r} not found; this model version has the signatures "
        "['length', 'serving_default', 'total_length', 'weighted_sum']. Set "
        """"signature_name" to one of them (leaving it out means 'serving_default')."""
    )


@pytest.mark.parametrize("instances, json_type", [
    ("ab", "string"), (3, "number"), (True, "boolean"), (None, "null"),
    ({"text": ["a"]}, "object"),
])
def test_instances_must_be_a_list(instances, json_type):
    assert rejection({"instances": instances}) == (
        f'"instances" is a JSON {json_type}; expected a list with one entry per example.'
    )


@pytest.mark.parametrize("body, json_type", [
    (b'"x"', "string"), (b"1.5", "number"), (b"false", "boolean"), (b"null", "null"),
])
def test_a_body_that_is_not_an_object_is_named_by_its_json_type(body, json_type):
    with pytest.raises(RequestError) as raised:
        parse_json_object(body)
    assert raised.value.message == (
        f"The request body is a JSON {json_type}, not an object. "
        'Send {"instances": [...]} or {"inputs": ...}.'
    )
    with pytest.raises(RequestError, match=r'Send a UTF-8 JSON object such as '
                                           r'\{"instances": \["some text"\]\}\.$'):
        parse_json_object(b"{")


def test_an_empty_batch_is_rejected_in_both_formats():
    assert rejection({"instances": []}) == (
        '"instances" is an empty list (an empty batch). Send at least one instance.'
    )
    assert rejection({"inputs": []}) == (
        "Input 'text' is an empty batch. Send at least one example."
    )


def test_a_batch_of_one_is_accepted_in_both_formats():
    assert parse({"inputs": ["a"]}, SIGNATURES).inputs["text"].tolist() == [b"a"]
    assert parse({"instances": ["a"]}, SIGNATURES).batch_size == 1


def test_plain_instances_need_a_signature_with_a_single_input():
    assert rejection({"signature_name": "weighted_sum", "instances": [1, 2]}) == (
        "Signature 'weighted_sum' has the inputs 'ids', 'scale', so each instance "
        "must be an object with all of them, e.g. {'ids': ..., 'scale': ...}."
    )
    assert rejection({"signature_name": "weighted_sum", "inputs": [[1]]}) == (
        "Signature 'weighted_sum' has the inputs 'ids', 'scale', so \"inputs\" "
        "must be an object with all of them."
    )


@pytest.mark.parametrize("request_object, problems", [
    ({"instances": [{"ids": [1], "scale": 1}, {"ids": [1], "bogus": 1}]},
     "Instance 1 has unknown input(s) ['bogus'] and missing input(s) ['scale']"),
    ({"instances": [{"ids": [1], "scale": 1, "bogus": 1}]},
     "Instance 0 has unknown input(s) ['bogus']"),
    ({"instances": [{"ids": [1]}]}, "Instance 0 has missing input(s) ['scale']"),
    ({"inputs": {"ids": [[1]]}}, "\"inputs\" has missing input(s) ['scale']"),
])
def test_named_inputs_must_be_exactly_the_signatures_inputs(request_object, problems):
    request_object["signature_name"] = "weighted_sum"
    assert rejection(request_object) == (
        f"{problems}. Signature 'weighted_sum' expects exactly the inputs 'ids', 'scale'."
    )


@pytest.mark.parametrize("ids", [[[1, 2], [3]], [[[1], [2, 3]]]])
def test_a_ragged_input_is_rejected_with_the_shapes_it_mixes(ids):
    # Ragged across instances, or deeper inside one value.
    request_object = {"signature_name": "weighted_sum", "inputs": {"ids": ids, "scale": [1]}}
    assert rejection(request_object) == (
        "Input 'ids' is ragged: lists at the same depth have different shapes "
        "[[1], [2]]. Every instance must have the same shape; pad the shorter ones."
    )


def test_instances_mixing_objects_and_plain_values_are_rejected():
    assert rejection({"instances": ["a", {"text": "b"}]}) == (
        "\"instances\" mixes objects and plain values. Use objects with the inputs "
        "'text' for every instance, or plain values for every instance when the "
        "signature has a single input."
    )


def test_b64_values_must_be_strict_base64_strings():
    # RFC 4648 base64: characters outside the alphabet are an error, not
    # skipped ("YW*Jj" would otherwise decode as "abc").
    assert rejection({"instances": [{"b64": "YW*Jj"}]}) == (
        "Input 'text' has a \"b64\" value that is not valid base64. Encode the "
        "bytes with standard base64 (RFC 4648)."
    )
    assert rejection({"instances": [{"b64": 5}]}).endswith(
        """({"b64": 5}) where text (a JSON string) or {"b64": "..."} is expected (dtype string)."""
    )


def test_strings_of_max_string_bytes_are_accepted_and_longer_ones_rejected():
    # The limit counts UTF-8 bytes: "é" is two.
    assert parse({"instances": ["x" * 10, "é" * 5]}, SIGNATURES).inputs["text"].tolist() == [
        b"x" * 10, "é".encode() * 5]
    assert rejection({"instances": ["é" * 6]}) == (
        "Over-long text in input 'text': 12 bytes, more than the server's "
        "--max_string_bytes=10. Shorten or split the text; the model only reads "
        "up to its sequence length anyway."
    )


def test_integers_at_the_limits_of_their_dtype_are_accepted():
    request = parse({"signature_name": "weighted_sum", "instances": [
        {"ids": [-2**31, 2**31 - 1], "scale": 1}]}, SIGNATURES)
    assert request.inputs["ids"].tolist() == [[-2**31, 2**31 - 1]]
    assert rejection({"signature_name": "weighted_sum", "instances": [
        {"ids": [-2**31 - 1], "scale": 1}]}) == (
        "Input 'ids' has -2147483649, outside the range of int32 "
        "(-2147483648 to 2147483647)."
    )


def test_a_bool_input_takes_only_true_and_false():
    request = parse({"signature_name": "flags", "instances": [True, False]}, OTHER_SIGNATURES)
    assert request.inputs["flag"].dtype == np.bool_
    assert request.inputs["flag"].tolist() == [True, False]
    assert rejection({"signature_name": "flags", "instances": [1]}, OTHER_SIGNATURES) == (
        "Input 'flag' has a number (1) where true or false is expected (dtype bool)."
    )


def test_a_dtype_json_cannot_carry_is_rejected():
    assert rejection({"signature_name": "complex", "instances": [1.0]}, OTHER_SIGNATURES) == (
        "Input 'z' has dtype complex64, which this server cannot read from JSON "
        "(it reads strings, booleans, integers and floats)."
    )


def test_fixed_sizes_of_the_signature_are_checked_and_unknown_ranks_take_any_shape():
    assert rejection({"signature_name": "pairs", "instances": [[1, 2, 3]]},
                     OTHER_SIGNATURES) == (
        "Input 'pair' has shape [1, 3], but signature 'pairs' expects [-1, 2] (-1: any size)."
    )
    assert parse({"signature_name": "pairs", "instances": [[1, 2]]},
                 OTHER_SIGNATURES).inputs["pair"].shape == (1, 2)
    for value in (1.5, [1.5], [[1.5, 2.5]]):
        request = parse({"signature_name": "any_rank", "inputs": value}, OTHER_SIGNATURES)
        assert request.inputs["x"].tolist() == value


def test_the_wrong_value_is_quoted_up_to_40_characters():
    # A JSON string of 38 letters is 40 characters with its quotes.
    for letters, preview in (("x" * 38, '"' + "x" * 38 + '"'), ("x" * 39, '"' + "x" * 39 + "...")):
        assert rejection({"signature_name": "weighted_sum",
                          "instances": [{"ids": [letters], "scale": 1}]}) == (
            f"Input 'ids' has a string ({preview}) where an integer is expected (dtype int32)."
        )


def test_a_single_output_is_written_as_plain_values_in_both_formats():
    # TF Serving's REST API: with one output, each prediction (row format)
    # or the "outputs" value (columnar format) is that output's value.
    outputs = {"length": np.array([2, 3], np.int32)}
    rows = parse({"instances": ["ab", "abc"]}, SIGNATURES)
    columns = parse({"inputs": ["ab", "abc"]}, SIGNATURES)
    assert json_bytes(format_predict_response(outputs, rows)) == b'{"predictions":[2,3]}'
    assert json_bytes(format_predict_response(outputs, columns)) == b'{"outputs":[2,3]}'


def test_numbers_keep_their_type_and_float16_is_written_as_float32():
    # Integers stay integers (2**24 + 1 is not a float32); float64 keeps its
    # digits; float16's 0.1 is 0.0999755859375, whose shortest float32 form
    # is 0.099975586 (0.09997559 would read back as another float32).
    columns = parse({"inputs": ["a"]}, SIGNATURES)
    outputs = {"count": np.array([2**24 + 1], np.int64),
               "exact": np.array([0.123456789012], np.float64),
               "half": np.array([0.1], np.float16)}
    assert json_bytes(format_predict_response(outputs, columns)) == (
        b'{"outputs":{"count":[16777217],"exact":[0.123456789012],"half":[0.099975586]}}'
    )


def test_bfloat16_outputs_are_written_as_float32():
    # TensorFlow's .numpy() of a bfloat16 tensor is an ml_dtypes.bfloat16
    # array, which numpy does not count as floating. bfloat16's 0.1 is
    # 0.10009765625, whose shortest float32 form is 0.100097656.
    columns = parse({"inputs": ["a"]}, SIGNATURES)
    outputs = {"scores": np.array([0.1, -2.5], ml_dtypes.bfloat16)}
    assert json_bytes(format_predict_response(outputs, columns)) == (
        b'{"outputs":[0.100097656,-2.5]}'
    )


@pytest.mark.parametrize("output", [np.array(5), np.array([1, 2, 3])])
def test_outputs_not_one_row_per_instance_cannot_be_written_as_rows(output):
    rows = parse({"instances": ["ab", "abc"]}, SIGNATURES)
    with pytest.raises(RequestError) as raised:
        format_predict_response({"total": output}, rows)
    assert raised.value.message == (
        f"Output 'total' of signature 'serving_default' has shape {list(output.shape)}, "
        "not one row per instance (2), so it cannot be returned in the row format. "
        'Send the request in the columnar format, {"inputs": ...}, to get {"outputs": ...}.'
    )
