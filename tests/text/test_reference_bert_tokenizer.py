"""Hand-checked cases pinning down each rule of the reference BERT tokenizer.

The reference is the oracle for tfnlp's in-graph tokenizer, so these tests
check it against outputs worked out by hand from the original algorithm.
"""

import pytest

from tests.text.reference_bert_tokenizer import (
    ReferenceBertTokenizer,
    load_vocabulary,
    to_text,
)


@pytest.fixture(scope="module")
def uncased_vocab_file(shared_data_dir):
    return shared_data_dir / "vocab" / "bert-base-uncased-vocab.txt"


@pytest.fixture(scope="module")
def uncased(uncased_vocab_file):
    return ReferenceBertTokenizer(uncased_vocab_file, lower_case=True)


@pytest.fixture(scope="module")
def cased(shared_data_dir):
    return ReferenceBertTokenizer(
        shared_data_dir / "vocab" / "bert-base-cased-vocab.txt", lower_case=False
    )


def test_vocabulary_ids_are_line_indices(uncased_vocab_file):
    vocabulary = load_vocabulary(uncased_vocab_file)
    assert len(vocabulary) == 30522
    assert vocabulary["[PAD]"] == 0
    assert vocabulary["[UNK]"] == 100
    assert vocabulary["[CLS]"] == 101
    assert vocabulary["[SEP]"] == 102
    assert vocabulary["[MASK]"] == 103


def test_vocabulary_lines_are_stripped(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\n  a \n\nb\t\n")
    assert load_vocabulary(path) == {"[UNK]": 0, "a": 1, "": 2, "b": 3}


def test_bytes_are_decoded_dropping_invalid_utf8(uncased):
    assert to_text(b"caf\xc3\xa9 \xff!") == "café !"
    assert uncased.basic_tokenize(b"caf\xc3\xa9 \xff!") == ["cafe", "!"]


def test_wordpiece_split_of_a_known_word(uncased, cased):
    assert uncased.tokenize("unaffable") == ["una", "##ffa", "##ble"]
    assert uncased.tokenize_to_ids("unaffable") == [14477, 20961, 3468]
    assert cased.tokenize("unaffable") == ["un", "##af", "##fa", "##ble"]


def test_removed_characters_join_their_neighbours(uncased):
    # NUL, U+FFFD, a "Cc" and a "Cf" character vanish without a space.
    assert uncased.basic_tokenize("a\x00b") == ["ab"]
    assert uncased.tokenize("a\x00b") == ["ab"]
    assert uncased.basic_tokenize("a\ufffdb") == ["ab"]
    assert uncased.basic_tokenize("a\x1cb c\x85d") == ["ab", "cd"]
    assert uncased.basic_tokenize("a\u200bb") == ["ab"]  # zero-width space, Cf


def test_tab_newline_return_and_space_separators_are_spaces(uncased):
    assert uncased.basic_tokenize("a\tb\nc\rd") == ["a", "b", "c", "d"]
    assert uncased.basic_tokenize("a\u00a0b\u3000c") == ["a", "b", "c"]  # Zs
    assert uncased.basic_tokenize("  \t\n ") == []
    assert uncased.tokenize("") == []


def test_line_and_paragraph_separators_split_words(uncased):
    # U+2028 (Zl) and U+2029 (Zp) survive cleaning but str.split() splits on them.
    assert uncased.basic_tokenize("a\u2028b\u2029c") == ["a", "b", "c"]


def test_cjk_ideographs_are_single_words(uncased, cased):
    assert uncased.basic_tokenize("中文abc") == ["中", "文", "abc"]
    assert uncased.tokenize_to_ids("中文abc") == [1746, 1861, 5925]
    assert cased.basic_tokenize("x中y") == ["x", "中", "y"]
    # Hiragana is not in the CJK ideograph ranges.
    assert cased.basic_tokenize("ひらがな") == ["ひらがな"]


def test_accents_are_stripped_only_when_lower_casing(uncased, cased):
    assert uncased.basic_tokenize("Héllo İstanbul") == ["hello", "istanbul"]
    assert cased.basic_tokenize("Héllo İstanbul") == ["Héllo", "İstanbul"]
    assert cased.tokenize("Héllo") == ["H", "##é", "##llo"]
    # NFD splits the voicing mark off "が"; it is "Mn", so it is dropped too.
    assert uncased.basic_tokenize("がが") == ["かか"]
    assert cased.basic_tokenize("がが") == ["がが"]


def test_greek_final_sigma_follows_python_lower(uncased):
    final_sigma, sigma = "\u03c2", "\u03c3"
    assert uncased.basic_tokenize("ΟΔΟΣ ΣΑ") == ["οδο" + final_sigma, sigma + "α"]
    assert uncased.tokenize("ΟΔΟΣ ΣΑ") == ["ο", "##δ", "##ος", "σ", "##α"]
    assert uncased.tokenize_to_ids(final_sigma) == [1172]
    assert uncased.tokenize_to_ids("Σ") == [1173]


def test_punctuation_includes_ascii_symbols_and_unicode_p(uncased, cased):
    assert uncased.basic_tokenize("a$b^c`d~e+f<g") == [
        "a", "$", "b", "^", "c", "`", "d", "~", "e", "+", "f", "<", "g",
    ]
    assert uncased.basic_tokenize("«Hi»—there...") == [
        "«", "hi", "»", "—", "there", ".", ".", ".",
    ]
    assert cased.basic_tokenize("don't") == ["don", "'", "t"]
    # A non-ASCII symbol ("So") is not punctuation.
    assert uncased.basic_tokenize("a☃b") == ["a☃b"]


def test_special_token_text_is_not_special(uncased, cased):
    assert uncased.tokenize("[MASK]") == ["[", "mask", "]"]
    assert 103 not in uncased.tokenize_to_ids("[MASK] [CLS]")
    assert cased.basic_tokenize("[MASK]") == ["[", "MASK", "]"]


def test_words_over_200_characters_are_unknown(uncased):
    assert uncased.tokenize("a" * 201) == ["[UNK]"]
    assert uncased.tokenize_to_ids("x " + "a" * 201 + " y") == [1060, 100, 1061]


def test_200_character_word_is_split_normally(uncased):
    tokens = uncased.tokenize("ab" * 100)
    assert tokens == ["aba"] + ["##ba"] * 98 + ["##b"]
    assert "[UNK]" not in tokens


def test_unmatched_suffix_makes_the_whole_word_unknown(uncased):
    assert uncased.tokenize("abc☃") == ["[UNK]"]
    assert uncased.tokenize("abc☃ d") == ["[UNK]", "d"]
    assert uncased.tokenize_to_ids("abc☃") == [100]
