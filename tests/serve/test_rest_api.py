"""The JSON formats, without HTTP: requests to arrays, arrays to responses.

The requests are parsed against plain descriptions of the toy model's
signatures (`SIGNATURES`, tests/serve/plain_signatures.py), so that these
tests need no SavedModel and run in milliseconds (mutation testing runs
them hundreds of times);
`test_the_plain_signatures_describe_the_toy_model` checks the descriptions
against the exported toy model.
"""

import base64
import json
import math
import re

import ml_dtypes
import numpy as np
import pytest

from tests.serve.plain_signatures import OTHER_SIGNATURES, SIGNATURES, plain_signature
from tfnlp.serve.rest_api import (
    RequestError,
    error_body,
    format_predict_response,
    json_bytes,
    parse_json_object,
    parse_predict_request,
)


def described(signatures):
    """What `rest_api` reads of each signature."""
    return {
        name: ([(info.key, info.dtype.name, info.numpy_dtype, info.shape)
                for info in signature.inputs.values()], signature.rules)
        for name, signature in signatures.items()
    }


def test_the_plain_signatures_describe_the_toy_model(model_store):
    assert described(model_store.get("toy", 1).signatures) == described(SIGNATURES)


@pytest.fixture(scope="module")
def signatures():
    return SIGNATURES


def parse(request, signatures):
    return parse_predict_request(request, signatures, max_string_bytes=10)


def inputs_of(request):
    """The inputs of a request of one part."""
    part, = request.parts
    return part.inputs


def respond(outputs, request):
    """The response to `request` when one call gave `outputs`."""
    return format_predict_response(request, [(np.arange(request.batch_size), outputs)])


def test_row_format_with_a_single_input_takes_plain_values(signatures):
    request = parse({"instances": ["ab", {"b64": base64.b64encode(b"\xff").decode()}]},
                    signatures)
    assert request.signature.name == "serving_default"
    assert request.row_format and request.batch_size == 2
    assert inputs_of(request)["text"].tolist() == [b"ab", b"\xff"]


def test_row_format_with_named_inputs_stacks_every_input(signatures):
    request = parse({"signature_name": "weighted_sum", "instances": [
        {"ids": [1, 2], "scale": 1}, {"ids": [3, 4], "scale": 0.5}]}, signatures)
    assert inputs_of(request)["ids"].dtype == np.int32
    assert inputs_of(request)["ids"].tolist() == [[1, 2], [3, 4]]
    assert inputs_of(request)["scale"].dtype == np.float32
    assert inputs_of(request)["scale"].tolist() == [1.0, 0.5]


def test_columnar_format_takes_a_value_or_an_object_of_inputs(signatures):
    single = parse({"inputs": ["a", "b"]}, signatures)
    named = parse({"inputs": {"text": ["a", "b"]}}, signatures)
    assert not single.row_format
    assert inputs_of(single)["text"].tolist() == inputs_of(named)["text"].tolist() == [b"a", b"b"]


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
    assert written(respond(outputs, rows)) == {"predictions": [
        {"length": 2, "upper": "AB", "text_bytes": {"b64": "YWI="}},
        {"length": 3, "upper": {"b64": "ww=="}, "text_bytes": {"b64": "YWJj"}},
    ]}
    columns = parse({"inputs": ["ab", "abc"]}, signatures)
    assert written(respond(
        {"sum": np.array([0.1, 2.5], np.float32), "count": np.array(7, np.int64)}, columns)) == {
        "outputs": {"sum": [0.1, 2.5], "count": 7}}
    assert json_bytes({"x": np.array([0.1], np.float32)}) == b'{"x":[0.1]}'


def written(response):
    """The response as a client reads it."""
    return json.loads(json_bytes(response))



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
        "['capped_sum', 'length', 'serving_default', 'total_length', 'weighted_sum']. Set "
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
    assert inputs_of(parse({"inputs": ["a"]}, SIGNATURES))["text"].tolist() == [b"a"]
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
    assert inputs_of(parse({"instances": ["x" * 10, "é" * 5]}, SIGNATURES))["text"].tolist() == [
        b"x" * 10, "é".encode() * 5]
    assert rejection({"instances": ["é" * 6]}) == (
        "Over-long text in input 'text': 12 bytes, more than the server's "
        "--max_string_bytes=10. Shorten or split the text; the model only reads "
        "up to its sequence length anyway."
    )


def single_input(dtype):
    """The signatures of a model whose one input `x` has `dtype`, [batch]."""
    return {"serving_default": plain_signature("serving_default", x=(dtype, (None,)))}


# The smallest and largest value of each dtype, written out (not numpy's;
# bfloat16's is (2 - 2**-7) * 2**127).
INTEGER_RANGES = {
    "int8": (-128, 127), "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
    "int64": (-2**63, 2**63 - 1), "uint8": (0, 255), "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
}
FLOAT_LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
                 "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


@pytest.mark.parametrize("dtype", list(INTEGER_RANGES))
def test_integers_from_the_smallest_to_the_largest_of_their_dtype_are_accepted_and_no_others(
        dtype):
    smallest, largest = INTEGER_RANGES[dtype]
    signatures = single_input(dtype)
    array = inputs_of(parse({"instances": [smallest, largest]}, signatures))["x"]
    assert array.dtype == np.dtype(dtype)
    assert array.tolist() == [smallest, largest]
    for value in (smallest - 1, largest + 1):
        assert rejection({"instances": [value]}, signatures) == (
            f"Input 'x' has {value}, outside the range of {dtype} ({smallest} to {largest}).")


@pytest.mark.parametrize("dtype", list(FLOAT_LARGEST))
def test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger(
        dtype):
    largest = FLOAT_LARGEST[dtype]
    signatures = single_input(dtype)
    # The largest magnitude, as a float and as an integer (compared
    # exactly), and the infinities (not a magnitude) are accepted ...
    accepted = [largest, -largest, int(largest), -int(largest), math.inf, -math.inf]
    array = inputs_of(parse({"instances": accepted}, signatures))["x"]
    assert array.dtype == np.dtype(dtype)
    assert array.tolist() == accepted
    # ... and the next float and integer beyond it are not (float64 has no
    # finite float beyond it).
    beyond = [int(largest) + 1, -int(largest) - 1]
    if math.isfinite(math.nextafter(largest, math.inf)):
        beyond += [math.nextafter(largest, math.inf), -math.nextafter(largest, math.inf)]
    for value in beyond:
        assert rejection({"instances": [value]}, signatures).endswith(
            f", outside the range of {dtype} (largest magnitude {largest:g}); send NaN, "
            "Infinity or -Infinity for a value that is not finite.")


def test_a_bool_input_takes_only_true_and_false():
    request = parse({"signature_name": "flags", "instances": [True, False]}, OTHER_SIGNATURES)
    assert inputs_of(request)["flag"].dtype == np.bool_
    assert inputs_of(request)["flag"].tolist() == [True, False]
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
    assert inputs_of(parse({"signature_name": "pairs", "instances": [[1, 2]]},
                           OTHER_SIGNATURES))["pair"].shape == (1, 2)
    for value in (1.5, [1.5], [[1.5, 2.5]]):
        request = parse({"signature_name": "any_rank", "inputs": value}, OTHER_SIGNATURES)
        assert inputs_of(request)["x"].tolist() == value


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
    assert json_bytes(respond(outputs, rows)) == b'{"predictions":[2,3]}'
    assert json_bytes(respond(outputs, columns)) == b'{"outputs":[2,3]}'


def test_numbers_keep_their_type_and_float16_is_written_as_float32():
    # Integers stay integers (2**24 + 1 is not a float32); float64 keeps its
    # digits; float16's 0.1 is 0.0999755859375, whose shortest float32 form
    # is 0.099975586 (0.09997559 would read back as another float32).
    columns = parse({"inputs": ["a"]}, SIGNATURES)
    outputs = {"count": np.array([2**24 + 1], np.int64),
               "exact": np.array([0.123456789012], np.float64),
               "half": np.array([0.1], np.float16)}
    assert json_bytes(respond(outputs, columns)) == (
        b'{"outputs":{"count":[16777217],"exact":[0.123456789012],"half":[0.099975586]}}'
    )


def test_bfloat16_outputs_are_written_as_float32():
    # TensorFlow's .numpy() of a bfloat16 tensor is an ml_dtypes.bfloat16
    # array, which numpy does not count as floating. bfloat16's 0.1 is
    # 0.10009765625, whose shortest float32 form is 0.100097656.
    columns = parse({"inputs": ["a"]}, SIGNATURES)
    outputs = {"scores": np.array([0.1, -2.5], ml_dtypes.bfloat16)}
    assert json_bytes(respond(outputs, columns)) == (
        b'{"outputs":[0.100097656,-2.5]}'
    )


@pytest.mark.parametrize("output", [np.array(5), np.array([1, 2, 3])])
def test_outputs_not_one_row_per_instance_cannot_be_written_as_rows(output):
    rows = parse({"instances": ["ab", "abc"]}, SIGNATURES)
    with pytest.raises(RequestError) as raised:
        respond({"total": output}, rows)
    assert raised.value.message == (
        f"Output 'total' of signature 'serving_default' has shape {list(output.shape)}, "
        "not one row per instance (2), so it cannot be returned in the row format. "
        'Send the request in the columnar format, {"inputs": ...}, to get {"outputs": ...}.'
    )


# Client errors that used to escape as 500s (issue 14): each is a 4xx that
# says what was wrong.

def test_an_unpaired_surrogate_in_a_string_is_rejected():
    message = rejection(parse_json_object(b'{"instances": ["ok", "\\ud800"]}'))
    assert message.startswith("Input 'text' has a string with an unpaired UTF-16 surrogate "
                              "('\\ud800')")
    assert json_bytes(error_body(message))  # The error itself can be written.


def test_an_integer_of_thousands_of_digits_is_not_json_the_server_reads():
    # Python's limit: 4300 digits are read, 4301 are not.
    assert parse_json_object(b'{"instances": [' + b"9" * 4300 + b"]}") == {
        "instances": [int("9" * 4300)]}
    with pytest.raises(RequestError, match=r"not valid JSON.*4300 digits"):
        parse_json_object(b'{"instances": [' + b"9" * 4301 + b"]}")
    huge = int("9" * 4000)
    assert rejection({"signature_name": "weighted_sum",
                      "instances": [{"ids": [huge], "scale": 1}]}) == (
        "Input 'ids' has an integer of 4000 digits, outside the range of int32 "
        "(-2147483648 to 2147483647).")
    assert rejection({"signature_name": "weighted_sum",
                      "instances": [{"ids": [1], "scale": -huge}]}).startswith(
        "Input 'scale' has an integer of 4000 digits, outside the range of float32")
    assert "outside the range of float32" in rejection(
        {"signature_name": "weighted_sum", "instances": [{"ids": [1], "scale": 1e39}]})


def test_inputs_nested_32_lists_deep_are_read():
    nested = json.loads("[" * 32 + "1.5" + "]" * 32)
    request = parse({"signature_name": "any_rank", "inputs": nested}, OTHER_SIGNATURES)
    assert inputs_of(request)["x"].shape == (1,) * 32


@pytest.mark.parametrize("depth", [33, 65, 900])
def test_inputs_nested_deeper_than_any_signature_are_rejected(depth):
    nested = json.loads("[" * depth + "1" + "]" * depth)
    assert rejection({"signature_name": "any_rank", "inputs": nested}, OTHER_SIGNATURES) == (
        "Input 'x' is nested more than 32 lists deep. Send it as nested lists of the "
        "rank its signature expects (see GET /v1/models/NAME/metadata).")


def test_a_body_nested_too_deeply_to_parse_is_rejected():
    with pytest.raises(RequestError, match="nested too deeply to parse"):
        parse_json_object(b'{"inputs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def test_a_deeply_nested_wrong_value_is_described_without_quoting_it():
    nested = []
    for _ in range(5000):  # Deeper than json.dumps can quote.
        nested = [nested]
    value = {"a": nested}
    assert rejection({"inputs": value}) == (
        "\"inputs\" has unknown input(s) ['a'] and missing input(s) ['text']. Signature "
        "'serving_default' expects exactly the inputs 'text'.")
    assert rejection({"inputs": [value]}) == (
        "Input 'text' has a object (a object nested too deeply to quote) where text (a "
        "JSON string) or {\"b64\": \"...\"} is expected (dtype string).")


def test_more_instances_than_the_limit_get_413_naming_it():
    for request in ({"instances": ["a"] * 4}, {"inputs": ["a"] * 4},
                    {"inputs": {"text": ["a"] * 4}}):
        with pytest.raises(RequestError) as raised:
            parse_predict_request(request, SIGNATURES, max_string_bytes=10, max_instances=3)
        assert raised.value.status == 413
        assert "--max_instances_per_request=3" in raised.value.message
    for request in ({"instances": ["a"] * 3}, {"inputs": ["a"] * 3},
                    {"inputs": {"text": ["a"] * 3}}):
        assert parse_predict_request(request, SIGNATURES, max_string_bytes=10,
                                     max_instances=3).batch_size == 3


def test_a_list_of_values_is_read_as_a_column_for_an_input_of_shape_minus_1_by_1():
    # TF Serving accepts [1, 2, 3] for a [-1, 1] input, as [[1], [2], [3]].
    signatures = {"serving_default": plain_signature("serving_default", x=("int32", (None, 1)))}
    for request in ({"instances": [1, 2, 3]}, {"inputs": [1, 2, 3]},
                    {"instances": [[1], [2], [3]]}):
        assert inputs_of(parse(request, signatures))["x"].tolist() == [[1], [2], [3]]
    assert rejection({"instances": [[1, 2]]}, signatures) == (
        "Input 'x' has shape [1, 2], but signature 'serving_default' expects [-1, 1] "
        "(-1: any size).")


def test_instances_of_each_shape_run_as_a_part_for_an_input_of_unknown_rank():
    # The README's request: a sentence and a (question, context) pair.
    signatures = {"serving_default": plain_signature("serving_default", text=("string", None))}
    request = parse({"instances": ["a", ["b", "c"], "d"]}, signatures)
    assert request.batch_size == 3
    assert [(part.rows.tolist(), part.inputs["text"].tolist()) for part in request.parts] == [
        ([0, 2], [b"a", b"d"]), ([1], [[b"b", b"c"]])]
    response = format_predict_response(request, [
        (request.parts[0].rows, {"n": np.array([10, 30])}),
        (request.parts[1].rows, {"n": np.array([20])})])
    assert response == {"predictions": [10, 20, 30]}
    # A known rank is still checked: the same request is ragged for [-1].
    assert "is ragged" in rejection({"instances": ["a", ["b", "c"]]})


def test_a_columnar_request_split_into_batches_is_joined_along_its_rows():
    request = parse({"inputs": ["a", "b", "c"]}, SIGNATURES)
    rows = request.parts[0].rows
    joined = format_predict_response(request, [
        (rows[:2], {"n": np.array([[1, 1], [2, 2]])}), (rows[2:], {"n": np.array([[3, 3]])})])
    assert written(joined) == {"outputs": [[1, 1], [2, 2], [3, 3]]}
    with pytest.raises(RequestError, match=r"different shape in each of the batches.*"
                                           r"--max_batch_size rows"):
        format_predict_response(request, [(rows[:2], {"n": np.zeros((2, 5))}),
                                          (rows[2:], {"n": np.zeros((1, 4))})])


def test_nan_and_infinities_are_written_as_tf_serving_writes_them():
    columns = parse({"inputs": ["a", "b"]}, SIGNATURES)
    outputs = {"x": np.array([[np.nan, 0.1], [np.inf, -np.inf]], np.float32),
               "y": np.array([1.5, np.nan], np.float64)}
    assert json_bytes(respond(outputs, columns)) == (
        b'{"outputs":{"x":[[NaN,0.1],[Infinity,-Infinity]],"y":[1.5,NaN]}}')
    rows = parse({"instances": ["a", "b"]}, SIGNATURES)
    assert json_bytes(respond({"x": outputs["x"]}, rows)) == (
        b'{"predictions":[[NaN,0.1],[Infinity,-Infinity]]}')
    # ... and read back by the parser, as TF Serving reads them.
    assert parse_json_object(b'{"inputs": [NaN, Infinity, -Infinity]}')["inputs"][1] == np.inf


def capped(request_object, **options):
    return parse_predict_request({"signature_name": "capped_sum", **request_object},
                                 SIGNATURES, max_string_bytes=10, **options)


def test_an_optional_input_left_out_takes_its_default_in_both_formats():
    rows = capped({"instances": [{"ids": [1, 2]}, {"ids": [3, 4], "cap": 3}]})
    assert inputs_of(rows)["cap"].tolist() == [10, 3]
    columns = capped({"inputs": {"ids": [[1, 2], [3, 4]]}})
    assert inputs_of(columns)["cap"].tolist() == [10, 10]


def test_a_required_input_is_still_required_and_the_error_names_the_optional_ones():
    with pytest.raises(RequestError, match=re.escape(
            "Instance 0 has missing input(s) ['ids']. Signature 'capped_sum' expects exactly "
            "the inputs 'cap', 'ids' ('cap' may be left out).")):
        capped({"instances": [{"cap": 3}]})


@pytest.mark.parametrize("cap, bound", [(0, ">= 1"), (101, "<= 100")])
def test_a_value_outside_its_recorded_range_is_a_400_naming_the_range(cap, bound):
    with pytest.raises(RequestError, match=re.escape(f"Input cap={cap} must be {bound}")) as error:
        capped({"instances": [{"ids": [1], "cap": 5}, {"ids": [1], "cap": cap}]})
    assert error.value.status == 400


@pytest.mark.parametrize("cap", [1, 100])
def test_the_ends_of_a_range_are_accepted(cap):
    assert inputs_of(capped({"instances": [{"ids": [1], "cap": cap}]}))["cap"].tolist() == [cap]


def test_the_server_s_cap_on_an_input_refuses_more_and_lowers_its_default():
    limits = {"cap": (4, "--max_cap")}
    with pytest.raises(RequestError, match=re.escape(
            "Input cap=5 is more than this server allows: --max_cap=4")):
        capped({"instances": [{"ids": [1], "cap": 5}]}, input_limits=limits)
    assert inputs_of(capped({"instances": [{"ids": [1], "cap": 4}]}, input_limits=limits)
                     )["cap"].tolist() == [4]
    assert inputs_of(capped({"instances": [{"ids": [1]}]}, input_limits=limits)
                     )["cap"].tolist() == [4]
