"""Tests of `pipelines.lm_tokenizers`: the characters each id stands for add
up to the detokenized text, whatever the kind; the character vocabulary
and SentencePiece model are learned deterministically."""

import apache_beam as beam
import hypothesis
import pytest
import sentencepiece
import tensorflow as tf
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import strategies as st

from pipelines import lm_tokenizers, sentencepiece_model
from tests.text.language_model_tokenizers import (
    TEXT, UNSEEN, character_spec, sentencepiece_spec, wordpiece_spec)
from tfnlp.text import BertTokenizer

PROPERTY_SETTINGS = hypothesis.settings(max_examples=100, deadline=None)
TEXTS = st.text(alphabet=st.sampled_from(TEXT + UNSEEN + "\n\n  "), max_size=60) | st.text(
    max_size=30)


@pytest.fixture(scope="module")
def sentencepiece_tokenizer():
    return lm_tokenizers.document_tokenizer(sentencepiece_spec())


@pytest.fixture(scope="module")
def wordpiece_files(tmp_path_factory):
    spec = wordpiece_spec()
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    path.write_bytes(spec.contents)
    return lm_tokenizers.document_tokenizer(spec), BertTokenizer(str(path))


@PROPERTY_SETTINGS
@hypothesis.given(text=TEXTS)
def test_characters_count_one_per_character(text):
    tokenizer = lm_tokenizers.document_tokenizer(character_spec())
    ids, characters = tokenizer.encode(text)
    assert len(ids) == len(characters) == len(text)
    assert characters.tolist() == [1] * len(text)


@PROPERTY_SETTINGS
@hypothesis.given(text=TEXTS)
def test_sentencepiece_characters_add_up_to_the_text(sentencepiece_tokenizer, text):
    """The job's models detokenize to the text itself (identity
    normalization, spaces kept, byte fallback), so the counts add up to its
    length; bytes of one character count once."""
    ids, characters = sentencepiece_tokenizer.encode(text)
    assert len(characters) == len(ids)
    assert (characters >= 0).all()
    assert int(characters.sum()) == len(text)


def test_sentencepiece_pieces_count_their_decoded_text(sentencepiece_tokenizer):
    processor = sentencepiece.SentencePieceProcessor(model_proto=sentencepiece_spec().contents)
    text = "  hear me\n\nspeak ☃"
    ids, characters = sentencepiece_tokenizer.encode(text)
    pieces = [processor.id_to_piece(int(index)) for index in ids]
    # The first piece "▁" is the space SentencePiece adds in front: the
    # text's own first space follows; "☃" is three byte pieces, one
    # character; "\n" is a byte piece.
    assert pieces[:2] == ["▁", "▁"]
    assert characters[:2].tolist() == [0, 1]
    assert pieces[-3:] == ["<0xE2>", "<0x98>", "<0x83>"]
    assert characters[-3:].tolist() == [1, 0, 0]
    assert characters[pieces.index("<0x0A>")] == 1
    assert processor.decode(ids.tolist()) == text


@PROPERTY_SETTINGS
@hypothesis.given(text=TEXTS)
def test_wordpiece_characters_add_up_to_the_detokenized_text(wordpiece_files, text):
    tokenizer, in_graph = wordpiece_files
    ids, characters = tokenizer.encode(text)
    detokenized = in_graph.detokenize(tf.constant([ids], tf.int64)).numpy()[0].decode()
    assert int(characters.sum()) == len(detokenized)


def test_wordpiece_continuations_count_without_their_prefix(wordpiece_files):
    tokenizer, _ = wordpiece_files
    ids, characters = tokenizer.encode("Resolved proceed")
    # re ##sol ##ved pro ##ceed: "re" first (no space), " pro" with its space.
    assert characters.tolist() == [2, 3, 3, 4, 4]


def test_a_wordpiece_vocabulary_needs_an_end_of_document_token():
    spec = wordpiece_spec()
    tokens = tuple(token for token in spec.tokens if token != "[SEP]")
    with pytest.raises(ValueError, match=r"no \[SEP\]"):
        lm_tokenizers.document_tokenizer(lm_tokenizers.TokenizerSpec("wordpiece", b"", True,
                                                                     tokens))


def test_the_character_vocabulary_is_learned_with_its_minimum_count():
    texts = ["ba\n", "ab", "c", "\U0001F600a"]
    with beam.Pipeline() as pipeline:
        created = pipeline | beam.Create(texts)
        assert_that(created | "All" >> lm_tokenizers.LearnCharacterVocabulary(1),
                    equal_to([["<pad>", "<unk>", "<eod>", "\n", "a", "b", "c", "\U0001F600"]]),
                    label="All")
        assert_that(created | "Twice" >> lm_tokenizers.LearnCharacterVocabulary(2),
                    equal_to([["<pad>", "<unk>", "<eod>", "a", "b"]]), label="Twice")


def test_the_sentencepiece_model_is_learned_from_lines():
    options = lm_tokenizers.TokenizerOptions(
        "sentencepiece", sentencepiece=sentencepiece_model.SentencePieceOptions(
            vocab_size=400, model_type="bpe", normalization_rule_name="identity",
            remove_extra_whitespaces=False))
    documents = [TEXT] * 20
    with beam.Pipeline() as pipeline:
        spec, lines = pipeline | beam.Create(documents) | lm_tokenizers.LearnTokenizer(options)
        assert_that(spec | beam.Map(lambda spec: spec.contents),
                    equal_to([sentencepiece_spec().contents]), label="Model")
        nonblank = [line for line in TEXT.split("\n") if line.strip()]
        assert_that(lines, equal_to([20 * len(nonblank)]), label="Lines")


@pytest.mark.parametrize("arguments, message", [
    ({"kind": "bytes"}, "must be one of"),
    ({"kind": "wordpiece"}, "give its file"),
    ({"kind": "sentencepiece"}, "SentencePieceOptions"),
])
def test_impossible_options_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        lm_tokenizers.TokenizerOptions(**arguments)
