"""tfnlp's tokenizers (in-graph `BertTokenizer`, plain-Python
`PlainBertTokenizer`) against the original algorithm and Hugging Face, on
real text and on every code point."""

import unicodedata

import pytest
import tensorflow as tf
from tokenizers import BertWordPieceTokenizer

from tests.text.reference_bert_tokenizer import ReferenceBertTokenizer, clean_text
from tfnlp.text import BertTokenizer, PlainBertTokenizer
from tfnlp.text.normalization import normalize

VOCABULARIES = {
    "uncased": ("vocab/bert-base-uncased-vocab.txt", True),
    "cased": ("vocab/bert-base-cased-vocab.txt", False),
}
TEXTS = ["mono/wikitext-2-test.txt", "mono/gutenberg-16-books.txt"]


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return file.read().split("\n")


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("vocabulary", sorted(VOCABULARIES))
def test_every_line_of_real_text_gives_the_ids_of_the_original(
    shared_data_dir, text, vocabulary
):
    vocab_file, lower_case = VOCABULARIES[vocabulary]
    reference = ReferenceBertTokenizer(shared_data_dir / vocab_file, lower_case)
    tokenizer = BertTokenizer(shared_data_dir / vocab_file, lower_case=lower_case)
    plain = PlainBertTokenizer(shared_data_dir / vocab_file, lower_case=lower_case)
    lines = read_lines(shared_data_dir / text)
    ours = tokenizer.tokenize(tf.constant(lines)).to_list()
    different = {"BertTokenizer": [], "PlainBertTokenizer": []}
    for index, line in enumerate(lines):
        expected = reference.tokenize_to_ids(line)
        if ours[index] != expected:
            different["BertTokenizer"].append(index)
        if plain.tokenize(line) != expected:
            different["PlainBertTokenizer"].append(index)
    assert len(lines) > 2000
    assert different == {"BertTokenizer": [], "PlainBertTokenizer": []}


def test_normalization_of_every_code_point_matches_the_original():
    """Cleaning, lower-casing and accent stripping, one code point at a time
    between two letters, against the reference's basic tokenization. Code
    points unassigned in Python's Unicode database are left out: ICU in
    tensorflow-text knows newer Unicode, and Python's knows capitals that
    tensorflow-text's ICU cannot lower-case yet (UNICODE_14_CAPITALS)."""
    characters = [
        chr(c) for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"
    ]
    strings = ["x" + character + "y" for character in characters]
    # Splits our normalized text without normalizing it again.
    splitter = reference_without_vocabulary(lower_case=False)
    for lower_case in (True, False):
        ours = normalize(tf.constant(strings), lower_case).numpy()
        reference = reference_without_vocabulary(lower_case)
        mismatches = [
            hex(ord(character))
            for character, string, normalized in zip(characters, strings, ours)
            if splitter.basic_tokenize(normalized.decode("utf-8"))
            != reference.basic_tokenize(string)
            and ord(character) not in UNICODE_14_CAPITALS
        ]
        assert mismatches == [], f"lower_case={lower_case}: {mismatches[:20]}"


# Capital letters new in Unicode 14.0 (Python 3.11's database), which the
# ICU inside tensorflow-text does not lower-case: Glagolitic caudate chrivi,
# four Latin letters (old Polish o, closed insular g, middle Scots s,
# sigmoid s) and the Vithkuqi capitals.
UNICODE_14_CAPITALS = {0x2C2F, 0xA7C0, 0xA7D0, 0xA7D6, 0xA7D8} | set(
    range(0x10570, 0x10596)
)


def test_plain_tokenizer_matches_the_original_on_every_code_point(tmp_path):
    """Each assigned code point between two letters, tokenized with a
    vocabulary of every character (alone and as a "##" continuation), so
    that the ids spell out the normalized text."""
    characters = [
        chr(c) for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"
    ]
    vocab_file = tmp_path / "characters.txt"
    vocab_file.write_text(
        "\n".join(["[UNK]", *characters, *("##" + c for c in characters)]) + "\n",
        encoding="utf-8",
    )
    # Characters that are whitespace or empty after strip() cannot be file
    # tokens; such a character maps to [UNK] in both tokenizers alike.
    strings = ["x" + character + "y" for character in characters]
    for lower_case in (True, False):
        reference = ReferenceBertTokenizer(vocab_file, lower_case)
        plain = PlainBertTokenizer(vocab_file, lower_case=lower_case)
        mismatches = [
            hex(ord(character))
            for character, string in zip(characters, strings)
            if plain.tokenize(string) != reference.tokenize_to_ids(string)
        ]
        assert mismatches == [], f"lower_case={lower_case}: {mismatches[:20]}"


def reference_without_vocabulary(lower_case):
    """The reference's basic tokenization only (it needs no vocabulary)."""
    reference = ReferenceBertTokenizer.__new__(ReferenceBertTokenizer)
    reference.lower_case = lower_case
    return reference


def test_final_sigma_and_control_order_follow_python():
    splitter = reference_without_vocabulary(lower_case=False)
    reference = reference_without_vocabulary(lower_case=True)
    for text in ["ΟΔΟΣ", "ΟΔΟΣ.", "ΟΔΟΣΑ", "ΟΔΟΣ\x00Α", "Σ", "ΑΣ'Α", "ΑΣ\u00adΑ"]:
        ours = normalize(tf.constant([text]), lower_case=True).numpy()[0].decode()
        assert splitter.basic_tokenize(ours) == reference.basic_tokenize(text), text
    assert clean_text("a\x00b") == "ab"


@pytest.fixture(scope="module")
def huggingface(shared_data_dir):
    return BertWordPieceTokenizer(
        str(shared_data_dir / VOCABULARIES["uncased"][0]), lowercase=True
    )


@pytest.fixture(scope="module")
def uncased(shared_data_dir):
    return BertTokenizer(shared_data_dir / VOCABULARIES["uncased"][0])


@pytest.mark.parametrize("text", TEXTS)
def test_hugging_face_agrees_on_the_real_text(shared_data_dir, huggingface, uncased, text):
    lines = read_lines(shared_data_dir / text)
    ours = uncased.tokenize(tf.constant(lines)).to_list()
    theirs = [
        encoding.ids
        for encoding in huggingface.encode_batch(lines, add_special_tokens=False)
    ]
    assert ours == theirs


# Each kind of difference between Hugging Face `tokenizers` (BertWordPiece)
# and the original algorithm that tfnlp follows, with an input that shows it.
HUGGING_FACE_DIFFERENCES = {
    # HF matches special-token strings typed in the text.
    "literal [MASK] is a special token": "a [MASK] b",
    # HF's WordPiece gives [UNK] for words over 100 characters, not 200.
    "words over 100 characters": "ab" * 60,
    # HF lower-cases one character at a time: final Σ becomes σ, not ς.
    "Greek final sigma": "ΟΔΟΣ",
    # HF's control characters are all C* categories: it drops private-use
    # (Co) characters, which the original keeps (and maps to [UNK]).
    "private-use characters are dropped": "x\ue000y",
    # HF's CJK ranges start U+2B920 where the original's start U+2B820.
    "CJK range U+2B820-U+2B91F": "x\U0002B820y",
}


@pytest.mark.parametrize("kind", sorted(HUGGING_FACE_DIFFERENCES))
def test_each_documented_hugging_face_difference(
    shared_data_dir, huggingface, uncased, kind
):
    text = HUGGING_FACE_DIFFERENCES[kind]
    reference = ReferenceBertTokenizer(shared_data_dir / VOCABULARIES["uncased"][0])
    ours = uncased.tokenize(tf.constant([text])).to_list()[0]
    theirs = huggingface.encode(text, add_special_tokens=False).ids
    assert ours == reference.tokenize_to_ids(text)
    assert ours != theirs
