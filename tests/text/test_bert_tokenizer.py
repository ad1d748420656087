import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from tests.text.reference_bert_tokenizer import is_cjk_ideograph, is_punctuation
from tfnlp.text import BertTokenizer

UNCASED = "vocab/bert-base-uncased-vocab.txt"
CASED = "vocab/bert-base-cased-vocab.txt"


@pytest.fixture(scope="module")
def uncased(shared_data_dir):
    return BertTokenizer(shared_data_dir / UNCASED, lower_case=True)


@pytest.fixture(scope="module")
def cased(shared_data_dir):
    return BertTokenizer(shared_data_dir / CASED, lower_case=False)


def tokens(tokenizer, text):
    return [t.decode() for t in tokenizer.id_to_token(tokenizer.tokenize(text)).numpy()]


def test_known_word_pieces_and_ids(uncased, cased):
    assert uncased.tokenize(tf.constant(["Hello, world!"])).to_list() == [
        [7592, 1010, 2088, 999]
    ]
    assert tokens(uncased, "unaffable") == ["una", "##ffa", "##ble"]
    assert tokens(cased, "Héllo") == ["H", "##é", "##llo"]
    assert tokens(uncased, "Héllo") == ["hello"]


def test_special_ids_and_vocab_size(uncased, cased):
    assert (uncased.pad_id, uncased.unk_id, uncased.cls_id, uncased.sep_id,
            uncased.mask_id) == (0, 100, 101, 102, 103)
    assert uncased.vocab_size == 30522
    assert cased.vocab_size == 28996


def test_vocabulary_without_unk_is_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\nhello\n")
    with pytest.raises(ValueError, match=r"no \[UNK\]"):
        BertTokenizer(path)


def test_literal_mask_in_the_text_is_text(uncased):
    assert tokens(uncased, "a [MASK] b") == ["a", "[", "mask", "]", "b"]


def test_no_special_tokens_are_added(uncased):
    ids = uncased.tokenize("hello").numpy().tolist()
    assert uncased.cls_id not in ids and uncased.sep_id not in ids


def test_any_input_shape_gives_one_more_ragged_dimension(uncased):
    assert uncased.tokenize("hello world").numpy().tolist() == [7592, 2088]
    nested = uncased.tokenize(tf.constant([["hello world", "a"], ["b", ""]]))
    assert nested.to_list() == [[[7592, 2088], [1037]], [[1038], []]]


def test_detokenize_joins_pieces(uncased):
    ids = uncased.tokenize(tf.constant(["Unaffable, naïve CAFÉ."]))
    assert uncased.detokenize(ids).numpy().tolist() == [b"unaffable , naive cafe ."]


def test_works_in_tf_data_and_tf_function(uncased):
    lines = ["the quick brown fox", "jumps over", ""]
    expected = uncased.tokenize(tf.constant(lines)).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(lines).map(uncased.tokenize)
    assert [row.tolist() for row in dataset.as_numpy_iterator()] == expected
    batched = tf.data.Dataset.from_tensor_slices(lines).batch(2).map(uncased.tokenize)
    assert [r for batch in batched for r in batch.to_list()] == expected
    compiled = tf.function(uncased.tokenize)
    assert compiled(tf.constant(lines)).to_list() == expected


def test_saved_model_takes_raw_strings_and_carries_the_vocabulary(
    uncased, tmp_path, shared_data_dir
):
    module = tf.Module()
    module.tokenizer = uncased

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(strings):
        return {"ids": uncased.tokenize(strings).to_tensor()}

    module.serve = serve
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": serve})
    assets = list((tmp_path / "assets").iterdir())
    assert [asset.read_bytes() for asset in assets] == [
        (shared_data_dir / UNCASED).read_bytes()
    ]
    loaded = tf.saved_model.load(str(tmp_path))
    outputs = loaded.signatures["serving_default"](tf.constant(["Hello, world!"]))
    assert outputs["ids"].numpy().tolist() == [[7592, 1010, 2088, 999]]


def test_keras_layer_config_round_trip(uncased):
    config = keras.saving.serialize_keras_object(uncased)
    revived = keras.saving.deserialize_keras_object(config)
    assert isinstance(revived, BertTokenizer)
    assert revived.lower_case is True
    text = tf.constant(["A layer, too."])
    assert revived(text).to_list() == uncased(text).to_list()


def test_invalid_utf8_bytes_are_dropped_like_the_original(uncased):
    # The original decodes with errors="ignore": bad bytes vanish and the
    # letters around them join.
    assert tokens(uncased, b"ca\xfft dog\xc3") == tokens(uncased, "cat dog")


def test_nul_and_control_characters_are_dropped_and_join_neighbours(uncased):
    assert tokens(uncased, "do\x00g \x07cat\ufffd") == ["dog", "cat"]
    assert tokens(uncased, "a\tb\nc\rd") == ["a", "b", "c", "d"]


def test_empty_and_blank_strings_give_no_tokens(uncased):
    ids = uncased.tokenize(tf.constant(["", " ", "\x00", "\n\t"]))
    assert ids.to_list() == [[], [], [], []]


def test_one_megabyte_line(uncased):
    line = "word " * 200_000  # 1 MB
    ids = uncased.tokenize(tf.constant([line, "short"]))
    assert ids.row_lengths().numpy().tolist() == [200_000, 1]
    assert set(ids[0].numpy().tolist()) == {2773}
    one_word = "a" * 1_000_000
    assert uncased.tokenize(tf.constant([one_word])).to_list() == [[uncased.unk_id]]


def test_words_over_200_characters_become_unk(uncased):
    assert "[UNK]" not in tokens(uncased, "a" * 200)
    assert tokens(uncased, "a" * 201 + ", ok") == ["[UNK]", ",", "ok"]
    # Characters, not bytes: 150 two-byte Greek letters are 300 bytes.
    assert "[UNK]" not in tokens(uncased, "α" * 150)
    assert tokens(uncased, "α" * 201) == ["[UNK]"]
    # A long run of words and punctuation without spaces is not one word.
    assert "[UNK]" not in tokens(uncased, "ab." * 100)


def test_greek_final_sigma_is_lower_cased_as_python_does(cased, shared_data_dir):
    lower = BertTokenizer(shared_data_dir / CASED, lower_case=True)
    assert "ΟΔΟΣ".lower() == "οδος"
    normalized = lower.detokenize(lower.tokenize(tf.constant(["ΟΔΟΣ"])))
    pieces = tokens(lower, "ΟΔΟΣ")
    assert pieces[-1].endswith("ς"), (pieces, normalized)


def fast_wordpiece_split_lengths(code_points):
    vocabulary = ["[UNK]", "a", "b", "##b"]
    splitter = tf_text.FastWordpieceTokenizer(
        vocabulary, no_pretokenization=False, token_out_type=tf.string
    )
    strings = tf.constant(["a" + chr(c) + "b" for c in code_points])
    return splitter.tokenize(strings).row_lengths().numpy()


def test_every_code_point_splits_as_in_the_original():
    """The end-to-end WordPiece splits on exactly the original's whitespace
    (Python's str.split), punctuation (ASCII ranges and P*) and CJK
    characters. Only code points that Python's Unicode database leaves
    unassigned may differ (tensorflow-text's ICU is newer)."""
    code_points = [
        c for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and unicodedata.category(chr(c)) not in ("Cc", "Cf", "Cn")
    ]
    split_lengths = fast_wordpiece_split_lengths(code_points)
    mismatches = []
    for code_point, length in zip(code_points, split_lengths):
        character = chr(code_point)
        if character.isspace():
            expected = 2
        elif is_punctuation(character) or is_cjk_ideograph(character):
            expected = 3
        else:
            expected = 1 if character != "b" else 3  # "a" "##b" "##b"
        if length != expected:
            mismatches.append(hex(code_point))
    assert mismatches == []
