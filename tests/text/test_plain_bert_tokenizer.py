"""Fast, TensorFlow-free checks of `PlainBertTokenizer`, one rule each.

The expected ids are worked out by hand from google-research/bert's
`tokenization.py` (`BasicTokenizer` then `WordpieceTokenizer`): cleaning
drops NUL, U+FFFD and Cc/Cf characters other than tab, newline and carriage
return, and turns whitespace (those three and Zs) into spaces; CJK
ideographs are words of their own; lower-casing is Python's `str.lower` and
accents go with NFD and dropping Mn; every ASCII symbol and every P*
character is a token of its own; WordPiece is greedy longest-match-first
with "##" continuations, and a word over 200 characters, or one it cannot
cover, is one [UNK]. The slow comparison against the reference on real text
and on every code point is tests/text/test_bert_tokenizer_parity.py.
"""

import pytest

from tfnlp.text.plain_bert_tokenizer import PlainBertTokenizer

# A token's id is its index; \u00e9 is é, \u00ab and \u00bb are « and »,
# \u732b is 猫 (a CJK ideograph) and \u00a9 is ©.
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "un",
    "##aff", "##able", "unaff", "!", "$", "mask", "[", "]", "cafe", "caf\u00e9",
    "Cat", "\u00ab", "\u00bb", "\u732b", "a", "##a", "\u00a9", "a\u00a9",
]


def ids_of(*tokens):
    """The ids of `tokens` in VOCABULARY (the first occurrence)."""
    return [VOCABULARY.index(token) for token in tokens]


@pytest.fixture
def uncased():
    return PlainBertTokenizer(VOCABULARY, lower_case=True)


@pytest.fixture
def cased():
    return PlainBertTokenizer(VOCABULARY, lower_case=False)


def test_a_vocabulary_file_gives_each_stripped_line_its_line_number(tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("[UNK]\n the \ncat\n", encoding="utf-8")
    for path in (vocab_file, str(vocab_file)):
        tokenizer = PlainBertTokenizer(path)
        assert tokenizer.vocabulary == ["[UNK]", "the", "cat"]
        assert tokenizer.vocab_size == 3
        assert tokenizer.unk_id == 0
        assert tokenizer.tokenize("The cat") == [1, 2]


def test_a_token_listed_twice_gets_its_later_id_as_in_the_original():
    tokenizer = PlainBertTokenizer(["cat", "[UNK]", "cat"])
    assert tokenizer.unk_id == 1
    assert tokenizer.tokenize("cat dog") == [2, 1]


def test_a_vocabulary_without_unk_is_rejected():
    with pytest.raises(ValueError, match=r"^The vocabulary has no \[UNK\] token; WordPiece "
                                         r"needs it for words it cannot split\. Add it to "
                                         r"the vocabulary file\.$"):
        PlainBertTokenizer(["[PAD]", "the"])


def test_longest_match_first_wordpiece(uncased):
    # The original's docstring example: "unaffable" -> un ##aff ##able, but
    # with "unaff" in the vocabulary the longest first piece wins.
    assert uncased.tokenize("unaffable") == ids_of("unaff", "##able")
    assert uncased.tokenize("cats") == ids_of("cat", "##s")
    assert uncased.tokenize("aaa") == ids_of("a", "##a", "##a")


def test_a_word_that_cannot_be_covered_is_one_unk(uncased):
    # "catz": "cat" matches but "##z" does not, so the whole word is [UNK].
    assert uncased.tokenize("catz the") == ids_of("[UNK]", "the")
    assert uncased.tokenize("xcat") == ids_of("[UNK]")


def test_words_over_200_characters_are_unk_and_200_characters_are_split(uncased):
    assert uncased.tokenize("a" * 200) == ids_of("a") + ids_of("##a") * 199
    assert uncased.tokenize("a" * 201) == ids_of("[UNK]")


def test_lower_case_folds_case_and_strips_accents_and_cased_keeps_both(uncased, cased):
    assert uncased.tokenize("The CAT") == ids_of("the", "cat")
    assert cased.tokenize("The Cat") == ids_of("[UNK]", "Cat")
    assert uncased.tokenize("Café") == ids_of("cafe")
    assert cased.tokenize("café") == ids_of("café")
    # Python's lower() gives a word-final capital sigma the final form ς
    # (U+03C2), not σ (U+03C3), as the original's lower() does.
    final_sigma, sigma = "\u03bf\u03b4\u03bf\u03c2", "\u03bf\u03b4\u03bf\u03c3"
    tokenizer = PlainBertTokenizer(["[UNK]", final_sigma, sigma])
    assert tokenizer.tokenize("\u039f\u0394\u039f\u03a3") == [1]


def test_every_ascii_symbol_is_a_token_of_its_own():
    symbols = [chr(c) for c in (*range(33, 48), *range(58, 65), *range(91, 97), *range(123, 127))]
    tokenizer = PlainBertTokenizer(["[UNK]", "a", *symbols])
    for index, symbol in enumerate(symbols, start=2):
        assert tokenizer.tokenize(f"a{symbol}a") == [1, index, 1], symbol
    # Letters, digits and the characters between the ranges are not split.
    assert tokenizer.tokenize("a0a") == [0]


def test_non_ascii_punctuation_splits_and_symbols_do_not(uncased):
    # « and » are Unicode punctuation (Pi, Pf); © is a symbol (So).
    assert uncased.tokenize("«cat»") == ids_of("«", "cat", "»")
    assert uncased.tokenize("a©") == ids_of("a©")
    # In a non-ASCII word, ASCII punctuation still splits.
    assert uncased.tokenize("café!") == ids_of("cafe", "!")


def test_special_token_strings_in_the_text_are_ordinary_text(uncased):
    assert uncased.tokenize("[MASK]") == ids_of("[", "mask", "]")


def test_cjk_ideographs_are_words_of_their_own(uncased):
    assert uncased.tokenize("猫猫the") == ids_of("猫", "猫", "the")


@pytest.mark.parametrize("first, last", [
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
])
def test_both_ends_of_each_cjk_range_of_the_original_are_words(first, last):
    # Cased, since NFD maps the compatibility ideographs to other ones.
    tokenizer = PlainBertTokenizer(["[UNK]", "a", chr(first), chr(last)], lower_case=False)
    assert tokenizer.tokenize("a" + chr(first) + "a" + chr(last)) == [1, 2, 1, 3]


@pytest.mark.parametrize("code_point", [
    0x33FF, 0x4DC0, 0x4DFF, 0xA000, 0xF8FF, 0xFB00, 0x1FFFF, 0x2A6E0, 0x2A6FF,
    0x2CEB0, 0x2F7FF, 0x2FA20,
])
def test_characters_just_outside_the_cjk_ranges_stay_in_their_word(code_point):
    # Not split off, the character joins "a" into a word WordPiece cannot
    # cover. U+2CEB0 starts CJK extension F, newer than the original's list.
    tokenizer = PlainBertTokenizer(["[UNK]", "a", chr(code_point)], lower_case=False)
    assert tokenizer.tokenize("a" + chr(code_point)) == [0]


def test_bytes_are_read_as_utf8_dropping_invalid_bytes(uncased):
    assert uncased.tokenize(b"c\xffat caf\xc3\xa9") == ids_of("cat", "cafe")


def test_control_characters_are_dropped_and_join_their_neighbours(uncased):
    # ASCII text: NUL, other C0 controls and DEL are removed, not spaces.
    assert uncased.tokenize("c\x00a\x1ft\x7fs") == ids_of("cat", "##s")
    # Non-ASCII text: U+FFFD, a C1 control (U+0085) and a format character
    # (the soft hyphen U+00AD) are removed too.
    assert uncased.tokenize("ca\ufffdt\u0085s\u00ad café") == ids_of("cat", "##s", "cafe")


def test_tab_newline_return_and_unicode_spaces_separate_words(uncased):
    assert uncased.tokenize("the\tcat\nthe\rcat") == ids_of("the", "cat", "the", "cat")
    # The no-break space U+00A0 and the ideographic space U+3000 are Zs.
    assert uncased.tokenize("the\u00a0cat\u3000café") == ids_of("the", "cat", "cafe")


def test_empty_and_blank_text_give_no_ids(uncased):
    assert uncased.tokenize("") == []
    assert uncased.tokenize(" \t\n\u00a0\x00") == []


def test_repeated_words_give_the_same_ids_across_calls_and_cache_refills():
    tokenizer = PlainBertTokenizer(VOCABULARY, cache_size=2)
    text = "cats the unaffable cats café the"
    expected = ids_of("cat", "##s", "the", "unaff", "##able", "cat", "##s", "cafe", "the")
    assert tokenizer.tokenize(text) == expected
    assert tokenizer.tokenize(text) == expected
