"""TensorFlow Serving's REST predict format, to numpy arrays and back.

`parse_predict_request` checks a predict request (row or columnar format)
against a signature and converts its inputs to numpy arrays;
`format_predict_response` writes the outputs back as JSON. Every problem
with a request raises `RequestError`, which the server answers with its
HTTP status and `{"error": message}`.
"""

import base64
import binascii
import dataclasses
import json
import math

import ml_dtypes
import numpy as np
import orjson

from tfnlp.serve.batching import leading_size

DEFAULT_SIGNATURE = "serving_default"
# numpy arrays have at most 64 dimensions; no signature input comes close.
MAX_INPUT_RANK = 32
_NON_FINITE = {"nan": orjson.Fragment(b"NaN"), "inf": orjson.Fragment(b"Infinity"),
               "-inf": orjson.Fragment(b"-Infinity")}


class RequestError(Exception):
    """A request the server cannot answer, with the HTTP status to send.

    Args:
        message: what was wrong, what was expected and what to do.
        status: the HTTP status code, 400 unless told otherwise.
        headers: extra HTTP headers of the answer, e.g. `{"Allow": "POST"}`.
    """

    def __init__(self, message, status=400, headers=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = headers or {}


@dataclasses.dataclass
class RequestPart:
    """Inputs of one shape, run as one call (or as batches of it).

    Args:
        inputs: a dict from every input key to a numpy array of its dtype.
        rows: which instances (row format) or rows (columnar format) of
            the request the leading dimension of `inputs` holds, as an
            array of indices.
    """

    inputs: dict
    rows: np.ndarray


@dataclasses.dataclass
class PredictRequest:
    """A validated predict request.

    Args:
        signature: the `Signature` to run.
        parts: the `RequestPart`s to run: one, unless the instances of a
            row-format request have different shapes (each shape is a part).
        row_format: whether the request used `"instances"` (and the
            response uses `"predictions"`) rather than `"inputs"`.
        batch_size: the number of instances (row format), or of rows
            (columnar format; 1 when the inputs have no leading dimension).
    """

    signature: object
    parts: list
    row_format: bool
    batch_size: int


def error_body(message):
    """The JSON body of an error response (unpaired surrogates quoted from a
    request are written as `\\udXXX`, since JSON text must be Unicode)."""
    return {"error": message.encode("utf-8", "backslashreplace").decode("utf-8")}


def parse_json_object(body):
    """The JSON object in a request body.

    Raises:
        RequestError: the body is not UTF-8 JSON, is nested too deeply for
            the parser, has an integer of more digits than Python converts,
            or is not a JSON object.
    """
    try:
        request = json.loads(body)
    except RecursionError:
        raise RequestError(
            "The request body is nested too deeply to parse (thousands of "
            f"levels). Inputs have at most {MAX_INPUT_RANK} dimensions; send "
            "each input as nested lists of its signature's rank."
        ) from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, digit limit.
        raise RequestError(
            f"The request body is not valid JSON ({error}). Send a UTF-8 JSON "
            'object such as {"instances": ["some text"]}.'
        ) from None
    if not isinstance(request, dict):
        raise RequestError(
            f"The request body is a JSON {_json_type(request)}, not an object. "
            'Send {"instances": [...]} or {"inputs": ...}.'
        )
    return request


def parse_predict_request(request, signatures, max_string_bytes, max_instances=None,
                          input_limits=None):
    """Validates a predict request and converts its inputs to numpy arrays.

    A predict request is a JSON object with an optional `"signature_name"`
    (default `"serving_default"`) and the inputs in one of two formats:

    - row format, `{"instances": [...]}`: one entry per example; a value
      when the signature has a single input (`["some text", "more
      text"]`), else an object with every input (`[{"ids": [1, 2],
      "scale": 0.5}, ...]`).
    - columnar format, `{"inputs": ...}`: the whole batch of a single
      input, or an object of every input (`{"ids": [[1, 2]], "scale":
      [0.5]}`).

    Strings are UTF-8 text; binary values are written `{"b64":
    "<base64>"}`, which string inputs accept. JSON numbers are converted to
    the signature's dtype, and values of the wrong type are rejected; `NaN`,
    `Infinity` and `-Infinity` are read as TensorFlow Serving reads them.

    Text longer than the model's sequence length is not an error: the
    exported text signatures tokenize in the graph and truncate to their
    sequence length. Only text over `max_string_bytes` (the server's
    `--max_string_bytes`) is rejected, and a request of more instances
    (rows) than `max_instances` (`--max_instances_per_request`).

    In the row format, instances of different shapes are accepted for an
    input of unknown rank (tfnlp's text signatures take a sentence or a
    `[first, second]` pair per instance): each shape is run as its own
    batch and the predictions come back in the order of the instances. For
    an input of shape `[-1, 1]`, a rank-1 list (`[1, 2, 3]`) is read as one
    value per row, as TensorFlow Serving does.

    Args:
        request: the request's JSON object.
        signatures: a dict from signature name to `Signature` of the model
            version the request is for.
        max_string_bytes: the longest string input accepted, in bytes.
        max_instances: the most instances (rows) accepted in one request,
            or None for no limit.
        input_limits: `{input name: (largest value, the server flag that
            sets it)}`: the server's own caps on inputs of any signature
            (`--max_new_tokens`), on top of the ranges the export records.

    Returns:
        A `PredictRequest`.

    Raises:
        RequestError: the request does not fit the signature (400), or has
            more than `max_instances` instances (413).
    """
    signature = _select_signature(request, signatures)
    if ("instances" in request) == ("inputs" in request):
        raise RequestError(
            "A predict request needs exactly one of \"instances\" (row format) "
            f"and \"inputs\" (columnar format); this one has "
            f"{'both' if 'instances' in request else 'neither'}. Send e.g. "
            f"{{\"instances\": [...]}} with the inputs {_input_names(signature)}."
        )
    row_format = "instances" in request
    input_limits = input_limits or {}
    defaults = _capped_defaults(signature, input_limits)
    if row_format:
        columns = _columns_from_instances(request["instances"], signature, max_instances,
                                          defaults)
        groups = _group_rows_by_shape(columns, signature)
    else:
        columns = _columns_from_inputs(request["inputs"], signature, defaults)
        for key, value in columns.items():
            if isinstance(value, list):
                _check_instance_count(len(value), max_instances, f"rows of input {key!r}")
        groups = [None]
    parts = [_request_part(columns, rows, signature, max_string_bytes, input_limits)
             for rows in groups]
    batch_size = sum(len(part.rows) for part in parts)
    return PredictRequest(signature, parts, row_format, batch_size)


def _request_part(columns, rows, signature, max_string_bytes, input_limits):
    """The `RequestPart` of the instances `rows` of `columns` (all of them
    when `rows` is None)."""
    if rows is not None:
        columns = {key: [values[row] for row in rows] for key, values in columns.items()}
    inputs = {key: _to_array(value, signature.inputs[key], signature.name, max_string_bytes)
              for key, value in columns.items()}
    _check_ranges(inputs, signature, input_limits)
    for key, array in inputs.items():
        if array.ndim and array.shape[0] == 0:
            raise RequestError(
                f"Input {key!r} is an empty batch. Send at least one example."
            )
    if rows is None:  # One row when the inputs have no common leading dimension.
        rows = np.arange(leading_size(inputs) or 1)
    return RequestPart(inputs, rows)


def format_predict_response(request, results):
    """The JSON response to a predict request.

    Args:
        request: the `PredictRequest` that was run.
        results: a list of `(rows, outputs)`, one per call the request took:
            `rows` are the instances (or rows) of the request the call ran
            on, as in `RequestPart.rows`, and `outputs` is a dict from every
            output key to a numpy array.

    Returns:
        `{"predictions": [...]}` for the row format, one entry per example:
        the value of the single output, else an object of every output;
        `{"outputs": ...}` for the columnar format: the single output's
        value, else an object of every output. String outputs are UTF-8
        text, or `{"b64": "<base64>"}` when their name ends in `_bytes` or
        their bytes are not valid UTF-8. Numbers that JSON cannot write,
        NaN and infinities, are written `NaN`, `Infinity` and `-Infinity`,
        as TensorFlow Serving writes them.

    Raises:
        RequestError: the row format was asked of a signature with an output
            that is not one row per instance, or the columnar format of one
            whose outputs cannot be joined across the calls.
    """
    if not request.row_format:
        outputs = results[0][1] if len(results) == 1 else _join_rows(request, results)
        values = {key: _to_json(outputs[key], key) for key in sorted(outputs)}
        return {"outputs": _single_or_all(values)}
    predictions = [None] * request.batch_size
    for rows, outputs in results:
        _check_by_rows(outputs, len(rows), request, "cannot be returned in the row format",
                       'Send the request in the columnar format, {"inputs": ...}, to get '
                       '{"outputs": ...}.')
        values = {key: _to_json(outputs[key], key) for key in sorted(outputs)}
        for index, row in enumerate(rows):
            predictions[row] = _single_or_all({key: value[index] for key, value in values.items()})
    return {"predictions": predictions}


def _check_by_rows(outputs, rows, request, consequence, remedy):
    """Raises RequestError unless every output has `rows` rows."""
    for key, array in sorted(outputs.items()):
        if array.ndim == 0 or array.shape[0] != rows:
            raise RequestError(
                f"Output {key!r} of signature {request.signature.name!r} has shape "
                f"{list(array.shape)}, not one row per instance ({rows}), so it "
                f"{consequence}. {remedy}"
            )


def _join_rows(request, results):
    """The outputs of a columnar request that ran as several batches, joined
    along their rows."""
    remedy = ("Send at most the server's --max_batch_size rows in one columnar "
              "request, or use the row format.")
    for rows, outputs in results:
        _check_by_rows(outputs, len(rows), request, "cannot be joined across the batches "
                       "this request was split into", remedy)
    joined = {}
    for key in results[0][1]:
        arrays = [outputs[key] for _, outputs in results]
        if len({array.shape[1:] for array in arrays}) > 1:
            raise RequestError(
                f"Output {key!r} of signature {request.signature.name!r} has a different "
                "shape in each of the batches this request was split into "
                f"({sorted({str(list(array.shape[1:])) for array in arrays})} after the "
                f"rows), so they cannot be joined in the columnar format. {remedy}"
            )
        joined[key] = np.concatenate(arrays)
    return joined


def json_bytes(body):
    """`body` (a response of this module, numpy arrays included) as JSON."""
    return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)


def _select_signature(request, signatures):
    name = request.get("signature_name", DEFAULT_SIGNATURE)
    if not isinstance(name, str) or name not in signatures:
        raise RequestError(
            f"Signature {name!r} not found; this model version has the "
            f"signatures {sorted(signatures)}. Set \"signature_name\" to one of "
            f"them (leaving it out means {DEFAULT_SIGNATURE!r})."
        )
    return signatures[name]


def _check_ranges(inputs, signature, input_limits):
    """Raises a 400 `RequestError` for a value outside the range its export
    records (`signature.rules`) or above the server's cap on the input."""
    for key, array in inputs.items():
        problem = signature.rules.violation(key, array)
        if problem:
            raise RequestError(
                f"Input {problem} (signature {signature.name!r}). Send a value in range, "
                "or leave the input out to use its default."
            )
        if key in input_limits:
            limit, flag = input_limits[key]
            if np.any(array > limit):
                raise RequestError(
                    f"Input {key}={np.max(array).item()} is more than this server allows: "
                    f"{flag}={limit}. Ask for at most {limit}."
                )


def _input_names(signature):
    return ", ".join(repr(key) for key in signature.inputs)


def _is_b64(value):
    return isinstance(value, dict) and list(value) == ["b64"]


def _is_named_inputs(value):
    return isinstance(value, dict) and not _is_b64(value)


def _check_input_names(names, signature, where):
    expected = set(signature.inputs)
    optional = set(signature.rules.defaults)
    unknown = sorted(set(names) - expected)
    missing = sorted(expected - set(names) - optional)
    if unknown or missing:
        problems = []
        if unknown:
            problems.append(f"unknown input(s) {unknown}")
        if missing:
            problems.append(f"missing input(s) {missing}")
        optional_note = (f" ({', '.join(repr(key) for key in sorted(optional))} may be left "
                         "out)" if optional else "")
        raise RequestError(
            f"{where} has {' and '.join(problems)}. Signature {signature.name!r} "
            f"expects exactly the inputs {_input_names(signature)}{optional_note}."
        )


def _check_instance_count(count, max_instances, what):
    if max_instances is not None and count > max_instances:
        raise RequestError(
            f"The request has {count} {what}, more than the server's "
            f"--max_instances_per_request={max_instances}. Split it into requests of "
            f"at most {max_instances}, or restart the server with a larger "
            "--max_instances_per_request.",
            status=413,
        )


def _columns_from_instances(instances, signature, max_instances, defaults):
    """The row format's instances as one list of values per input."""
    if not isinstance(instances, list):
        raise RequestError(
            f"\"instances\" is a JSON {_json_type(instances)}; expected a list "
            "with one entry per example."
        )
    if not instances:
        raise RequestError(
            "\"instances\" is an empty list (an empty batch). Send at least one "
            "instance."
        )
    _check_instance_count(len(instances), max_instances, "instances")
    named = [_is_named_inputs(instance) for instance in instances]
    if any(named) and not all(named):
        raise RequestError(
            "\"instances\" mixes objects and plain values. Use objects with "
            f"the inputs {_input_names(signature)} for every instance, or plain "
            "values for every instance when the signature has a single input."
        )
    if all(named):
        for index, instance in enumerate(instances):
            _check_input_names(instance, signature, f"Instance {index}")
        columns = {key: [instance[key] if key in instance else defaults[key]
                         for instance in instances] for key in signature.inputs}
    elif len(signature.inputs) == 1:
        columns = {next(iter(signature.inputs)): instances}
    else:
        raise RequestError(
            f"Signature {signature.name!r} has the inputs {_input_names(signature)}, "
            "so each instance must be an object with all of them, e.g. "
            f"{{{', '.join(f'{key!r}: ...' for key in signature.inputs)}}}."
        )
    return columns


def _group_rows_by_shape(columns, signature):
    """The instances to run together: `[None]` (all of them) unless an
    input of unknown rank has instances of different shapes, else the
    indices of the instances of each shape, in order of first appearance."""
    keys = [key for key, info in signature.inputs.items() if info.shape is None]
    if not keys:
        return [None]
    groups = {}
    for row in range(len(columns[keys[0]])):
        shape = tuple(_flatten(columns[key][row], None, key) for key in keys)
        groups.setdefault(shape, []).append(row)
    if len(groups) == 1:
        return [None]
    return [np.array(rows) for rows in groups.values()]


def _columns_from_inputs(inputs, signature, defaults):
    """The columnar format's inputs as one value per input."""
    if _is_named_inputs(inputs):
        _check_input_names(inputs, signature, '"inputs"')
        return _with_defaults(dict(inputs), signature, defaults)
    if len(signature.inputs) != 1:
        raise RequestError(
            f"Signature {signature.name!r} has the inputs {_input_names(signature)}, "
            'so "inputs" must be an object with all of them.'
        )
    return {next(iter(signature.inputs)): inputs}


def _with_defaults(columns, signature, defaults):
    """Columnar inputs with each left-out optional input filled with its
    default, one per row of the given inputs."""
    missing = [key for key in signature.inputs if key not in columns]
    if missing:
        rows = next((len(value) for value in columns.values() if isinstance(value, list)), None)
        for key in missing:
            columns[key] = defaults[key] if rows is None else [defaults[key]] * rows
    return columns


def _capped_defaults(signature, input_limits):
    """The signature's input defaults, each at most the server's cap on
    that input (a left-out option never exceeds what the server allows)."""
    defaults = dict(signature.rules.defaults)
    for key, (limit, _) in input_limits.items():
        if key in defaults and isinstance(defaults[key], (int, float)):
            defaults[key] = min(defaults[key], limit)
    return defaults


def _json_type(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "null" if value is None else "object"


def _flatten(value, leaves, key, depth=0):
    """Appends the scalars of nested lists to `leaves` (unless it is None);
    returns their shape."""
    if not isinstance(value, list):
        if leaves is not None:
            leaves.append(value)
        return ()
    if depth == MAX_INPUT_RANK:
        raise RequestError(
            f"Input {key!r} is nested more than {MAX_INPUT_RANK} lists deep. Send "
            "it as nested lists of the rank its signature expects (see GET "
            "/v1/models/NAME/metadata)."
        )
    shapes = {_flatten(item, leaves, key, depth + 1) for item in value}
    if len(shapes) > 1:
        raise RequestError(
            f"Input {key!r} is ragged: lists at the same depth have different "
            f"shapes {sorted(list(shape) for shape in shapes)}. Every instance "
            "must have the same shape; pad the shorter ones."
        )
    return (len(value),) + (shapes.pop() if shapes else ())


def _to_array(value, info, signature_name, max_string_bytes):
    """Converts the JSON value of one input to a numpy array of its dtype."""
    leaves = []
    shape = _flatten(value, leaves, info.key)
    if (info.shape is not None and len(info.shape) == len(shape) + 1
            and info.shape[-1] == 1):
        shape += (1,)  # A list of values for a [-1, 1] input, as TF Serving reads it.
    convert = _converter(info, max_string_bytes)
    array = np.array([convert(leaf) for leaf in leaves], dtype=info.numpy_dtype).reshape(shape)
    if info.shape is not None and (
        len(info.shape) != len(shape)
        or any(expected not in (None, size) for expected, size in zip(info.shape, shape))
    ):
        expected = [-1 if size is None else size for size in info.shape]
        raise RequestError(
            f"Input {info.key!r} has shape {list(shape)}, but signature "
            f"{signature_name!r} expects {expected} (-1: any size)."
        )
    return array


def _converter(info, max_string_bytes):
    """A function from one JSON scalar to a value of the input's dtype."""
    dtype = info.numpy_dtype

    def wrong_type(value, expected):
        return RequestError(
            f"Input {info.key!r} has a {_json_type(value)} ({_preview(value)}) where "
            f"{expected} is expected (dtype {info.dtype.name})."
        )

    def to_bytes(value):
        if isinstance(value, str):
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError as error:
                raise RequestError(
                    f"Input {info.key!r} has a string with an unpaired UTF-16 surrogate "
                    f"({value[error.start]!r}), which is not Unicode text. Send valid "
                    'text, or send the bytes as {"b64": "<base64>"}.'
                ) from None
        elif _is_b64(value) and isinstance(value["b64"], str):
            try:
                data = base64.b64decode(value["b64"], validate=True)
            except (binascii.Error, ValueError):  # ValueError: not ASCII.
                raise RequestError(
                    f"Input {info.key!r} has a \"b64\" value that is not valid "
                    "base64. Encode the bytes with standard base64 (RFC 4648)."
                ) from None
        else:
            raise wrong_type(value, 'text (a JSON string) or {"b64": "..."}')
        if len(data) > max_string_bytes:
            raise RequestError(
                f"Over-long text in input {info.key!r}: {len(data)} bytes, more "
                f"than the server's --max_string_bytes={max_string_bytes}. "
                "Shorten or split the text; the model only reads up to its "
                "sequence length anyway."
            )
        return data

    def to_bool(value):
        if not isinstance(value, bool):
            raise wrong_type(value, "true or false")
        return value

    def to_integer(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong_type(value, "an integer")
        limits = np.iinfo(dtype)
        if not limits.min <= value <= limits.max:
            raise RequestError(
                f"Input {info.key!r} has {_preview(value)}, outside the range of "
                f"{info.dtype.name} ({limits.min} to {limits.max})."
            )
        return value

    def to_float(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong_type(value, "a number")
        largest = float(ml_dtypes.finfo(dtype).max)  # numpy's finfo lacks bfloat16.
        finite = isinstance(value, int) or math.isfinite(value)
        if finite and abs(value) > largest:  # Exact for ints of any size.
            raise RequestError(
                f"Input {info.key!r} has {_preview(value)}, outside the range of "
                f"{info.dtype.name} (largest magnitude {largest:g}); send NaN, "
                "Infinity or -Infinity for a value that is not finite."
            )
        # A float, as numpy makes of an int anyway: bfloat16 arrays take no
        # int of 2**63 or more.
        return float(value)

    if dtype == np.dtype(object):
        return to_bytes
    if dtype == np.bool_:
        return to_bool
    if np.issubdtype(dtype, np.integer):
        return to_integer
    # bfloat16 is ml_dtypes' type, which numpy does not count as floating.
    if np.issubdtype(dtype, np.floating) or dtype == ml_dtypes.bfloat16:
        return to_float
    raise RequestError(
        f"Input {info.key!r} has dtype {info.dtype.name}, which this server "
        "cannot read from JSON (it reads strings, booleans, integers and "
        "floats)."
    )


def _preview(value, limit=40):
    """The JSON of `value`, cut to `limit` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {len(str(abs(value)))} digits"  # Never over the digit limit.
    try:
        text = json.dumps(value)
    except RecursionError:
        return f"a {_json_type(value)} nested too deeply to quote"
    return text if len(text) <= limit else text[:limit] + "..."


def _to_json(array, key):
    """A numpy output array as values `orjson` writes: strings as nested
    lists, numbers as C-contiguous arrays (float32 in its shortest decimal
    form, 0.1 rather than 0.10000000149011612); an array with NaN or
    infinities as nested lists with `NaN`, `Infinity` and `-Infinity`."""
    if array.dtype == np.dtype(object):
        force_b64 = key.endswith("_bytes")
        return _map_nested(lambda data: _bytes_to_json(data, force_b64), array.tolist())
    # float16, and bfloat16 (ml_dtypes' type, which numpy does not count
    # as floating): written as float32.
    if array.dtype == np.float16 or array.dtype.name == "bfloat16":
        array = array.astype(np.float32)
    if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
        return _with_non_finite(array)
    if array.ndim == 0:
        return array.item()
    return np.ascontiguousarray(array)


def _with_non_finite(array):
    """Nested lists of numpy scalars (orjson writes float32 ones in their
    shortest form), with the JSON of TF Serving for NaN and infinities."""
    if array.ndim:
        return [_with_non_finite(item) for item in array]
    return array if np.isfinite(array) else _NON_FINITE[str(float(array))]


def _bytes_to_json(data, force_b64):
    if not force_b64:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"b64": base64.b64encode(data).decode("ascii")}


def _map_nested(function, value):
    if isinstance(value, list):
        return [_map_nested(function, item) for item in value]
    return function(value)


def _single_or_all(values):
    """The only value of a dict of one entry, else the dict itself."""
    return next(iter(values.values())) if len(values) == 1 else values
