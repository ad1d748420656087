"""The REST API over HTTP, against the toy model (tests/serve/toy_models.py)."""

import base64
import http.client
import json
import logging
import re
import threading
import time

import socket

import pytest

from tests.serve.client import call
from tests.serve.toy_models import LENGTH_OFFSET
from tfnlp.serve import rest_api
from tfnlp.serve.http_server import start_server
from tfnlp.serve.load_test import run_load_test

PREDICT = "/v1/models/toy:predict"


def assert_still_serving(server):
    assert call(server, "POST", PREDICT, {"instances": ["ok"]}) == (
        200, {"predictions": [{"first_byte": "o", "length": 2 + LENGTH_OFFSET,
                               "text_bytes": {"b64": "b2s="}, "upper": "OK"}]})


def test_model_status(server):
    status, body = call(server, "GET", "/v1/models/toy")
    assert status == 200
    assert [entry["version"] for entry in body["model_version_status"]] == ["2", "1"]
    status, body = call(server, "GET", "/v1/models/toy/versions/1")
    assert status == 200
    assert body == {"model_version_status": [{
        "version": "1", "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""}}]}


def test_metadata_of_the_newest_and_of_a_version(server):
    status, body = call(server, "GET", "/v1/models/toy/metadata")
    assert status == 200
    assert body["model_spec"] == {"name": "toy", "signature_name": "", "version": "2"}
    signatures = body["metadata"]["signature_def"]["signature_def"]
    assert signatures["serving_default"]["inputs"]["text"]["dtype"] == "DT_STRING"
    assert sorted(signatures["serving_default"]["outputs"]) == [
        "first_byte", "length", "text_bytes", "upper"]
    status, body = call(server, "GET", "/v1/models/toy/versions/1/metadata")
    assert (status, body["model_spec"]["version"]) == (200, "1")


def test_row_format_predict(server):
    status, body = call(server, "POST", PREDICT, {"instances": ["ab", "é!"]})
    assert status == 200
    assert body == {"predictions": [
        {"first_byte": "a", "length": 2 + LENGTH_OFFSET, "text_bytes": {"b64": "YWI="},
         "upper": "AB"},
        # The first byte of "é" alone is not valid UTF-8, so it is base64.
        {"first_byte": {"b64": "ww=="}, "length": 3 + LENGTH_OFFSET,
         "text_bytes": {"b64": "w6kh"}, "upper": "é!"},
    ]}


def test_row_format_with_named_inputs_and_a_specific_version(server):
    status, body = call(server, "POST", "/v1/models/toy/versions/1:predict", {
        "signature_name": "weighted_sum",
        "instances": [{"ids": [1, 2, 3], "scale": 0.5}, {"ids": [4, 5, 6], "scale": 2}],
    })
    assert status == 200
    assert body == {"predictions": [{"count": 3, "sum": 3.0}, {"count": 3, "sum": 30.0}]}


def test_columnar_format_predict(server):
    status, body = call(server, "POST", "/v1/models/toy/versions/1:predict", {
        "signature_name": "length", "inputs": ["abc", {"b64": "AAE="}]})
    assert (status, body) == (200, {"outputs": [3, 2]})
    status, body = call(server, "POST", PREDICT, {
        "signature_name": "weighted_sum", "inputs": {"ids": [[1, 2]], "scale": [0.1]}})
    assert (status, body) == (200, {"outputs": {"count": [2], "sum": [0.3]}})
    status, body = call(server, "POST", PREDICT, {
        "signature_name": "total_length", "inputs": ["ab", "c"]})
    assert (status, body) == (200, {"outputs": 3 + 2 * LENGTH_OFFSET})


def test_versions_answer_differently(server):
    request = {"signature_name": "length", "instances": ["abcd"]}
    assert call(server, "POST", "/v1/models/toy/versions/1:predict", request) == (
        200, {"predictions": [4]})
    assert call(server, "POST", "/v1/models/toy/versions/2:predict", request) == (
        200, {"predictions": [4 + LENGTH_OFFSET]})


@pytest.mark.parametrize("body, message", [
    ("{not json", r"not valid JSON"),
    ('["a list"]', r"JSON list, not an object"),
    ({"signature_name": "length"}, r"exactly one of \"instances\".*neither"),
    ({"instances": ["a"], "inputs": ["a"]}, r"exactly one of \"instances\".*both"),
    ({"signature_name": "classify", "instances": ["a"]},
     r"Signature 'classify' not found.*'capped_sum', 'length', 'serving_default', 'total_length', 'weighted_sum'"),
    ({"instances": [{"txt": "a"}]}, r"unknown input\(s\) \['txt'\] and missing input\(s\) \['text'\]"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [1]}]},
     r"missing input\(s\) \['scale'\].*'ids', 'scale'"),
    ({"instances": [42]}, r"'text' has a number \(42\) where text"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": ["1"], "scale": 1}]},
     r"'ids' has a string \(\"1\"\) where an integer"),
    ({"signature_name": "weighted_sum", "instances": [
        {"ids": [1, 2], "scale": 1}, {"ids": [1], "scale": 1}]}, r"'ids' is ragged"),
    ({"instances": []}, r"empty batch"),
    ({"inputs": []}, r"'text' is an empty batch"),
    ({"instances": ["x" * 1001]}, r"Over-long text.*1001 bytes.*--max_string_bytes=1000"),
    ({"signature_name": "weighted_sum", "instances": [{"ids": [-1], "scale": 1}]},
     r"InvalidArgumentError.*ids must be non-negative"),
    ({"signature_name": "total_length", "instances": ["a"]},
     r"Output 'total'.*not one row per instance.*columnar format"),
])
def test_bad_requests_get_400_and_the_server_keeps_serving(server, body, message):
    status, response = call(server, "POST", PREDICT, body)
    assert status == 400
    assert re.search(message, response["error"], re.DOTALL), response["error"]
    assert_still_serving(server)


@pytest.mark.parametrize("method, path, expected_status, message", [
    ("GET", "/v1/models/other", 404, r"'other' is not served.*'toy'"),
    ("POST", "/v1/models/other:predict", 404, r"'other' is not served"),
    ("GET", "/v1/models/toy/versions/9/metadata", 404, r"Version 9 .*\[1, 2\]"),
    ("POST", "/v1/models/toy/versions/9:predict", 404, r"Version 9"),
    ("GET", "/v2/models/toy", 404, r"Unknown path '/v2/models/toy'.*:predict"),
    ("POST", "/v1/models/toy:classify", 501, r":classify is not supported.*Use :predict"),
    ("POST", "/v1/models/toy/versions/1:regress", 501, r":regress is not supported"),
    ("GET", "/v1/models/toy/labels/stable", 404, r"Version labels are not supported.*/versions/N"),
    ("GET", "/v1/models/toy/versions/00001", 200, None),
    ("GET", PREDICT, 405, r"GET is not allowed.*use POST"),
    ("POST", "/v1/models/toy/metadata", 405, r"POST is not allowed.*use GET"),
    ("DELETE", "/v1/models/toy", 405, r"DELETE is not allowed"),
])
def test_unknown_targets_get_404_and_wrong_methods_405(
        server, method, path, expected_status, message):
    body = {"instances": ["a"]} if method == "POST" else None
    status, response = call(server, method, path, body)
    assert status == expected_status
    if message:
        assert re.search(message, response["error"], re.DOTALL), response["error"]
    assert_still_serving(server)


def test_oversized_body_gets_413_without_being_read(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    # Only the headers are sent: the server must answer without waiting for
    # the 200 kB it was announced.
    connection.putrequest("POST", PREDICT)
    connection.putheader("Content-Length", "200000")
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413
    assert "--max_body_bytes=100000" in json.loads(response.read())["error"]
    assert response.getheader("Connection") == "close"
    connection.close()
    assert_still_serving(server)


def test_a_body_of_max_body_bytes_is_read_and_one_byte_more_gets_413(server):
    body = json.dumps({"instances": ["ok"]}).encode()
    body += b" " * (100_000 - len(body))  # JSON may end with white space.
    assert call(server, "POST", PREDICT, body) == (200, {"predictions": [{
        "first_byte": "o", "length": 2 + LENGTH_OFFSET, "text_bytes": {"b64": "b2s="},
        "upper": "OK"}]})
    status, response = call(server, "POST", PREDICT, body + b" ")
    assert status == 413
    assert response["error"].startswith(
        "The request body is 100001 bytes, more than the server's --max_body_bytes=100000.")
    assert_still_serving(server)


def test_missing_content_length_gets_411(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.putrequest("POST", PREDICT)
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 411
    assert "Content-Length" in json.loads(response.read())["error"]
    connection.close()


def test_unexpected_errors_get_500_logged_with_their_traceback(server, monkeypatch, caplog):
    def broken_status(model_name, version=None):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.model_store, "status", broken_status)
    with caplog.at_level(logging.ERROR, logger="tfnlp.serve"):
        status, body = call(server, "GET", "/v1/models/toy")
    assert status == 500
    assert "RuntimeError: disk on fire" in body["error"]
    logged, = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert logged.getMessage() == "Internal error on GET /v1/models/toy"
    assert "broken_status" in caplog.text  # The traceback.
    monkeypatch.undo()
    assert call(server, "GET", "/v1/models/toy")[0] == 200
    assert_still_serving(server)


def test_one_log_line_per_request(model_store, caplog):
    def logged_lines():
        return [record.getMessage() for record in caplog.records if record.name == "tfnlp.serve"]

    # A server of its own: the shared one may still be writing the line of
    # an earlier test's request (lines are written after the answer is sent).
    server = start_server(model_store)
    try:
        with caplog.at_level(logging.INFO, logger="tfnlp.serve"):
            call(server, "GET", "/v1/models/toy/versions/1")
            call(server, "POST", "/nowhere", {})
            deadline = time.monotonic() + 5
            while len(logged_lines()) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
    finally:
        server.shutdown()
    lines = logged_lines()
    assert len(lines) == 2, lines
    assert re.fullmatch(r"GET /v1/models/toy/versions/1 200 \d+\.\d ms", lines[0])
    assert re.fullmatch(r"POST /nowhere 404 \d+\.\d ms", lines[1])


def test_concurrent_predictions_are_merged_into_fewer_calls(model_store):
    # A long batch timeout, so that the 16 requests surely meet.
    server = start_server(model_store, batch_timeout_micros=300_000)
    calls = model_store.get("toy", 1).loaded.calls
    calls_before = int(calls.numpy())
    texts = ["x" * length for length in range(1, 17)]
    results = [None] * len(texts)

    def predict(index):
        results[index] = call(server, "POST", "/v1/models/toy/versions/1:predict",
                              {"instances": [texts[index]]})

    try:
        threads = [threading.Thread(target=predict, args=(index,)) for index in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        server.shutdown()
    assert [(status, body["predictions"][0]["upper"], body["predictions"][0]["length"])
            for status, body in results] == [(200, text.upper(), len(text)) for text in texts]
    assert int(calls.numpy()) - calls_before < 16


def toy_answer(text):
    """The toy model's answer to one ASCII text, worked out by hand."""
    return {"predictions": [{
        "first_byte": text[0], "length": len(text) + LENGTH_OFFSET,
        "text_bytes": {"b64": base64.b64encode(text.encode()).decode()}, "upper": text.upper(),
    }]}


def test_load_test_of_2000_requests(server):
    # Sixteen different requests in turn: each answer must be its own, so
    # rows mixed up between merged requests count as errors.
    texts = [f"text {index} " + "x" * index for index in range(16)]
    expected = [toy_answer(text) for text in texts]

    def check(body_index, answer):
        if json.loads(answer) != expected[body_index]:
            return f"answer to {texts[body_index]!r}: {answer[:200]!r}"
        return None

    result = run_load_test(f"{server.url}{PREDICT}",
                           body=[json.dumps({"instances": [text]}) for text in texts],
                           requests=2000, concurrency=16, timeout_seconds=120, check=check)
    print(f"\nload test: {json.dumps(result)}")
    assert result["requests"] == 2000 and not result["timed_out"]
    assert result["errors"] == 0, result["first_error"]
    assert 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["requests_per_second"] > 0


def test_load_test_counts_wrong_answers_as_errors(server):
    result = run_load_test(f"{server.url}{PREDICT}", body='{"instances": ["ab"]}',
                           requests=5, concurrency=2, timeout_seconds=60,
                           check=lambda body_index, answer: "always wrong")
    assert (result["requests"], result["errors"], result["first_error"]) == (5, 5, "always wrong")


def exchange(server, data, seconds=10, close_sending=False):
    """Sends raw bytes on a new connection (then closes its sending side,
    if told); returns the raw answer, read until the server closes the
    connection or `seconds` pass."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=seconds) as connection:
        connection.sendall(data)
        if close_sending:
            connection.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := connection.recv(65536):
                answer += chunk
        except TimeoutError:
            pass
    return answer


def status_and_error(answer):
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body)["error"] if body else None


@pytest.mark.parametrize("length", ["\u00b2", "\u0661\u0662", "1e3", "-5", "9" * 40])
def test_a_content_length_that_is_not_ascii_digits_gets_411(server, length):
    request = (f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
               "\r\n").encode("utf-8") + b'{"instances": ["a"]}'
    status, error = status_and_error(exchange(server, request))
    assert status == 411
    assert "ASCII digits" in error
    assert_still_serving(server)


@pytest.mark.parametrize("length, status", [
    pytest.param("0", 400, id="0"),  # Read: an empty body is not JSON.
    # Read: the longest number, more than --max_body_bytes.
    pytest.param("9" * 18, 413, id="18_digits"),
    pytest.param("", 411, id="empty"), pytest.param("9" * 19, 411, id="19_digits"),
])
def test_a_content_length_of_1_to_18_ascii_digits_is_read_and_none_or_more_get_411(
        server, length, status):
    request = (f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               f"Content-Length: {length}\r\n\r\n").encode("ascii")
    answer_status, error = status_and_error(exchange(server, request))
    assert answer_status == status, error
    assert ("ASCII digits" in error) == (status == 411)
    assert_still_serving(server)


def send_in_parts(server, head, parts, gap_seconds):
    """Sends `head`, then each of `parts` `gap_seconds` after the one
    before, on a new connection; returns the raw answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(head)
        for part in parts:
            time.sleep(gap_seconds)
            try:
                connection.sendall(part)
            except OSError:
                break  # The server answered, and closed, before reading it all.
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_the_request_timeout_bounds_the_whole_body_not_each_read(server):
    # --request_timeout=1: a body that arrives in parts 0.3 s apart within
    # the second is read; one whose parts come 0.4 s apart over 2 seconds
    # gets 408, though no single wait is as long as the timeout.
    body = json.dumps({"instances": ["ok"]}).encode()
    head = (f"POST {PREDICT} HTTP/1.1\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    answer = send_in_parts(server, head + body[:5], [body[5:10], body[10:]], gap_seconds=0.3)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    started = time.monotonic()
    parts = [body[index:index + 1] for index in range(5, 10)] + [body[10:]]
    answer = send_in_parts(server, head + body[:5], parts, gap_seconds=0.4)
    status, error = status_and_error(answer)
    assert status == 408, error
    received = int(re.search(r"Only (\d+) of the", error).group(1))
    assert 5 < received < len(body)  # Parts arrived before the deadline, not all.
    assert 1 <= time.monotonic() - started < 5
    assert_still_serving(server)


def test_a_body_shorter_than_its_content_length_gets_408_after_the_request_timeout(server):
    started = time.monotonic()
    answer = exchange(server, f"POST {PREDICT} HTTP/1.1\r\nContent-Length: 100\r\n\r\n"
                              '{"instances"'.encode())
    seconds = time.monotonic() - started
    status, error = status_and_error(answer)
    assert status == 408
    assert "Only 12 of the 100 bytes" in error and "--request_timeout=1 seconds" in error
    assert b"Connection: close" in answer
    assert 1 <= seconds < 5
    assert_still_serving(server)


def test_a_body_cut_short_by_the_client_closing_gets_400(server):
    answer = exchange(server, f"POST {PREDICT} HTTP/1.1\r\nContent-Length: 100\r\n\r\n"
                              '{"inst'.encode(), close_sending=True)
    status, error = status_and_error(answer)
    assert status == 400
    assert error.startswith("The request body ended after 6 of the 100 bytes")


def test_head_answers_as_get_without_a_body_and_options_with_allow(server):
    answer = exchange(server, b"HEAD /v1/models/toy HTTP/1.1\r\nConnection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert body == b""
    get_status, get_body = call(server, "GET", "/v1/models/toy")
    assert f"Content-Length: {len(rest_api.json_bytes(get_body))}".encode() in head
    answer = exchange(server, f"HEAD {PREDICT} HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 405 ") and b"Allow: POST, OPTIONS" in answer
    assert answer.endswith(b"\r\n\r\n")
    for path, allow in ((PREDICT, b"POST, OPTIONS"), ("/v1/models/toy/metadata",
                                                      b"GET, HEAD, OPTIONS")):
        answer = exchange(server, f"OPTIONS {path} HTTP/1.1\r\nConnection: close\r\n\r\n"
                          .encode())
        assert answer.startswith(b"HTTP/1.1 204 No Content")
        assert b"Allow: " + allow in answer
        assert answer.endswith(b"\r\n\r\n")  # No body.


@pytest.mark.parametrize("request_line, status", [
    (b"BREW /v1/models/toy HTTP/1.1", 501),
    (b"GARBAGE", 400),
    (b"GET /v1/models/toy HTTP/9.9", 505),
    (b"GET /v1/models/toy HTTP/1.1 extra", 400),
])
def test_unknown_methods_and_malformed_request_lines_get_an_http_response(
        server, request_line, status):
    answer = exchange(server, request_line + b"\r\n\r\n")
    assert re.match(rb"HTTP/1\.[01] %d " % status, answer), answer[:100]
    assert status_and_error(answer)[0] == status
    assert "The paths served are" in status_and_error(answer)[1]
    assert_still_serving(server)


def test_more_instances_than_the_limit_get_413(server):
    status, response = call(server, "POST", PREDICT, {"instances": ["a"] * 50})
    assert status == 200 and len(response["predictions"]) == 50
    status, response = call(server, "POST", PREDICT, {"instances": ["a"] * 51})
    assert status == 413
    assert "51 instances, more than the server's --max_instances_per_request=50" in (
        response["error"])
    assert_still_serving(server)


def test_a_request_over_max_batch_size_runs_in_batches_and_answers_in_order(model_store):
    server = start_server(model_store, max_batch_size=4, batch_timeout_micros=0)
    calls = model_store.get("toy", 2).loaded.calls
    texts = [f"text {index}" for index in range(10)]
    try:
        calls_before = int(calls.numpy())
        status, rows = call(server, "POST", PREDICT, {"instances": texts})
        calls_made = int(calls.numpy()) - calls_before
        columns = call(server, "POST", PREDICT, {"inputs": texts})
    finally:
        server.shutdown()
    assert status == 200
    assert [row["upper"] for row in rows["predictions"]] == [text.upper() for text in texts]
    assert calls_made == 3  # 4 + 4 + 2 rows.
    assert columns[1]["outputs"]["upper"] == [text.upper() for text in texts]


def test_an_optional_input_takes_the_export_s_default_and_a_bad_value_gets_400(server):
    status, body = call(server, "POST", "/v1/models/toy:predict", {
        "signature_name": "capped_sum", "instances": [{"ids": [5, 20]}, {"ids": [5, 20], "cap": 2}]})
    assert (status, body) == (200, {"predictions": [15, 4]})
    status, body = call(server, "POST", "/v1/models/toy:predict", {
        "signature_name": "capped_sum", "instances": [{"ids": [5], "cap": 0}]})
    assert status == 400 and "cap=0 must be >= 1" in body["error"]
    assert_still_serving(server)
