"""Serving a real BERT export: a tiny classifier with the original uncased
vocabulary, exported by `tfnlp.export` with its text signature, behind
`tfnlp.serve` as TensorFlow Serving clients would call it."""

import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 (the text signature's ops)

from tests.serve.client import call
from tfnlp.export import BertTextPreprocessor, export_saved_model
from tfnlp.models import BertClassifier, BertConfig, BertEncoder
from tfnlp.serve.http_server import start_server
from tfnlp.serve.load_test import run_load_test
from tfnlp.serve.model_store import ModelStore
from tfnlp.text import BertTokenizer

LABELS = ["fiction", "history"]
SEQUENCE_LENGTH = 64
PREDICT = "/v1/models/books:predict"


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory, shared_data_dir):
    tokenizer = BertTokenizer(shared_data_dir / "vocab" / "bert-base-uncased-vocab.txt")
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    directory = tmp_path_factory.mktemp("serving") / "books"
    export_saved_model(BertClassifier(encoder, num_classes=2), str(directory),
                       BertTextPreprocessor(tokenizer, SEQUENCE_LENGTH), labels=LABELS)
    return directory


@pytest.fixture(scope="module")
def server(export_dir):
    server = start_server(ModelStore(str(export_dir)), max_string_bytes=50_000)
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def sentences(shared_data_dir):
    lines = (shared_data_dir / "mono" / "gutenberg-16-books.txt").read_text("utf-8").splitlines()
    return [line.strip() for line in lines if len(line.split()) >= 6][:5]


def test_predictions_equal_a_direct_savedmodel_call(server, export_dir, sentences):
    status, body = call(server, "POST", PREDICT, {"instances": sentences})
    assert status == 200, body
    direct = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"](
        text=tf.constant(sentences))
    assert [row["label"] for row in body["predictions"]] == [
        label.decode() for label in direct["label"].numpy()]
    np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]],
                               direct["probabilities"].numpy(), atol=1e-6)
    status, columnar = call(server, "POST", "/v1/models/books/versions/1:predict",
                            {"signature_name": "serving_default", "inputs": sentences[:2]})
    assert status == 200, columnar
    assert columnar["outputs"]["label"] == [row["label"] for row in body["predictions"][:2]]


def test_pairs_and_over_long_text_are_packed_and_truncated(server, sentences):
    long_text = " ".join(sentences) * 40  # far more than 64 tokens, under the byte limit
    status, body = call(server, "POST", PREDICT, {"instances": [[sentences[0], sentences[1]],
                                                                [long_text, long_text]]})
    assert status == 200, body
    assert all(row["label"] in LABELS for row in body["predictions"])
    status, body = call(server, "POST", PREDICT, {"instances": ["x" * 60_000]})
    assert status == 400 and "50000" in body["error"]


def test_text_requests_are_batched(export_dir):
    signature = ModelStore(str(export_dir)).get("books", None).signatures["serving_default"]
    assert signature.inputs["text"].shape is None  # unknown rank: [batch] or [batch, 2]
    assert signature.batchable


def test_metadata_describes_the_text_signature(server):
    status, body = call(server, "GET", "/v1/models/books/metadata")
    assert status == 200
    signature = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert signature["inputs"]["text"]["dtype"] == "DT_STRING"
    assert signature["inputs"]["text"]["tensor_shape"]["unknown_rank"] is True
    assert set(signature["outputs"]) == {"label", "class_id", "probabilities"}


def test_load_test_of_2000_text_requests_at_concurrency_16(server, sentences):
    body = json.dumps({"instances": [sentences[0]]})
    result = run_load_test(f"{server.url}{PREDICT}", body=body, requests=2000,
                           concurrency=16, timeout_seconds=240)
    print(f"\nBERT load test: {json.dumps(result)}")
    assert result["requests"] == 2000 and not result["timed_out"]
    assert result["errors"] == 0, result["first_error"]
    assert 0 < result["p50_ms"] <= result["p99_ms"]
