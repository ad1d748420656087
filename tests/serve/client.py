"""A one-request HTTP client for the server tests."""

import http.client
import json


def call(server, method, path, body=None, headers=None):
    """Sends one request; returns (status, decoded JSON body).

    `body` is sent as is when it is str or bytes, else as JSON.
    """
    if body is not None and not isinstance(body, (str, bytes)):
        body = json.dumps(body)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()
