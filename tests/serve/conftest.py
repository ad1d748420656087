"""Fixtures of the server tests: the toy export, its store and a server."""

import pytest

from tests.serve.toy_models import export_toy_model
from tfnlp.serve.http_server import start_server
from tfnlp.serve.model_store import ModelStore

MODEL_NAME = "toy"


@pytest.fixture(scope="session")
def toy_export_dir(tmp_path_factory):
    """An export directory with versions 1 and 2 of the toy model."""
    return export_toy_model(tmp_path_factory.mktemp("exports") / MODEL_NAME)


@pytest.fixture(scope="session")
def model_store(toy_export_dir):
    return ModelStore(toy_export_dir)


@pytest.fixture(scope="session")
def server(model_store):
    """A server of the toy model on a free port, with small limits."""
    server = start_server(model_store, max_body_bytes=100_000, max_string_bytes=1000,
                          max_instances_per_request=50, request_timeout=1.0)
    yield server
    server.shutdown()
