"""The HTTP side of the server: routing, size limits and one log line per
request.

The paths are TensorFlow Serving's REST API:

- `GET  /v1/models/NAME[/versions/N]`: the model's status;
- `GET  /v1/models/NAME[/versions/N]/metadata`: its signatures;
- `POST /v1/models/NAME[/versions/N]:predict`: run a signature
  (`tfnlp.serve.rest_api` has the request and response formats).

Every answer is JSON; errors are `{"error": "..."}` with status 400 (bad
request), 404 (unknown path, model or version), 405 (wrong method), 411 (no
Content-Length), 413 (body over `max_body_bytes`, refused before it is read)
or 500 (anything unexpected). The server keeps serving after all of them.
Each request is logged as one line, `METHOD PATH STATUS LATENCY ms`, on the
`tfnlp.serve` logger.
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
    r"/v1/models/(?P<model>[^/:]+)(?:/versions/(?P<version>\d+))?"
    r"(?P<endpoint>/metadata|:predict)?"
)
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
    """

    daemon_threads = True
    request_queue_size = 128  # Pending connections; the default 5 resets bursts.

    def __init__(self, model_store, host="127.0.0.1", port=8501, max_batch_size=16,
                 batch_timeout_micros=2000, max_body_bytes=10 * 2**20,
                 max_string_bytes=2**16):
        super().__init__((host, port), _RequestHandler)
        self.model_store = model_store
        self.batcher = Batcher(max_batch_size, batch_timeout_micros)
        self.max_body_bytes = max_body_bytes
        self.max_string_bytes = max_string_bytes

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
        headers = {}
        try:
            status, body = http.HTTPStatus.OK, self._respond()
        except rest_api.RequestError as error:
            status, body = error.status, rest_api.error_body(error.message)
            headers = error.headers
        except ServableNotFoundError as error:
            status, body = http.HTTPStatus.NOT_FOUND, rest_api.error_body(str(error))
        except ModelRunError as error:
            status, body = http.HTTPStatus.BAD_REQUEST, rest_api.error_body(str(error))
        except Exception as error:
            logger.debug("Internal error on %s %s", self.command, self.path, exc_info=True)
            status, body = http.HTTPStatus.INTERNAL_SERVER_ERROR, rest_api.error_body(
                f"Internal error: {type(error).__name__}: {error}. The server is "
                "still serving; if the request looks right, report this error "
                "with the request."
            )
        self._send_json(status, body, headers)
        self._log_request(status, started)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def _respond(self):
        """The JSON answer to a request that is not an error."""
        path = urllib.parse.urlsplit(self.path).path
        match = _MODEL_PATH.fullmatch(path)
        if match is None:
            raise rest_api.RequestError(
                f"Unknown path {path!r}. The paths served are {_API_SUMMARY}.",
                status=http.HTTPStatus.NOT_FOUND,
            )
        endpoint = match["endpoint"]
        allowed = "POST" if endpoint == ":predict" else "GET"
        if self.command != allowed:
            raise rest_api.RequestError(
                f"{self.command} is not allowed on {path}; use {allowed}.",
                status=http.HTTPStatus.METHOD_NOT_ALLOWED, headers={"Allow": allowed},
            )
        model_name = match["model"]
        version = int(match["version"]) if match["version"] else None
        store = self.server.model_store
        if endpoint is None:
            return store.status(model_name, version)
        if endpoint == "/metadata":
            return store.metadata(model_name, version)
        return self._predict(model_name, version)

    def _predict(self, model_name, version):
        request_object = rest_api.parse_json_object(self._read_body())
        model_version = self.server.model_store.get(model_name, version)
        request = rest_api.parse_predict_request(
            request_object, model_version.signatures, self.server.max_string_bytes
        )
        signature = request.signature
        if signature.batchable:
            outputs = self.server.batcher.run(
                (model_version.version, signature.name), signature, request.inputs
            )
        else:
            outputs = signature(request.inputs)
        return rest_api.format_predict_response(outputs, request)

    def _read_body(self):
        """The request body, refused unread when over `max_body_bytes`."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise rest_api.RequestError(
                "Chunked request bodies are not supported. Send the body with a "
                "Content-Length header.", status=http.HTTPStatus.LENGTH_REQUIRED,
            )
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            raise rest_api.RequestError(
                f"The Content-Length header is {length!r}; a predict request needs "
                "the length of its JSON body in bytes.",
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
        return self.rfile.read(length)

    def _send_json(self, status, body, headers):
        data = rest_api.json_bytes(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        if not self.close_connection and self._has_unread_body():
            self.close_connection = True  # What follows on the connection is unknown.
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
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
        line or headers, unsupported method) in JSON, with one log line."""
        started = time.perf_counter()
        self._body_read = False
        self.close_connection = True
        phrase = message or http.HTTPStatus(code).phrase
        self._send_json(code, rest_api.error_body(
            f"{phrase}. The paths served are {_API_SUMMARY}."), {})
        self._log_request(code, started)

    def log_request(self, code="-", size="-"):
        """Does nothing: `_handle` logs each request once, with its latency."""

    def log_message(self, format, *args):
        logger.debug(format, *args)
