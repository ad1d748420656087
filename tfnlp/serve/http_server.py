"""The HTTP side of the server: routing, size limits and one log line per
request.

The paths are TensorFlow Serving's REST API:

- `GET  /v1/models/NAME[/versions/N]`: the model's status;
- `GET  /v1/models/NAME[/versions/N]/metadata`: its signatures;
- `POST /v1/models/NAME[/versions/N]:predict`: run a signature
  (`tfnlp.serve.rest_api` has the request and response formats).

`HEAD` answers as `GET` without the body, and `OPTIONS` with 204 and the
`Allow` header of the path. Not supported, and answered so:
`:classify` and `:regress` (TF Serving's APIs for `tf.Example` inputs; use
`:predict`) get 501, and version labels (`/labels/NAME`) 404.

Every other answer is JSON; errors are `{"error": "..."}` with status 400
(bad request, including a body that ends before its Content-Length), 404
(unknown path, model or version), 405 (wrong method for the path), 408 (the
body did not arrive within `request_timeout`), 411 (no Content-Length, or
one that is not a number), 413 (body over `max_body_bytes`, refused before
it is read, or more instances than `max_instances_per_request`), 501
(unknown method) or 500 (a fault of the server's own, logged with its
traceback). The server keeps serving after all of them. Each request is
logged as one line, `METHOD PATH STATUS LATENCY ms`, on the `tfnlp.serve`
logger.
"""

import http
import logging
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tfnlp.serve import rest_api
from tfnlp.serve.batching import Batcher
from tfnlp.serve.model_store import ModelRunError, ServableNotFoundError

logger = logging.getLogger("tfnlp.serve")

_MODEL_PATH = re.compile(
    r"/v1/models/(?P<model>[^/:]+)"
    r"(?:/versions/(?P<version>[0-9]+)|/labels/(?P<label>[^/:]+))?"
    r"(?P<endpoint>/metadata|:predict|:classify|:regress)?"
)
_CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
_API_SUMMARY = (
    "GET /v1/models/NAME[/versions/N], GET /v1/models/NAME[/versions/N]/metadata "
    "and POST /v1/models/NAME[/versions/N]:predict"
)


class ModelServer(ThreadingHTTPServer):
    """A TensorFlow-Serving-compatible REST server for one model's versions.

    Call `serve_forever()`, or `start()` to serve from a background thread;
    `shutdown()` stops serving and closes the socket.

    Args:
        model_store: the `ModelStore` to serve.
        host: the address to listen on.
        port: the port to listen on; 0 picks a free one (see `port`).
        max_batch_size: the most rows in one merged predict call.
        batch_timeout_micros: the longest a predict request waits for others
            to join its batch.
        max_body_bytes: the largest request body accepted; larger ones get
            413 without being read.
        max_string_bytes: the longest string input accepted.
        max_instances_per_request: the most instances (rows) in one predict
            request; larger ones get 413.
        request_timeout: the longest, in seconds, a request body may take
            to arrive; a slower (or truncated) one gets 408.
        max_new_tokens: the most new tokens a request may ask a
            text-generation signature for (its `max_new_tokens` input);
            more get 400. None: the export's own limit only.
    """

    daemon_threads = True
    request_queue_size = 128  # Pending connections; the default 5 resets bursts.

    def __init__(self, model_store, host="127.0.0.1", port=8501, max_batch_size=16,
                 batch_timeout_micros=2000, max_body_bytes=10 * 2**20,
                 max_string_bytes=2**16, max_instances_per_request=128,
                 request_timeout=10.0, max_new_tokens=None):
        super().__init__((host, port), _RequestHandler)
        self.model_store = model_store
        self.batcher = Batcher(max_batch_size, batch_timeout_micros)
        self.max_body_bytes = max_body_bytes
        self.max_string_bytes = max_string_bytes
        self.max_instances_per_request = max_instances_per_request
        self.request_timeout = request_timeout
        self.input_limits = ({} if max_new_tokens is None else
                             {"max_new_tokens": (max_new_tokens, "--max_new_tokens")})

    @property
    def port(self):
        """The port the server listens on."""
        return self.server_address[1]

    @property
    def url(self):
        """`http://HOST:PORT` of the server."""
        return f"http://{self.server_address[0]}:{self.port}"

    def start(self):
        """Serves from a daemon thread; returns the server."""
        threading.Thread(target=self.serve_forever, daemon=True, name="model-server").start()
        return self

    def shutdown(self):
        """Stops serving and closes the listening socket."""
        super().shutdown()
        self.server_close()


def start_server(model_store, **options):
    """Starts a `ModelServer` in a background thread.

    Args:
        model_store: the `ModelStore` to serve.
        **options: the keyword arguments of `ModelServer` (`host`, `port`,
            `max_batch_size`, ...); `port` defaults to 0, a free port.

    Returns:
        The running `ModelServer`; its `port` is the one it listens on.
    """
    options.setdefault("port", 0)
    return ModelServer(model_store, **options).start()


class _RequestHandler(BaseHTTPRequestHandler):
    """Answers one connection's requests from `self.server` (a `ModelServer`)."""

    protocol_version = "HTTP/1.1"  # Keep-alive connections.
    server_version = "tfnlp-serve"
    timeout = 60  # Seconds a connection may stay silent.
    # The headers and the body go out in two writes; with Nagle's algorithm
    # the second would wait for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def _handle(self):
        """Answers any method: the routing decides which one a path takes."""
        started = time.perf_counter()
        self._body_read = False
        try:
            status, body, headers = self._respond()
            data = b"" if body is None else rest_api.json_bytes(body)
        except Exception as error:
            status, message, headers = self._error_answer(error)
            data = rest_api.json_bytes(rest_api.error_body(message))
        # Logged before the response goes out, so that a client that stops
        # the server once it has its answer finds the request in the log.
        self._log_request(status, started)
        self._send(status, data, headers)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _handle

    def _error_answer(self, error):
        """The status, message and headers that answer `error`."""
        if isinstance(error, rest_api.RequestError):
            return error.status, error.message, error.headers
        if isinstance(error, ServableNotFoundError):
            return http.HTTPStatus.NOT_FOUND, str(error), {}
        if isinstance(error, ModelRunError):
            return http.HTTPStatus.BAD_REQUEST, str(error), {}
        logger.error("Internal error on %s %s", self.command, self.path, exc_info=error)
        return http.HTTPStatus.INTERNAL_SERVER_ERROR, (
            f"Internal error: {type(error).__name__}: {error}. The server is still "
            "serving; if the request looks right, report this error with the request "
            "(the server's log has the traceback)."
        ), {}

    def _respond(self):
        """The status, JSON answer (None for no body) and extra headers of a
        request that is not an error."""
        path = urllib.parse.urlsplit(self.path).path
        match = _MODEL_PATH.fullmatch(path)
        if match is None:
            raise rest_api.RequestError(
                f"Unknown path {path!r}. The paths served are {_API_SUMMARY}.",
                status=http.HTTPStatus.NOT_FOUND,
            )
        endpoint = match["endpoint"]
        if endpoint in (":classify", ":regress"):
            raise rest_api.RequestError(
                f"{endpoint} is not supported by this server (TensorFlow Serving's "
                f"{endpoint[1:]} API reads tf.Example inputs). Use :predict with the "
                "signature's inputs; GET /v1/models/NAME/metadata lists them.",
                status=http.HTTPStatus.NOT_IMPLEMENTED,
            )
        if match["label"] is not None:
            raise rest_api.RequestError(
                f"Version labels are not supported by this server, so "
                f"{match['label']!r} is unknown. Name the version with /versions/N "
                "(GET /v1/models/NAME lists them), or leave it out for the newest.",
                status=http.HTTPStatus.NOT_FOUND,
            )
        allowed = ["POST"] if endpoint == ":predict" else ["GET", "HEAD"]
        if self.command == "OPTIONS":
            return http.HTTPStatus.NO_CONTENT, None, {"Allow": ", ".join(allowed + ["OPTIONS"])}
        if self.command not in allowed:
            raise rest_api.RequestError(
                f"{self.command} is not allowed on {path}; use {allowed[0]}.",
                status=http.HTTPStatus.METHOD_NOT_ALLOWED,
                headers={"Allow": ", ".join(allowed + ["OPTIONS"])},
            )
        model_name = match["model"]
        version = int(match["version"]) if match["version"] else None
        store = self.server.model_store
        if endpoint is None:
            return http.HTTPStatus.OK, store.status(model_name, version), {}
        if endpoint == "/metadata":
            return http.HTTPStatus.OK, store.metadata(model_name, version), {}
        return http.HTTPStatus.OK, self._predict(model_name, version), {}

    def _predict(self, model_name, version):
        request_object = rest_api.parse_json_object(self._read_body())
        model_version = self.server.model_store.get(model_name, version)
        request = rest_api.parse_predict_request(
            request_object, model_version.signatures, self.server.max_string_bytes,
            self.server.max_instances_per_request, self.server.input_limits,
        )
        signature = request.signature
        results = []
        for part in request.parts:
            if signature.batchable:
                batches = self.server.batcher.run(
                    (model_version.version, signature.name), signature, part.inputs)
            else:
                batches = [(slice(None), signature(part.inputs))]
            results += [(part.rows[rows], outputs) for rows, outputs in batches]
        return rest_api.format_predict_response(request, results)

    def _read_body(self):
        """The request body, refused unread when over `max_body_bytes`."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise rest_api.RequestError(
                "Chunked request bodies are not supported. Send the body with a "
                "Content-Length header.", status=http.HTTPStatus.LENGTH_REQUIRED,
            )
        length = self.headers.get("Content-Length")
        if length is None or not _CONTENT_LENGTH.fullmatch(length.strip()):
            raise rest_api.RequestError(
                f"The Content-Length header is {length!r}; a predict request needs "
                "the length of its JSON body in bytes (ASCII digits).",
                status=http.HTTPStatus.LENGTH_REQUIRED,
            )
        length = int(length)
        limit = self.server.max_body_bytes
        if length > limit:
            raise rest_api.RequestError(
                f"The request body is {length} bytes, more than the server's "
                f"--max_body_bytes={limit}. Send fewer instances per request, or "
                "restart the server with a larger --max_body_bytes.",
                status=http.HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            )
        self._body_read = True
        keep_alive, self.close_connection = not self.close_connection, True
        body = self._receive(length)  # Raises, closing the connection, unless it all arrives.
        self.close_connection = not keep_alive
        return body

    def _receive(self, length):
        """`length` bytes of the body, within `request_timeout` seconds."""
        timeout = self.server.request_timeout
        deadline = time.monotonic() + timeout
        chunks, received = [], 0
        try:
            while received < length:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self.connection.settimeout(remaining)
                chunk = self.rfile.read1(min(length - received, 2**20))
                if not chunk:
                    raise rest_api.RequestError(
                        f"The request body ended after {received} of the {length} bytes "
                        "its Content-Length announced. Send a Content-Length that is "
                        "the body's length in bytes."
                    )
                chunks.append(chunk)
                received += len(chunk)
        except TimeoutError:
            raise rest_api.RequestError(
                f"Only {received} of the {length} bytes the Content-Length announced "
                f"arrived within the server's --request_timeout={timeout:g} seconds. "
                "Send a Content-Length that is the body's length in bytes.",
                status=http.HTTPStatus.REQUEST_TIMEOUT,
            ) from None
        finally:
            self.connection.settimeout(self.timeout)
        return b"".join(chunks)

    def _send(self, status, data, headers):
        """Sends the status line, the headers and (except to HEAD) `data`."""
        if self.request_version == "HTTP/0.9":  # A malformed request line.
            self.request_version = "HTTP/1.0"  # Answer with a status line and headers.
        self.send_response(status)
        if status != http.HTTPStatus.NO_CONTENT:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        if not self.close_connection and self._has_unread_body():
            self.close_connection = True  # What follows on the connection is unknown.
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and status != http.HTTPStatus.NO_CONTENT:
            self.wfile.write(data)

    def _has_unread_body(self):
        if self._body_read:
            return False
        length = self.headers.get("Content-Length", "0").strip()
        return length != "0" or "Transfer-Encoding" in self.headers

    def _log_request(self, status, started):
        milliseconds = (time.perf_counter() - started) * 1000
        logger.info("%s %s %d %.1f ms", self.command or "-", getattr(self, "path", "-"),
                    status, milliseconds)

    def send_error(self, code, message=None, explain=None):
        """Answers requests `http.server` rejects itself (malformed request
        line or headers, unknown method) with an HTTP response whose body is
        the JSON error, with one log line."""
        started = time.perf_counter()
        self._body_read = False
        self.close_connection = True
        self.headers = getattr(self, "headers", None) or {}
        phrase = message or http.HTTPStatus(code).phrase
        data = rest_api.json_bytes(rest_api.error_body(
            f"{phrase}. The paths served are {_API_SUMMARY}."))
        self._log_request(code, started)
        self._send(code, data, {})

    def log_request(self, code="-", size="-"):
        """Does nothing: `_handle` logs each request once, with its latency."""

    def log_message(self, format, *args):
        logger.debug(format, *args)
