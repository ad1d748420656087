"""A bounded HTTP load generator: N requests from C concurrent connections.

Usable from tests and benchmarks (`run_load_test`) and from the shell:

    python -m tfnlp.serve.load_test --url=http://127.0.0.1:8501/v1/models/m:predict \\
        --requests=2000 --concurrency=16 --body='{"instances": ["some text"]}'

prints one JSON line: {"requests": ..., "errors": ..., "p50_ms": ...,
"p99_ms": ..., "requests_per_second": ..., "timed_out": ...,
"first_error": ...}. Each
connection is a keep-alive `http.client` connection in its own thread; a
request counts as an error unless it is answered 200 (and, from Python,
unless its answer passes `check`). The run stops after `requests` requests
or `timeout_seconds`, whichever comes first.
"""

import http.client
import json
import math
import threading
import time
import urllib.parse

from tfnlp.command_line import ArgumentParser, run_main


class _Results:
    """Latencies and errors, shared by the client threads."""

    def __init__(self, requests):
        self._lock = threading.Lock()
        self._next_index = 0
        self._requests = requests
        self.latencies_ms = []
        self.errors = 0
        self.first_error = None

    def take_request(self):
        """The index of the next request to send, or None when all are taken."""
        with self._lock:
            self._next_index += 1
            return self._next_index - 1 if self._next_index <= self._requests else None

    def record(self, latency_ms, error=None):
        """Records one request; `error` describes its failure, if any."""
        with self._lock:
            self.latencies_ms.append(latency_ms)
            if error is not None:
                self.errors += 1
                self.first_error = self.first_error or error


def _percentile(sorted_values, fraction):
    """The nearest-rank percentile of ascending values (0 when empty)."""
    if not sorted_values:
        return 0.0
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def run_load_test(url, body=None, requests=2000, concurrency=16, timeout_seconds=300.0,
                  check=None, keep_latencies=False):
    """Sends `requests` requests to `url` over `concurrency` connections.

    Args:
        url: the URL, e.g. "http://127.0.0.1:8501/v1/models/m:predict".
        body: the JSON body (str or bytes) to POST, or a list of bodies
            sent in turn (request `i` sends body `i % len(body)`); None
            sends GETs.
        requests: how many requests to send in all.
        concurrency: how many connections send at the same time.
        timeout_seconds: when to stop sending, even if requests are left.
        check: None, or a function `(body_index, answer)` called with the
            bytes of each 200 answer; what it returns, if not None, is the
            description of a wrong answer, and the request counts as an
            error.
        keep_latencies: also return every request's latency, in the order
            they ended (`latencies_ms`), for percentiles over several runs.

    Returns:
        A dict with `requests` (answered or failed), `errors` (not 200, or
        failing `check`),
        `p50_ms`, `p99_ms`, `requests_per_second`, `timed_out` and
        `first_error` (what went wrong with the first failed request, or
        None).
    """
    parts = urllib.parse.urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    method = "GET" if body is None else "POST"
    bodies = body if isinstance(body, (list, tuple)) else [body]
    payloads = [each.encode("utf-8") if isinstance(each, str) else each for each in bodies]
    headers = {} if body is None else {"Content-Type": "application/json"}
    results = _Results(requests)
    deadline = time.monotonic() + timeout_seconds

    def send_requests():
        connection = None
        while time.monotonic() < deadline:
            index = results.take_request()
            if index is None:
                break
            body_index = index % len(payloads)
            started = time.perf_counter()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(
                        parts.hostname, parts.port or 80,
                        timeout=max(deadline - time.monotonic(), 0.1))
                connection.request(method, target, body=payloads[body_index], headers=headers)
                response = connection.getresponse()
                answer = response.read()
                if response.status != 200:
                    error = f"HTTP {response.status}: {answer[:200].decode('utf-8', 'replace')}"
                else:
                    error = check(body_index, answer) if check else None
                if response.will_close:
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException) as exception:
                error = f"{type(exception).__name__}: {exception}"
                if connection is not None:
                    connection.close()
                connection = None
            results.record((time.perf_counter() - started) * 1000, error)
        if connection is not None:
            connection.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=send_requests, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0) + 1)
    elapsed = time.perf_counter() - started
    latencies = sorted(results.latencies_ms)
    kept = {"latencies_ms": list(results.latencies_ms)} if keep_latencies else {}
    return {
        "requests": len(latencies),
        "errors": results.errors,
        "p50_ms": round(_percentile(latencies, 0.50), 2),
        "p99_ms": round(_percentile(latencies, 0.99), 2),
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "timed_out": len(latencies) < requests,
        "first_error": results.first_error,
        **kept,
    }


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = ArgumentParser(prog="python -m tfnlp.serve.load_test",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="URL to send the requests to.")
    parser.add_argument("--requests", type=int, default=2000, help="Requests in all.")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="Connections sending at the same time.")
    parser.add_argument("--body", default=None, help="JSON body to POST; none sends GETs.")
    parser.add_argument("--timeout_seconds", type=float, default=300.0,
                        help="Stop after this long even if requests are left.")
    flags = parser.parse_args(argv)
    url = urllib.parse.urlsplit(flags.url)
    if url.scheme != "http" or not url.hostname:
        parser.error(f"--url={flags.url} is not an http URL; expected one such as "
                     "http://127.0.0.1:8501/v1/models/NAME:predict.")
    for name in ("requests", "concurrency"):
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, not {getattr(flags, name)}.")
    if flags.timeout_seconds <= 0:
        parser.error(f"--timeout_seconds must be positive, not {flags.timeout_seconds}.")
    if flags.body is not None:
        try:
            json.loads(flags.body)
        except ValueError as error:
            parser.error(f"--body is not JSON ({error}); expected a request body such as "
                         '\'{"instances": ["some text"]}\'.')
    return flags


def main(argv=None):
    """Runs a load test from the command line and prints its JSON line."""
    flags = parse_flags(argv)
    print(json.dumps(run_load_test(flags.url, flags.body, flags.requests,
                                   flags.concurrency, flags.timeout_seconds)))


if __name__ == "__main__":
    run_main(main)
