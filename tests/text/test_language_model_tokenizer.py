"""Tests of `tfnlp.text.load_language_model_tokenizer`: the in-graph tokenizer
of a language-model data directory gives the ids that the job's workers
write (`pipelines.lm_tokenizers`), for every kind, and refuses a directory
whose descriptor does not match its file.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pipelines import lm_tokenizers
from tests.text.language_model_tokenizers import SPECS, TEXT, UNSEEN, data_directory
from tests.text.saved_tokenizers import save_tokenize_function
from tfnlp.data.file_names import TOKENIZER_DESCRIPTOR
from tfnlp.text import LanguageModelTokenizer, load_language_model_tokenizer

DOCUMENTS = [TEXT, TEXT.upper(), "  Speak,\n\nspeak.  \n", UNSEEN, "a", ""]


@pytest.fixture(scope="module", params=sorted(SPECS))
def kind(request):
    return request.param


@pytest.fixture(scope="module")
def spec(kind):
    return SPECS[kind]()


@pytest.fixture(scope="module")
def data_dir(spec, tmp_path_factory):
    return data_directory(tmp_path_factory.mktemp(spec.kind), spec)


@pytest.fixture(scope="module")
def tokenizer(data_dir):
    return load_language_model_tokenizer(str(data_dir))


def test_the_in_graph_ids_are_the_job_ids(tokenizer, spec):
    worker = lm_tokenizers.document_tokenizer(spec)
    ids = tokenizer.tokenize(tf.constant(DOCUMENTS), add_end_of_document=True)
    assert ids.dtype == tf.int32
    expected = [worker.encode(text)[0].tolist() + [worker.end_of_document_id]
                for text in DOCUMENTS]
    assert ids.to_list() == expected
    # The documents use many ids, unknown ones included where the kind has them.
    assert len({index for row in expected for index in row}) > 20
    assert any(worker.unknown_id in row for row in expected) == (spec.kind != "sentencepiece")


def test_the_special_ids_are_the_descriptor_ones(tokenizer, spec, kind):
    worker = lm_tokenizers.document_tokenizer(spec)
    assert tokenizer.kind == kind
    assert (tokenizer.vocabulary_size, tokenizer.end_of_document_id, tokenizer.unknown_id,
            tokenizer.pad_id) == (worker.vocabulary_size, worker.end_of_document_id,
                                  worker.unknown_id, worker.pad_id)
    assert {"character": 2, "sentencepiece": 3, "wordpiece": 3}[kind] == (
        tokenizer.end_of_document_id)


def test_the_non_text_ids_are_the_special_ids_but_the_end_of_document(tokenizer, kind):
    # <pad> and <unk>; SentencePiece's <pad>, <unk> and <s>; WordPiece's
    # [PAD], [UNK], [CLS] and [MASK] ([SEP] ends documents).
    expected = {"character": (0, 1), "sentencepiece": (0, 1, 2), "wordpiece": (0, 1, 2, 4)}
    assert tokenizer.non_text_ids == expected[kind]
    assert tokenizer.end_of_document_id not in tokenizer.non_text_ids
    # Each detokenizes to nothing, a replacement mark or its own name.
    texts = tokenizer.detokenize(tf.constant([[index] for index in tokenizer.non_text_ids]))
    assert [text.decode() for text in texts.numpy()] == {
        "character": ["", "\ufffd"], "sentencepiece": ["", " \u2047 ", ""],
        "wordpiece": ["", "[UNK]", "[CLS]", "[MASK]"]}[kind]


def test_detokenize_ends_each_sequence_at_its_end_of_document(tokenizer, kind):
    ids = tokenizer.tokenize(tf.constant(["Speak, speak.", "you are all"]),
                             add_end_of_document=True)
    tails = tf.ragged.constant([[5, 6], [7]], dtype=tf.int32)
    texts = tokenizer.detokenize(tf.concat([ids, tails], axis=1)).numpy().tolist()
    assert texts == tokenizer.detokenize(ids).numpy().tolist()
    expected = {"character": [b"Speak, speak.", b"you are all"],
                "sentencepiece": [b"Speak, speak.", b"you are all"],
                "wordpiece": [b"speak , speak .", b"you are all"]}[kind]
    assert texts == expected
    padded = ids.to_tensor(default_value=tokenizer.pad_id)
    assert tokenizer.detokenize(padded).numpy().tolist() == expected
    # Padding in front too (left-padded prompts): left out wherever it is.
    left_padded = tf.concat([tf.fill([2, 3], tokenizer.pad_id), padded], axis=1)
    assert tokenizer.detokenize(left_padded).numpy().tolist() == expected


def test_a_saved_model_tokenizes_without_the_data_directory(data_dir, tmp_path, spec):
    copy = tmp_path / "data"
    copy.mkdir()
    for path in data_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    tokenizer = load_language_model_tokenizer(str(copy))
    export = str(tmp_path / "export")
    save_tokenize_function(tokenizer, export)
    for path in copy.iterdir():
        path.unlink()
    copy.rmdir()
    loaded = tf.saved_model.load(export)
    worker = lm_tokenizers.document_tokenizer(spec)
    expected = worker.encode(TEXT)[0].tolist() + [worker.end_of_document_id]
    np.testing.assert_array_equal(loaded.tokenize(tf.constant([TEXT])).numpy()[0], expected)


def test_the_layer_config_reloads_the_directory(data_dir):
    layer = LanguageModelTokenizer(str(data_dir), add_end_of_document=True)
    restored = LanguageModelTokenizer.from_config(layer.get_config())
    np.testing.assert_array_equal(restored(tf.constant(["All:"])).to_list(),
                                  layer(tf.constant(["All:"])).to_list())
    assert restored(tf.constant(["All:"])).to_list()[0][-1] == layer.end_of_document_id


def test_a_directory_without_descriptor_names_the_job(tmp_path):
    with pytest.raises(FileNotFoundError, match="pipelines.lm_data"):
        load_language_model_tokenizer(str(tmp_path))


def test_a_file_that_is_not_the_recorded_one_is_refused(tmp_path):
    data_dir = data_directory(tmp_path / "data", SPECS["character"]())
    vocabulary = data_dir / "characters.txt"
    vocabulary.write_bytes(vocabulary.read_bytes() + b'"\\u2603"\n')
    with pytest.raises(ValueError, match="not the one the data was tokenized with"):
        load_language_model_tokenizer(str(data_dir))
    vocabulary.unlink()
    with pytest.raises(FileNotFoundError, match="characters.txt"):
        load_language_model_tokenizer(str(data_dir))


@pytest.mark.parametrize("change, message", [
    ({"vocabulary_size": 1000}, "records 1000"),
    ({"kind": "bytes"}, "must be one of"),
    ({"end_of_document_id": -1}, "outside"),
    ({"format_version": 2}, "format version 1"),
    ({"file": "../characters.txt"}, "a file name in the data directory"),
    ({"extra": 1}, "unknown keys"),
])
def test_a_descriptor_that_does_not_fit_is_refused(tmp_path, change, message):
    data_dir = data_directory(tmp_path / "data", SPECS["character"]())
    path = data_dir / TOKENIZER_DESCRIPTOR
    descriptor = json.loads(path.read_text())
    path.write_text(json.dumps({**descriptor, **change}))
    with pytest.raises(ValueError, match=message):
        load_language_model_tokenizer(os.fspath(data_dir))
