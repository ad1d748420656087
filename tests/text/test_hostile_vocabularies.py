"""Vocabulary files that google-research/bert accepts but a naive reader
gets wrong: a token listed twice, tokens with whitespace inside, blank
lines, a lone "##", carriage returns, and bytes that are not UTF-8.

The original's `load_vocab` reads the file line by line through
`tf.gfile` (lines end at "\\n", every "\\r" is dropped, strict UTF-8),
strips each line and sets `vocab[token] = index`, so a token listed twice
gets the id of its later line; its WordPiece only looks up pieces of words
that were split on whitespace, so a token with whitespace inside, the empty
token and a lone "##" are never produced. `BertTokenizer`,
`PlainBertTokenizer` and the reference must all give the same ids.
"""

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tests.text.tokenizer_properties import ThreeTokenizers
from tfnlp.text import BertTokenizer, PlainBertTokenizer, load_vocabulary


def write(tmp_path, content):
    """A vocabulary file with exactly `content` (str as UTF-8, or bytes)."""
    path = tmp_path / "vocab.txt"
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def test_a_token_listed_twice_gets_the_id_of_its_later_line(tmp_path):
    vocab_file = write(tmp_path, "[PAD]\n[UNK]\ncat\ndog\ncat\n##s\n##s\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("cats dog") == [4, 6, 3]
    assert tokenizers.bert.vocab_size == tokenizers.plain.vocab_size == 7


def test_a_special_token_listed_twice_gets_the_id_of_its_later_line(tmp_path):
    vocab_file = write(tmp_path, "[PAD]\n[UNK]\n[CLS]\n[UNK]\nhello\n[PAD]\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("hello xyz") == [4, 3]
    assert tokenizers.bert.unk_id == tokenizers.plain.unk_id == 3
    assert tokenizers.bert.pad_id == 5
    assert tokenizers.bert.cls_id == 2


def test_a_token_with_whitespace_inside_is_never_produced(tmp_path):
    vocab_file = write(tmp_path, "[UNK]\ni\nlove\nnew york\nnew\nyork\nnew\u00a0york\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("I love new york") == [1, 2, 4, 5]
    assert tokenizers.ids("new  york") == [4, 5]
    assert tokenizers.ids("new\u00a0york new\tyork") == [4, 5, 4, 5]


def test_a_whitespace_token_cannot_cover_a_word_that_lacks_its_pieces(tmp_path):
    vocab_file = write(tmp_path, "[UNK]\nnew york\nyork\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("new york") == [0, 2]


def test_blank_lines_and_a_lone_suffix_marker_are_tokens_never_produced(tmp_path):
    vocab_file = write(tmp_path, "[UNK]\n\na\n   \n##\n#\n\t\n##a\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.bert.vocabulary == ["[UNK]", "", "a", "", "##", "#", "", "##a"]
    assert tokenizers.ids("a ## # aa a#a") == [2, 5, 5, 5, 2, 7, 2, 5, 2]


def test_a_vocabulary_without_a_single_word_piece_makes_every_word_unk(tmp_path):
    # Found by the fuzzer: tensorflow-text skips the tokens that cannot be
    # word pieces and refused a vocabulary with nothing else.
    vocab_file = write(tmp_path, "[PAD]\n[UNK]\na.b\n##\n\n")
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("a.b c") == [1, 1, 1, 1]


def test_carriage_returns_are_dropped_as_the_original_reads_the_file(tmp_path):
    # tf.gfile's readline drops every "\r": "ca\rt" is the token "cat".
    vocab_file = write(tmp_path, "[UNK]\r\nca\rt\n\rdog\r\n\r")
    assert load_vocabulary(vocab_file) == ["[UNK]", "cat", "dog"]
    tokenizers = ThreeTokenizers(vocab_file)
    assert tokenizers.ids("cat dog") == [1, 2]


def test_a_line_that_is_not_utf8_is_refused_with_its_line_number(tmp_path):
    vocab_file = write(tmp_path, b"[UNK]\ncat\ndo\xffg\n")
    message = rf"Line 3 of the vocabulary {vocab_file} is not valid UTF-8"
    with pytest.raises(ValueError, match=message):
        BertTokenizer(vocab_file)
    with pytest.raises(ValueError, match=message):
        PlainBertTokenizer(vocab_file)


def test_every_line_keeps_its_token_for_id_to_token_and_detokenize(tmp_path):
    vocab_file = write(tmp_path, "[UNK]\ncat\nnew york\ncat\n##s\n")
    tokenizer = BertTokenizer(vocab_file)
    ids = tf.ragged.constant([[1, 4, 2], [3, 4]], dtype=tf.int64)
    assert tokenizer.id_to_token(ids).to_list() == [
        [b"cat", b"##s", b"new york"], [b"cat", b"##s"]
    ]
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"cats new york", b"cats"]


def test_detokenize_joins_pieces_as_tensorflow_text_does(shared_data_dir):
    vocab_file = shared_data_dir / "vocab/bert-base-uncased-vocab.txt"
    tokenizer = BertTokenizer(vocab_file)
    fast_wordpiece = tf_text.FastWordpieceTokenizer(
        vocab=load_vocabulary(vocab_file), token_out_type=tf.int64,
        no_pretokenization=False, support_detokenization=True,
    )
    vocabulary = tokenizer.vocabulary
    # Continuations first and later, one-byte tokens, special tokens.
    chosen = [
        [vocabulary.index(token) for token in ["##s", ",", "hello", "##s", "[CLS]", "!"]],
        [vocabulary.index(token) for token in [",", "##a", "##,"]],
    ]
    random_ids = tf.random.stateless_uniform(
        [62, 12], seed=[1, 2], maxval=tokenizer.vocab_size, dtype=tf.int64
    )
    ids = tf.concat([
        tf.ragged.constant(chosen, dtype=tf.int64),
        tf.RaggedTensor.from_tensor(random_ids, lengths=tf.range(62) % 13),
    ], axis=0)
    nested = tf.RaggedTensor.from_uniform_row_length(ids, 8)
    dense = [random_ids[0], random_ids, tf.reshape(random_ids, [31, 2, 12])]
    for rows in [ids, nested, *dense]:
        assert as_python(tokenizer.detokenize(rows)) == (
            as_python(fast_wordpiece.detokenize(rows))
        )


def as_python(strings):
    if isinstance(strings, tf.RaggedTensor):
        return strings.to_list()
    return strings.numpy().tolist() if strings.shape.rank else strings.numpy()
