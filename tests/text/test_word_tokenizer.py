"""`tfnlp.text.WordTokenizer`: words as the BiLSTM student reads them,
their vocabulary, and the same ids from a SavedModel that holds it."""

import os

import pytest
import tensorflow as tf

from tfnlp.text import (
    WordTokenizer,
    build_word_vocabulary,
    split_words,
    word_counts,
    write_word_vocabulary,
)


@pytest.fixture
def vocabulary_file(tmp_path):
    path = str(tmp_path / "words.txt")
    write_word_vocabulary(["the", "film", ",", "good", "[mask]"], path)
    return path


def test_words_are_lower_cased_with_punctuation_split_off():
    words = split_words(tf.constant(["The FILM, (truly) good!", "Ça va—bien", "a [MASK] b",
                                     "  "]))
    assert words.to_list() == [
        [b"the", b"film", b",", b"(", b"truly", b")", b"good", b"!"],
        ["ça".encode(), b"va", "—".encode(), b"bien"],
        [b"a", b"[mask]", b"b"],
        [],
    ]


def test_the_vocabulary_is_the_most_frequent_words_first():
    counts = word_counts([["The film, the FILM.", "a film"], tf.constant(["rare"])])
    assert counts == {"the": 2, "film": 3, ",": 1, ".": 1, "a": 1, "rare": 1}
    assert build_word_vocabulary(counts) == ["film", "the", ",", ".", "a", "rare"]
    assert build_word_vocabulary(counts, max_size=2) == ["film", "the"]
    assert build_word_vocabulary(counts, min_count=2) == ["film", "the"]
    with pytest.raises(ValueError, match="vocabulary would be empty"):
        build_word_vocabulary(counts, min_count=4)


def test_a_reserved_or_spaced_word_is_refused(tmp_path):
    for word in ("", "[UNK]", "two words"):
        with pytest.raises(ValueError, match="cannot be a vocabulary word"):
            write_word_vocabulary([word], str(tmp_path / "words.txt"))


def test_ids_padding_unknown_words_and_truncation(vocabulary_file):
    tokenizer = WordTokenizer(vocabulary_file)
    assert tokenizer.vocabulary == ["", "[UNK]", "the", "film", ",", "good", "[mask]"]
    assert tokenizer.vocabulary_size == 7
    ids = tokenizer(tf.constant(["The film, GOOD", "a [MASK] film", ""]))
    assert ids.dtype == tf.int32
    assert ids.numpy().tolist() == [[2, 3, 4, 5], [1, 6, 3, 0], [0, 0, 0, 0]]
    assert tokenizer(tf.constant(["", ""])).numpy().tolist() == [[0], [0]]
    short = WordTokenizer(vocabulary_file, sequence_length=2)
    assert short.tokenize(tf.constant(["the film , good"])).to_list() == [[2, 3]]
    restored = WordTokenizer.from_config(short.get_config())
    assert restored.sequence_length == 2


def test_a_missing_vocabulary_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        WordTokenizer(str(tmp_path / "missing.txt"))


def test_a_saved_model_tokenizes_with_its_own_copy_of_the_vocabulary(tmp_path):
    path = str(tmp_path / "words.txt")
    write_word_vocabulary(["good", "film"], path)
    module = tf.Module()
    module.tokenizer = WordTokenizer(path)
    module.tokenize = tf.function(module.tokenizer.__call__,
                                  input_signature=[tf.TensorSpec([None], tf.string)])
    texts = tf.constant(["A good film", "film"])
    expected = module.tokenize(texts).numpy().tolist()
    tf.saved_model.save(module, str(tmp_path / "saved"))
    os.remove(path)
    assert os.listdir(tmp_path / "saved" / "assets") == ["words.txt"]
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    assert loaded.tokenize(texts).numpy().tolist() == expected == [[1, 2, 3], [3, 0, 0]]
