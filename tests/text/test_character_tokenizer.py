"""Tests of the character vocabularies and tokenizers: the in-graph
`tfnlp.text.CharacterTokenizer` against its plain-Python twin
`PlainCharacterTokenizer` (the ids the language-model job writes), on
arbitrary text and bytes (Hypothesis), and in a SavedModel.
"""

import os

import hypothesis
import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import strategies as st

from tests.text.saved_tokenizers import save_tokenize_function
from tfnlp.text import CharacterTokenizer, PlainCharacterTokenizer
from tfnlp.text import plain_character_tokenizer as plain

# Characters of several scripts and widths, a line break, a tab, a code
# point past the BMP, and characters the vocabulary below lacks.
KNOWN = "ab \n\té☃\U0001F600"
PROPERTY_SETTINGS = hypothesis.settings(max_examples=150, deadline=None)


def write_vocabulary(folder, characters=KNOWN, name="characters.txt"):
    path = os.path.join(folder, name)
    with open(path, "wb") as file:
        file.write(plain.character_vocabulary_bytes(
            plain.character_vocabulary(dict.fromkeys(characters, 1))))
    return path


@pytest.fixture(scope="module")
def vocabulary_file(tmp_path_factory):
    return write_vocabulary(str(tmp_path_factory.mktemp("characters")))


@pytest.fixture(scope="module")
def tokenizer(vocabulary_file):
    return CharacterTokenizer(vocabulary_file)


@pytest.fixture(scope="module")
def twin(vocabulary_file):
    with open(vocabulary_file, "rb") as file:
        return PlainCharacterTokenizer(plain.parse_character_vocabulary(file.read()))


def test_vocabulary_is_the_specials_then_characters_in_code_point_order():
    counts = {"\U0001F600": 1, "b": 5, "\n": 2, "a": 3, "é": 1}
    assert plain.character_vocabulary(counts) == [
        "<pad>", "<unk>", "<eod>", "\n", "a", "b", "é", "\U0001F600"]
    # min_count at its edge: a count equal to it is kept, one less is not.
    assert plain.character_vocabulary(counts, min_count=3) == [
        "<pad>", "<unk>", "<eod>", "a", "b"]
    assert plain.character_vocabulary(counts, min_count=2) == [
        "<pad>", "<unk>", "<eod>", "\n", "a", "b"]


def test_vocabulary_file_round_trips_every_character():
    characters = ["\n", "\r", " ", '"', "\\", "\u2028", "\x00", "é", "\U0010FFFF"]
    tokens = plain.character_vocabulary(dict.fromkeys(characters, 1))
    contents = plain.character_vocabulary_bytes(tokens)
    # One token a line, whatever the character: "\n" and U+2028 are escaped.
    assert contents.count(b"\n") == len(tokens)
    assert plain.parse_character_vocabulary(contents) == tokens


@pytest.mark.parametrize("contents, message", [
    (b'"<pad>"\n"<unk>"\n"<eod>"\nab\n', "not a JSON string"),
    (b'"<pad>"\n"<eod>"\n"<unk>"\n', "starts with the special tokens"),
    (b'"<pad>"\n"<unk>"\n"<eod>"\n"ab"\n', "every token is one character"),
    (b'"<pad>"\n"<unk>"\n"<eod>"\n"a"\n"a"\n', "lists a character twice"),
    (b'\xff\n', "not UTF-8"),
])
def test_a_malformed_vocabulary_is_refused_with_the_reason(contents, message):
    with pytest.raises(ValueError, match=message):
        plain.parse_character_vocabulary(contents, "chars.txt")


def test_special_ids_and_size(tokenizer, twin):
    assert (tokenizer.PAD_ID, tokenizer.UNKNOWN_ID, tokenizer.END_OF_DOCUMENT_ID) == (0, 1, 2)
    assert (twin.pad_id, twin.unknown_id, twin.end_of_document_id) == (0, 1, 2)
    assert tokenizer.vocabulary_size == twin.vocabulary_size == 3 + len(KNOWN)


def test_known_text_has_the_ids_of_the_vocabulary_lines(tokenizer):
    ids = tokenizer.tokenize(tf.constant(["ab\n", "\U0001F600z"])).to_list()
    vocabulary = tokenizer.vocabulary
    assert ids == [[vocabulary.index("a"), vocabulary.index("b"), vocabulary.index("\n")],
                   [vocabulary.index("\U0001F600"), 1]]
    # Code-point order: "\t" 3, "\n" 4, " " 5, "a" 6, "b" 7, "é" 8, ...
    assert ids[0] == [6, 7, 4]
    assert tokenizer.id_to_token(tf.constant(ids[0])).numpy().tolist() == [b"a", b"b", b"\n"]


@PROPERTY_SETTINGS
@hypothesis.given(text=st.text(alphabet=st.sampled_from(KNOWN + "xyz\u00e8\U0001F601"),
                               max_size=40) | st.text(max_size=40))
def test_in_graph_and_plain_ids_agree_on_any_text(tokenizer, twin, text):
    in_graph = tokenizer.tokenize(tf.constant(text.encode("utf-8", "surrogatepass")))
    assert in_graph.numpy().tolist() == twin.tokenize(text.encode("utf-8", "surrogatepass"))


@PROPERTY_SETTINGS
@hypothesis.given(data=st.binary(max_size=40))
def test_in_graph_and_plain_ids_agree_on_any_bytes(tokenizer, twin, data):
    """Invalid UTF-8 becomes U+FFFD the same way in both (one per maximal
    invalid subsequence)."""
    assert tokenizer.tokenize(tf.constant(data)).numpy().tolist() == twin.tokenize(data)


@PROPERTY_SETTINGS
@hypothesis.given(text=st.text(alphabet=st.sampled_from(KNOWN), max_size=40))
def test_known_text_round_trips(tokenizer, twin, text):
    ids = tokenizer.tokenize(tf.constant([text]), add_end_of_document=True)
    assert ids.to_list()[0][-1] == tokenizer.END_OF_DOCUMENT_ID
    assert tokenizer.detokenize(ids).numpy()[0].decode("utf-8") == text
    assert twin.detokenize(ids.to_list()[0]) == text


def test_detokenize_stops_at_the_end_of_document_skips_padding_and_marks_unknown(
        tokenizer, twin):
    a, b = tokenizer.vocabulary.index("a"), tokenizer.vocabulary.index("b")
    rows = [[a, 0, 1, b, 2, a, b], [0, 0, b, 0, 0, 0, 0]]
    expected = ["a\ufffdb", "b"]
    assert [value.decode() for value in tokenizer.detokenize(tf.constant(rows)).numpy()] == (
        expected)
    assert [twin.detokenize(row) for row in rows] == expected
    ragged = tf.ragged.constant([[a, 2, b], [], [b, a]])
    assert tokenizer.detokenize(ragged).numpy().tolist() == [b"a", b"", b"ba"]


def test_any_rank_in_and_out(tokenizer):
    strings = tf.constant([["ab", "b"], ["", "a\n"]])
    ids = tokenizer.tokenize(strings)
    assert ids.shape.rank == 3
    assert tokenizer.detokenize(ids).numpy().tolist() == [[b"ab", b"b"], [b"", b"a\n"]]
    scalar = tokenizer.tokenize(tf.constant("ba"))
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == [7, 6]
    assert tokenizer.detokenize(scalar).numpy() == b"ba"
    dense = tf.constant([[[6, 7, 2]], [[7, 0, 0]]])
    assert tokenizer.detokenize(dense).numpy().tolist() == [[b"ab"], [b"b"]]


def test_config_round_trips(tokenizer):
    restored = CharacterTokenizer.from_config(tokenizer.get_config())
    assert restored.vocabulary == tokenizer.vocabulary
    layer = keras.layers.deserialize(keras.layers.serialize(tokenizer))
    assert layer.tokenize(tf.constant("ab")).numpy().tolist() == [6, 7]


def test_a_saved_model_carries_the_vocabulary_as_an_asset(tmp_path):
    folder = tmp_path / "vocabulary"
    folder.mkdir()
    tokenizer = CharacterTokenizer(write_vocabulary(str(folder)))
    export = str(tmp_path / "export")
    save_tokenize_function(tokenizer, export)
    assert os.listdir(os.path.join(export, "assets")) == ["characters.txt"]
    for path in folder.iterdir():
        path.unlink()  # The export needs the original file no more.
    folder.rmdir()
    loaded = tf.saved_model.load(export)
    ids = loaded.tokenize(tf.constant(["ab\n", "z"])).numpy()
    np.testing.assert_array_equal(ids, [[6, 7, 4, 2], [1, 2, -1, -1]])
