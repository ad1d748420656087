"""Serving a real BERT export: a tiny classifier with the original uncased
vocabulary, exported by `tfnlp.export` with its text signature, behind
`tfnlp.serve` as TensorFlow Serving clients would call it."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401 (the text signature's ops)

from tests.serve.client import call
from tests.text.reference_bert_tokenizer import ReferenceBertTokenizer
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
def vocab_file(shared_data_dir):
    return shared_data_dir / "vocab" / "bert-base-uncased-vocab.txt"


@pytest.fixture(scope="module")
def classifier(vocab_file):
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(vocab_file)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    return BertClassifier(encoder, num_classes=2)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory, vocab_file, classifier):
    directory = tmp_path_factory.mktemp("serving") / "books"
    export_saved_model(classifier, str(directory),
                       BertTextPreprocessor(BertTokenizer(vocab_file), SEQUENCE_LENGTH),
                       labels=LABELS)
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


def reference_inputs(tokenizer, *segments):
    """google-research/bert's packing of one or two segments: [CLS] A [SEP]
    (B [SEP]), the longer segment losing its last token first (the second
    on a tie, `_truncate_seq_pair`), zero-padded to SEQUENCE_LENGTH."""
    segments = [tokenizer.tokenize_to_ids(text) for text in segments]
    budget = SEQUENCE_LENGTH - 1 - len(segments)
    while sum(map(len, segments)) > budget:
        max(reversed(segments), key=len).pop()
    cls_id, sep_id = tokenizer.vocabulary["[CLS]"], tokenizer.vocabulary["[SEP]"]
    ids, segment_ids = [cls_id], [0]
    for index, segment in enumerate(segments):
        ids += segment + [sep_id]
        segment_ids += [index] * (len(segment) + 1)
    padding = [0] * (SEQUENCE_LENGTH - len(ids))
    return {"input_ids": ids + padding, "input_mask": [1] * len(ids) + padding,
            "segment_ids": segment_ids + padding}


def reference_probabilities(classifier, rows):
    batch = {name: np.array([row[name] for row in rows], "int32") for name in rows[0]}
    logits = np.asarray(classifier(batch))
    return np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)


def test_pairs_and_over_long_text_are_packed_and_truncated(server, classifier, vocab_file,
                                                          sentences):
    long_text = " ".join(sentences) * 40  # far more than 64 tokens, under the byte limit
    pairs = [[sentences[0], sentences[1]], [long_text, sentences[2]], [long_text, long_text]]
    status, body = call(server, "POST", PREDICT, {"instances": pairs})
    assert status == 200, body
    served = np.array([row["probabilities"] for row in body["predictions"]])
    tokenizer = ReferenceBertTokenizer(vocab_file)
    expected = reference_probabilities(
        classifier, [reference_inputs(tokenizer, *pair) for pair in pairs])
    # Measured agreement: 6e-8 (one float32 step near 0.5).
    np.testing.assert_allclose(served, expected, atol=1e-6)
    # Even this random-weight model moves its probabilities by 1.6e-4 or more
    # when a segment is left out, so the comparison above would see it.
    for side in (0, 1):
        alone = reference_probabilities(
            classifier, [reference_inputs(tokenizer, pair[side]) for pair in pairs])
        assert np.all(np.abs(alone - expected).max(axis=-1) > 1e-5)
    status, body = call(server, "POST", PREDICT, {"instances": ["x" * 60_000]})
    assert status == 400 and "50000" in body["error"]


def test_the_readme_request_mixes_a_sentence_and_a_pair(server, classifier, vocab_file):
    # README: {"instances": ["A fine day for a walk.", ["question?", "context"]]}
    instances = ["A fine day for a walk.", ["question?", "context"], "One more."]
    status, body = call(server, "POST", PREDICT, {"instances": instances})
    assert status == 200, body
    tokenizer = ReferenceBertTokenizer(vocab_file)
    expected = reference_probabilities(classifier, [
        reference_inputs(tokenizer, *([instance] if isinstance(instance, str) else instance))
        for instance in instances])
    np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]],
                               expected, atol=1e-6)


def test_ids_outside_the_vocabulary_get_400_negative_ones_too(server, vocab_file):
    vocab_size = len(vocab_file.read_text("utf-8").splitlines())
    for bad_id, problem in ((-1, "a negative one"), (vocab_size, f"one of {vocab_size} or more"),
                            (999_999, f"one of {vocab_size} or more")):
        status, body = call(server, "POST", PREDICT, {
            "signature_name": "classify_ids", "instances": [{
                "input_ids": [101, bad_id, 102], "input_mask": [1, 1, 1],
                "segment_ids": [0, 0, 0]}]})
        assert status == 400, body
        assert f"input_ids must hold ids from 0 to {vocab_size - 1}; it has {problem}" in (
            body["error"])
    status, body = call(server, "POST", PREDICT, {
        "signature_name": "classify_ids", "instances": [{
            "input_ids": [101, 102], "input_mask": [1, 1], "segment_ids": [0, -1]}]})
    assert status == 400 and "segment_ids must hold ids from 0 to 1" in body["error"]


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
    assert set(signature["outputs"]) == {"label", "class_id", "probabilities", "logits"}


def test_load_test_of_2000_text_requests_at_concurrency_16(server, export_dir, sentences):
    # Each sentence in turn; every answer is checked against a direct call
    # of the SavedModel on that sentence.
    direct = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"](
        text=tf.constant(sentences))
    labels = [label.decode() for label in direct["label"].numpy()]
    probabilities = direct["probabilities"].numpy()

    def check(body_index, answer):
        prediction, = json.loads(answer)["predictions"]
        if prediction["label"] != labels[body_index] or not np.allclose(
                prediction["probabilities"], probabilities[body_index], rtol=0, atol=1e-6):
            return f"answer to sentence {body_index}: {prediction}"
        return None

    bodies = [json.dumps({"instances": [sentence]}) for sentence in sentences]
    result = run_load_test(f"{server.url}{PREDICT}", body=bodies, requests=2000,
                           concurrency=16, timeout_seconds=240, check=check)
    print(f"\nBERT load test: {json.dumps(result)}")
    assert result["requests"] == 2000 and not result["timed_out"]
    assert result["errors"] == 0, result["first_error"]
    assert 0 < result["p50_ms"] <= result["p99_ms"]
