"""`python -m tfnlp.serve` as a user runs it, and what it imports."""

import contextlib
import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import types

import pytest

from tests.conftest import REPOSITORY
from tests.serve.client import call
from tests.serve.test_http_server import PREDICT, exchange, status_and_error
from tfnlp.command_line import UsageError
from tfnlp.serve.__main__ import build_server, main, parse_flags

SERVING_LINE = re.compile(r"Serving model (\S+) versions (\[[\d, ]*\]) at http://127\.0\.0\.1:(\d+)")
ENVIRONMENT = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(REPOSITORY)}


def read_lines(stream, lines):
    for line in stream:
        lines.put(line)


def test_server_subprocess_serves_and_logs_each_request(toy_export_dir):
    process = subprocess.Popen(
        [sys.executable, "-m", "tfnlp.serve", f"--model_dir={toy_export_dir}",
         "--model_name=toy", "--port=0"],
        cwd=REPOSITORY, env=ENVIRONMENT, stderr=subprocess.PIPE, text=True,
    )
    lines = queue.Queue()
    threading.Thread(target=read_lines, args=(process.stderr, lines), daemon=True).start()
    try:
        match = None
        while match is None:
            match = SERVING_LINE.search(lines.get(timeout=90))
        assert match.group(1, 2) == ("toy", "[1, 2]")
        server = types.SimpleNamespace(port=int(match.group(3)))
        assert call(server, "POST", "/v1/models/toy/versions/1:predict",
                    {"signature_name": "length", "instances": ["four"]}) == (
            200, {"predictions": [4]})
        status, body = call(server, "POST", "/v1/models/toy:predict", {"instances": [1]})
        assert status == 400 and "where text" in body["error"]
        # Each line is written after its response, by the request's own
        # thread: the second request's line can come first.
        access_lines = "\n".join(lines.get(timeout=30).rstrip() for _ in range(2))
        assert re.search(r"POST /v1/models/toy/versions/1:predict 200 \d+\.\d ms$",
                         access_lines, re.MULTILINE)
        assert re.search(r"POST /v1/models/toy:predict 400 \d+\.\d ms$",
                         access_lines, re.MULTILINE)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0  # SIGTERM stops it cleanly.


def test_startup_errors_exit_with_what_was_expected(tmp_path, capsys):
    with pytest.raises(UsageError, match=r"No model versions.*EXPORT_DIR/<version>/saved_model\.pb"):
        main([f"--model_dir={tmp_path}"])
    with pytest.raises(SystemExit):
        main([f"--model_dir={tmp_path}", "--max_batch_size=0"])
    assert "--max_batch_size must be at least 1" in capsys.readouterr().err



@pytest.mark.parametrize("flag, accepted, rejected", [
    ("port", ["0", "65535"], ["-1", "65536"]),
    ("max_batch_size", ["1"], ["0"]),
    ("max_body_bytes", ["1"], ["0"]),
    ("max_string_bytes", ["1"], ["0"]),
    ("max_instances_per_request", ["1"], ["0"]),
    ("max_new_tokens", ["1"], ["0"]),
    ("batch_timeout_micros", ["0"], ["-1"]),
    ("request_timeout", ["1e-6"], ["0", "-1"]),
])
def test_each_server_flag_takes_its_limit_and_refuses_one_past_it(
        flag, accepted, rejected, capsys):
    for value in accepted:
        assert str(getattr(parse_flags(["--model_dir=x", f"--{flag}={value}"]), flag)) in (
            value, str(float(value)))
    for value in rejected:
        with pytest.raises(SystemExit):
            parse_flags(["--model_dir=x", f"--{flag}={value}"])
        assert f"--{flag} must be" in capsys.readouterr().err

@contextlib.contextmanager
def server_from_command_line(export_dir, *flags):
    """The server `python -m tfnlp.serve --model_dir=EXPORT_DIR --port=0
    FLAGS` builds (a `--port` in `flags` wins), serving from a thread."""
    server = build_server(parse_flags([f"--model_dir={export_dir}", "--port=0", *flags]))
    # A short poll interval, as shutdown() waits for the next poll.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()


def test_the_batch_flags_set_the_largest_batch_and_how_long_a_batch_waits_for_more_rows(
        toy_export_dir):
    # Not the defaults (16 rows, 2000 microseconds).
    with server_from_command_line(toy_export_dir, "--max_batch_size=2",
                                  "--batch_timeout_micros=200000") as server:
        calls = server.model_store.get("toy").loaded.calls
        calls_before = int(calls.numpy())
        started = time.monotonic()
        status, body = call(server, "POST", PREDICT, {"instances": ["a", "b", "c", "d", "e"]})
        seconds = time.monotonic() - started
        calls_made = int(calls.numpy()) - calls_before
    assert status == 200 and len(body["predictions"]) == 5
    assert calls_made == 3  # 2 + 2 + 1 rows.
    assert seconds >= 0.2  # The last row waited for other requests to join it.


def test_the_request_timeout_flag_sets_how_long_a_body_may_take_to_arrive(toy_export_dir):
    # Not the default (10 seconds).
    with server_from_command_line(toy_export_dir, "--request_timeout=0.2") as server:
        started = time.monotonic()
        answer = exchange(server, f"POST {PREDICT} HTTP/1.1\r\nContent-Length: 100\r\n\r\n"
                                  '{"instances"'.encode(), seconds=5)
        seconds = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]
    assert "--request_timeout=0.2 seconds" in status_and_error(answer)[1]
    assert 0.2 <= seconds < 5


def test_the_size_limit_flags_set_the_requests_that_are_refused(toy_export_dir):
    # Each request is over one limit, far under the defaults, and gets the
    # status of that limit.
    requests = {
        "--max_instances_per_request=3": ({"instances": ["a"] * 4}, 413),
        "--max_string_bytes=5": ({"instances": ["x" * 6]}, 400),
        "--max_body_bytes=100": (json.dumps({"instances": ["a"]}) + " " * 100, 413),
    }
    with server_from_command_line(toy_export_dir, *requests) as server:
        answers = {limit: call(server, "POST", PREDICT, request)
                   for limit, (request, _) in requests.items()}
    for limit, (status, body) in answers.items():
        assert status == requests[limit][1] and limit in body["error"], (limit, status, body)


def free_port(host):
    """A port that no socket on `host` listens on now."""
    with socket.socket() as listener:
        listener.bind((host, 0))
        return listener.getsockname()[1]


def test_the_model_name_host_and_port_flags_set_where_the_model_is_served(toy_export_dir):
    # Not the defaults (the directory's name "toy", 127.0.0.1 and 8501).
    host = "127.0.0.2"
    port = free_port(host)
    with server_from_command_line(toy_export_dir, "--model_name=renamed", f"--host={host}",
                                  f"--port={port}"):
        connection = http.client.HTTPConnection(host, port, timeout=10)
        try:
            connection.request("GET", "/v1/models/renamed")
            status = connection.getresponse().status
        finally:
            connection.close()
    assert status == 200


SYS_MODULES_CHECK = """
import json, sys
import tensorflow, tensorflow_text  # Their own imports are not the server's.
before = set(sys.modules)
from tfnlp.serve import batching, http_server, load_test, model_store, rest_api
store = model_store.ModelStore(sys.argv[1])
outputs = store.get("toy").signatures["length"]({"text": [b"abc"]})
new = sorted(set(sys.modules) - before)
print(json.dumps({
    "length": outputs["length"].tolist(),
    "new_keras": [name for name in new if name.split(".")[0] in ("keras", "keras_hub", "tf_keras")],
    "tfnlp": sorted(name for name in sys.modules if name.startswith("tfnlp")),
}))
"""


def test_server_loads_models_without_keras_or_tfnlp_model_code(toy_export_dir):
    # TensorFlow 2.21 itself imports parts of Keras when Keras is installed
    # (and tensorflow_text subclasses tf.keras.layers.Layer), so the check is
    # that the server and loading a model add no Keras module of their own.
    result = subprocess.run(
        [sys.executable, "-c", SYS_MODULES_CHECK, str(toy_export_dir)],
        cwd=REPOSITORY, env=ENVIRONMENT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["length"] == [3 + 1000]
    assert report["new_keras"] == []
    subpackages = {name.split(".")[1] for name in report["tfnlp"] if "." in name}
    assert not subpackages & {"models", "layers", "text"}, report["tfnlp"]
    assert "tfnlp.serve.model_store" in report["tfnlp"]
