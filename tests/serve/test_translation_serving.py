"""Serving a translation export: a tiny `TransformerSeq2Seq` with a
SentencePiece model learned by `pipelines.translation_data` on Multi30k,
exported by `trainer.tasks.translation.export_translation_model`, behind
`tfnlp.serve` as TensorFlow Serving clients would call it.

The weights are random: what is under test is the serving, not the
translations, so each answer is compared with the SavedModel's own output
for the same input, called in-process. Random weights still translate each
sentence differently (by score, and mostly by text), so an answer given to
the wrong client would show. The SavedModel's own output is in turn checked
against the decoding settings of the serving record it was exported from
(`RECORD_SETTINGS`, none of them the default of `TranslationSignatures`,
`make_decoder` or `BeamSearch`, so that a setting dropped on the way to the
export shows).
"""

import base64
import json
import math
import queue
import re
import subprocess
import sys
import threading
import types

import keras
import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from tests.conftest import REPOSITORY
from tests.serve.client import call
from tests.serve.test_command_line import ENVIRONMENT, SERVING_LINE, read_lines
from tests.translation_helpers import TINY_SIZES, multi30k_translation_data
from tfnlp import decoding
from tfnlp.data.translation_schema import BOS_ID, EOS_ID, PAD_ID
from tfnlp.models import TransformerSeq2Seq
from tfnlp.models.seq2seq.generation import DECODER_TOKEN_IDS, ENCODER_TOKEN_IDS
from tfnlp.serve.http_server import start_server
from tfnlp.serve.load_test import run_load_test
from tfnlp.serve.model_store import ModelStore
from tfnlp.text import SentencePieceTokenizer
from trainer.tasks.translation import export_translation_model

MODEL_NAME = "translator"
PREDICT = f"/v1/models/{MODEL_NAME}:predict"
MAX_LENGTH = 16
TRAIN_PAIRS, EVAL_PAIRS = 200, 16
# The decoding settings of the serving record. A source of n pieces gets at
# most ceil(1.25 * n) + 3 tokens: 15, 16 and 17 (max_length - 1, max_length
# and one more) for 9, 10 and 11 pieces.
RECORD_SETTINGS = {"max_length": MAX_LENGTH, "beam_size": 2, "length_penalty": "average",
                   "length_penalty_alpha": 0.8, "max_length_a": 1.25, "max_length_b": 3}


@pytest.fixture(scope="module")
def data(tmp_path_factory, shared_data_dir):
    """The first Multi30k pairs through the job (a 400-piece joint model)."""
    return multi30k_translation_data(tmp_path_factory.mktemp("multi30k"), shared_data_dir,
                                     TRAIN_PAIRS, EVAL_PAIRS)


@pytest.fixture(scope="module")
def model(data):
    """A random-weight 1+1-layer model."""
    keras.utils.set_random_seed(0)
    tokenizer = SentencePieceTokenizer(model_file=data["vocab_file"])
    return TransformerSeq2Seq(vocabulary_size=tokenizer.vocabulary_size,
                              max_sequence_length=MAX_LENGTH, **TINY_SIZES)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory, data, model):
    """Version 1 of the model, exported with `RECORD_SETTINGS`."""
    directory = tmp_path_factory.mktemp("serving") / MODEL_NAME
    export_translation_model(model, str(directory),
                             {"vocab_file": data["vocab_file"], **RECORD_SETTINGS})
    return directory


@pytest.fixture(scope="module")
def signatures(export_dir):
    """The SavedModel's own signatures, loaded in this process."""
    return tf.saved_model.load(str(export_dir / "1")).signatures


@pytest.fixture(scope="module")
def model_store(export_dir):
    return ModelStore(str(export_dir))


@pytest.fixture(scope="module")
def server(model_store):
    server = start_server(model_store)
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def sentences(data):
    return data["val_sources"] + ["A dog runs."]


def as_json(data):
    """What the server writes for one string output: its text, or base64
    when the bytes are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def translate(signatures, sentences):
    """`(translations as JSON values, scores)` of a direct call."""
    outputs = signatures["serving_default"](inputs=tf.constant(sentences))
    return ([as_json(text) for text in outputs["translations"].numpy()],
            outputs["scores"].numpy())


@pytest.fixture(scope="module")
def alone(signatures, sentences):
    """Each sentence translated by itself: `(translation, score)` pairs."""
    results = []
    for sentence in sentences:
        translations, scores = translate(signatures, [sentence])
        results.append((translations[0], scores[0]))
    return results


def test_rows_and_columns_equal_the_savedmodels_own_translations(server, signatures,
                                                                  sentences):
    translations, scores = translate(signatures, sentences)
    status, body = call(server, "POST", PREDICT, {"instances": sentences})
    assert status == 200, body
    assert [row["translations"] for row in body["predictions"]] == translations
    np.testing.assert_allclose([row["scores"] for row in body["predictions"]], scores,
                               rtol=1e-6)
    for request in ({"inputs": sentences}, {"inputs": {"inputs": sentences}},
                    {"signature_name": "serving_default", "inputs": sentences}):
        status, body = call(server, "POST", f"/v1/models/{MODEL_NAME}/versions/1:predict",
                            request)
        assert status == 200, body
        assert body["outputs"]["translations"] == translations
        np.testing.assert_allclose(body["outputs"]["scores"], scores, rtol=1e-6)


def test_a_sentence_translates_the_same_alone_and_in_a_batch(signatures, sentences, alone):
    # What merging requests relies on: a sentence's translation does not
    # depend on the others padded beside it.
    translations, scores = translate(signatures, sentences)
    assert translations == [translation for translation, _ in alone]
    np.testing.assert_allclose(scores, [score for _, score in alone], rtol=1e-5)


class CountingSignature:
    """A `Signature` that records the rows of each call."""

    def __init__(self, signature):
        self._signature = signature
        self._lock = threading.Lock()
        self.batch_sizes = []

    def __getattr__(self, name):
        return getattr(self._signature, name)

    def __call__(self, inputs):
        with self._lock:
            self.batch_sizes.append(len(next(iter(inputs.values()))))
        return self._signature(inputs)


def test_concurrent_requests_are_batched_and_each_gets_its_own_translation(
        model_store, sentences, alone, monkeypatch):
    # The scores tell every sentence apart, so an answer given to another
    # client would not pass.
    assert len({round(float(score), 3) for _, score in alone}) == len(sentences)
    version = model_store.get(MODEL_NAME)
    counting = CountingSignature(version.signatures["serving_default"])
    monkeypatch.setitem(version.signatures, "serving_default", counting)
    # A long batch timeout, so that the requests surely meet.
    server = start_server(model_store, batch_timeout_micros=300_000)
    results = [None] * len(sentences)
    start = threading.Barrier(len(sentences))

    def predict(index):
        start.wait()
        results[index] = call(server, "POST", PREDICT, {"instances": [sentences[index]]})

    try:
        threads = [threading.Thread(target=predict, args=(index,), daemon=True)
                   for index in range(len(sentences))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        server.shutdown()
    for index, (result, (translation, score)) in enumerate(zip(results, alone)):
        assert result is not None, f"request {index} was not answered"
        status, body = result
        assert status == 200, body
        prediction, = body["predictions"]
        assert prediction["translations"] == translation, f"sentence {index}"
        assert prediction["scores"] == pytest.approx(float(score), rel=1e-5), f"sentence {index}"
    assert sum(counting.batch_sizes) == len(sentences)
    assert len(counting.batch_sizes) < len(sentences) and max(counting.batch_sizes) > 1


def pieces(data, sentence):
    """The ids of a sentence's pieces, by the Python `sentencepiece` package."""
    return sentencepiece.SentencePieceProcessor(model_file=data["vocab_file"]).encode(sentence)


def padded(rows):
    width = max(map(len, rows))
    return [row + [PAD_ID] * (width - len(row)) for row in rows]


def source_ids(data, sentences):
    """The sentences' ids as the text signature makes them: the pieces cut
    to MAX_LENGTH - 1, EOS, 0-padded to the longest."""
    return padded([pieces(data, sentence)[: MAX_LENGTH - 1] + [EOS_ID] for sentence in sentences])


def test_the_ids_signature_translates_the_text_signatures_source_ids_alike(server, signatures,
                                                                         data, sentences):
    # Two sentences over MAX_LENGTH pieces (cut) and one under (padded).
    chosen = sentences[:2] + sentences[-1:]
    assert [len(pieces(data, sentence)) > MAX_LENGTH for sentence in chosen] == [
        True, True, False]
    ids = source_ids(data, chosen)
    direct = signatures["translate_ids"](source_ids=tf.constant(ids, tf.int32))
    status, body = call(server, "POST", PREDICT,
                        {"signature_name": "translate_ids", "instances": ids})
    assert status == 200, body
    assert [row["ids"] for row in body["predictions"]] == direct["ids"].numpy().tolist()
    assert [row["lengths"] for row in body["predictions"]] == direct["lengths"].numpy().tolist()
    np.testing.assert_allclose([row["scores"] for row in body["predictions"]],
                               direct["scores"].numpy(), rtol=1e-6)
    assert all(len(row["ids"]) == MAX_LENGTH for row in body["predictions"])
    # The same translations as the text signature's, as ids: the same
    # sources. Measured: the scores agree within 4e-8.
    translations, scores = translate(signatures, chosen)
    tokenizer = SentencePieceTokenizer(model_file=data["vocab_file"])
    assert [as_json(text) for text in tokenizer.detokenize(
        tf.constant([row["ids"] for row in body["predictions"]])).numpy()] == translations
    np.testing.assert_allclose([row["scores"] for row in body["predictions"]], scores,
                               rtol=1e-6)
    status, columnar = call(server, "POST", PREDICT, {
        "signature_name": "translate_ids", "inputs": {"source_ids": ids}})
    assert status == 200, columnar
    assert columnar["outputs"]["ids"] == [row["ids"] for row in body["predictions"]]


def length_bound(source_pieces):
    """The most tokens the record lets a source of `source_pieces` pieces
    (EOS not counted) have: min(max_length, ceil(a * n) + b)."""
    return min(MAX_LENGTH, math.ceil(RECORD_SETTINGS["max_length_a"] * source_pieces)
               + RECORD_SETTINGS["max_length_b"])


def log_probability(model, source_ids, target_ids):
    """log P(target | source) of each row by a teacher-forced pass of the
    model (in float64 from its logits), over the target's real tokens."""
    decoder_inputs = np.concatenate(
        [np.full((len(target_ids), 1), BOS_ID), target_ids[:, :-1]], axis=1)
    decoder_inputs[target_ids == PAD_ID] = PAD_ID
    logits = keras.ops.convert_to_numpy(model({ENCODER_TOKEN_IDS: source_ids,
                                               DECODER_TOKEN_IDS: decoder_inputs}))
    logits = logits.astype(np.float64)
    log_softmax = logits - logits.max(-1, keepdims=True)
    log_softmax -= np.log(np.exp(log_softmax).sum(-1, keepdims=True))
    chosen = np.take_along_axis(log_softmax, target_ids[:, :, None], axis=2)[:, :, 0]
    return np.where(target_ids != PAD_ID, chosen, 0.0).sum(axis=1)


def test_the_export_decodes_with_the_settings_of_its_serving_record(signatures, model, data,
                                                                    sentences):
    # Sources of 0 to MAX_LENGTH - 1 pieces (the text signature's longest):
    # the length bounds pass max_length - 1, max_length and one more.
    counts = list(range(MAX_LENGTH))
    uncapped = [math.ceil(RECORD_SETTINGS["max_length_a"] * count)
                + RECORD_SETTINGS["max_length_b"] for count in counts]
    assert {MAX_LENGTH - 1, MAX_LENGTH, MAX_LENGTH + 1} <= set(uncapped)
    first = pieces(data, sentences[0])
    source_ids = np.array(padded([first[:count] + [EOS_ID] for count in counts]), np.int32)
    served = {name: tensor.numpy() for name, tensor in signatures["translate_ids"](
        source_ids=tf.constant(source_ids)).items()}

    # max_length, max_length_a and max_length_b: this random model never
    # writes EOS for these sources, so every translation is as long as the
    # record's bound allows.
    assert not (served["ids"] == EOS_ID).any()
    assert served["lengths"].tolist() == [length_bound(count) for count in counts]
    assert (served["ids"] != PAD_ID).sum(axis=1).tolist() == served["lengths"].tolist()

    # length_penalty and its alpha: the score is the translation's
    # log-probability over lp(length) = length ** alpha ("average").
    # Measured: within 1.6e-7 relative (float32 decoding).
    expected = log_probability(model, source_ids, served["ids"]) / (
        served["lengths"] ** RECORD_SETTINGS["length_penalty_alpha"])
    np.testing.assert_allclose(served["scores"], expected, rtol=2e-6)

    # beam_size: the translations of a beam search of that size, which
    # differ from those of another size (or of greedy search).
    def best(beam_size):
        decoder = decoding.BeamSearch(
            beam_size=beam_size, length_penalty=RECORD_SETTINGS["length_penalty"],
            alpha=RECORD_SETTINGS["length_penalty_alpha"])
        result = model.generate(source_ids, decoder, MAX_LENGTH,
                                RECORD_SETTINGS["max_length_a"], RECORD_SETTINGS["max_length_b"])
        return keras.ops.convert_to_numpy(result["ids"])[:, 0]

    np.testing.assert_array_equal(served["ids"], best(RECORD_SETTINGS["beam_size"]))
    for other_size in (1, 4):
        assert (best(other_size) != served["ids"]).any(), other_size


def test_the_alignments_signature_over_rest(server, signatures, sentences):
    direct = signatures["translate_with_alignments"](inputs=tf.constant(sentences[:2]))
    status, body = call(server, "POST", PREDICT,
                        {"signature_name": "translate_with_alignments",
                         "instances": sentences[:2]})
    assert status == 200, body
    rows = body["predictions"]
    np.testing.assert_allclose([row["alignments"] for row in rows],
                               direct["alignments"].numpy(), atol=1e-6)
    for key in ("source_pieces", "target_pieces"):
        assert [row[key] for row in rows] == [
            [as_json(piece) for piece in row] for row in direct[key].numpy()]
    assert [row["translations"] for row in rows] == [
        as_json(text) for text in direct["translations"].numpy()]
    np.testing.assert_allclose([row["scores"] for row in rows], direct["scores"].numpy(),
                               rtol=1e-6)


def test_source_ids_from_0_to_the_vocabulary_size_minus_1_are_translated(server):
    # The edges of the ids signature's range; one past each is refused in
    # test_bad_requests_get_a_400_with_a_json_error (400 pieces).
    status, body = call(server, "POST", PREDICT, {"signature_name": "translate_ids",
                                                  "instances": [[5, 399, 3], [3, 0, 0]]})
    assert status == 200, body
    assert [len(row["ids"]) for row in body["predictions"]] == [MAX_LENGTH, MAX_LENGTH]


@pytest.mark.parametrize("request_body, expected", [
    ({"instances": ["A dog runs.", 5]},
     r"^Input 'inputs' has a number \(5\) where text .* is expected \(dtype string\)\.$"),
    ({"instances": [{"text": "A dog runs."}]},
     r"unknown input\(s\) \['text'\] and missing input\(s\) \['inputs'\]"),
    ({"instances": [["A dog", "runs."]]}, r"has shape \[1, 2\], but .* expects \[-1\]"),
    ({"signature_name": "translate_ids", "instances": [[5, 6, 3], [5, 3]]},
     r"ragged.*pad the shorter ones"),
    ({"signature_name": "translate_ids", "instances": [["A", "dog"]]},
     r"'source_ids' has a string .* where an integer is expected"),
    ({"signature_name": "translate_ids", "instances": [[5, 400, 3]]},
     r"^Signature 'translate_ids' failed on these inputs: InvalidArgumentError: .*"
     r"source_ids must hold ids from 0 to 399; it has one of 400 or more"),
    ({"signature_name": "translate_ids", "instances": [[5, -1, 3]]},
     r"source_ids must hold ids from 0 to 399; it has a negative one"),
    ({"signature_name": "translate", "instances": ["A dog runs."]},
     r"Signature 'translate' not found.*\['serving_default', 'translate_ids', "
     r"'translate_with_alignments'\]"),
])
def test_bad_requests_get_a_400_with_a_json_error(server, request_body, expected):
    status, body = call(server, "POST", PREDICT, request_body)
    assert status == 400, body
    assert list(body) == ["error"]
    assert re.search(expected, body["error"], re.DOTALL), body["error"]
    # The server keeps serving.
    status, body = call(server, "POST", PREDICT, {"instances": ["A dog runs."]})
    assert status == 200, body


def test_metadata_describes_both_signatures(server):
    status, body = call(server, "GET", f"/v1/models/{MODEL_NAME}/metadata")
    assert status == 200, body
    signature_defs = body["metadata"]["signature_def"]["signature_def"]

    def dims(tensor_info):
        return [int(dim["size"]) for dim in tensor_info["tensor_shape"]["dim"]]

    text = signature_defs["serving_default"]
    assert text["inputs"]["inputs"]["dtype"] == "DT_STRING"
    assert dims(text["inputs"]["inputs"]) == [-1]
    assert {key: value["dtype"] for key, value in text["outputs"].items()} == {
        "translations": "DT_STRING", "scores": "DT_FLOAT"}
    ids = signature_defs["translate_ids"]
    assert dims(ids["inputs"]["source_ids"]) == [-1, -1]
    assert dims(ids["outputs"]["ids"]) == [-1, MAX_LENGTH]
    assert {key: value["dtype"] for key, value in ids["outputs"].items()} == {
        "ids": "DT_INT32", "lengths": "DT_INT32", "scores": "DT_FLOAT"}


def test_load_test_of_300_requests_at_concurrency_8(server, sentences, alone):
    def check(body_index, answer):
        prediction, = json.loads(answer)["predictions"]
        translation, score = alone[body_index]
        if prediction["translations"] != translation or not np.isclose(
                prediction["scores"], score, rtol=1e-5, atol=0):
            return f"answer to sentence {body_index}: {prediction}"
        return None

    bodies = [json.dumps({"instances": [sentence]}) for sentence in sentences]
    result = run_load_test(f"{server.url}{PREDICT}", body=bodies, requests=300,
                           concurrency=8, timeout_seconds=240, check=check)
    print(f"\ntranslation load test: {json.dumps(result)}")
    assert result["requests"] == 300 and not result["timed_out"]
    assert result["errors"] == 0, result["first_error"]


def test_python_m_tfnlp_serve_serves_the_export(export_dir, sentences, alone):
    # Limits of the command line that a client sees, read back below.
    process = subprocess.Popen(
        [sys.executable, "-m", "tfnlp.serve", f"--model_dir={export_dir}", "--port=0",
         "--max_instances_per_request=2", "--max_string_bytes=100", "--max_body_bytes=1000"],
        cwd=REPOSITORY, env=ENVIRONMENT, stderr=subprocess.PIPE, text=True,
    )
    lines = queue.Queue()
    threading.Thread(target=read_lines, args=(process.stderr, lines), daemon=True).start()
    try:
        match = None
        while match is None:
            match = SERVING_LINE.search(lines.get(timeout=90))
        assert match.group(1, 2) == (MODEL_NAME, "[1]")
        server = types.SimpleNamespace(port=int(match.group(3)))
        status, body = call(server, "POST", PREDICT, {"instances": sentences[:2]})
        assert status == 200, body
        assert [row["translations"] for row in body["predictions"]] == [
            translation for translation, _ in alone[:2]]
        for request, limit in (({"instances": sentences[:3]}, "--max_instances_per_request=2"),
                               ({"instances": ["x" * 101]}, "--max_string_bytes=100"),
                               ({"instances": ["x" * 50] * 20}, "--max_body_bytes=1000")):
            status, body = call(server, "POST", PREDICT, request)
            assert status in (400, 413) and limit in body["error"], body
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0
