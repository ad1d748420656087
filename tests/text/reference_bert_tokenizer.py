"""Test oracle: the original BERT tokenizer algorithm in plain Python.

This module re-implements, from the published algorithm, the behaviour of
google-research/bert's ``FullTokenizer`` (basic tokenization followed by
greedy longest-match-first WordPiece).  It uses only the standard library
(``unicodedata``), no TensorFlow, so that it is an independent ground truth:
the tests run tfnlp's in-graph tokenizer and this reference over the same real
text, line by line, and require identical token ids.

Every rule below is deliberate, including the odd ones, because the goal is
byte-for-byte identical ids to the original:

* the vocabulary is read as ``tf.gfile`` reads it (lines end at "\\n", every
  "\\r" is dropped), each line stripped; a token listed twice has the id of
  its later line, and a token with whitespace inside is never produced
  (WordPiece only looks up pieces of whitespace-split words);
* text cleaning drops NUL, U+FFFD and "Cc"/"Cf" characters (tab, newline and
  carriage return excepted) without inserting a space, so ``"a\\x00b"`` is the
  single word ``"ab"``; every whitespace character becomes one space;
* CJK ideographs are surrounded by spaces;
* words are split with Python's ``str.split()``, which also splits on the
  line and paragraph separators U+2028 and U+2029 that the cleaning step
  keeps (they are neither control characters nor "Zs");
* with ``lower_case``, each word is ``str.lower()``-ed (full Python lower
  casing, e.g. Greek final sigma becomes "ς") and its accents are stripped
  (NFD, then drop "Mn" characters); without it, neither happens;
* every punctuation character (ASCII symbol ranges or a "P*" category) is its
  own token;
* WordPiece turns a word longer than 200 code points, or any word it cannot
  cover completely, into a single ``"[UNK]"``;
* special-token strings in the text (``"[MASK]"``, ``"[CLS]"``) get no special
  treatment; they are split like any other text.

Character categories come from the running Python's ``unicodedata`` database
(``unicodedata.unidata_version``), as they do for the original.
"""

import functools
import unicodedata

UNKNOWN_TOKEN = "[UNK]"
CONTINUATION_PREFIX = "##"
MAX_CHARACTERS_PER_WORD = 200

# Code point ranges treated as CJK ideographs (each becomes its own word).
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# ASCII code point ranges counted as punctuation even though some of them
# ("$", "+", "<", "^", "`", "~", ...) are symbols in Unicode.
ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))


def to_text(text_or_bytes):
    """Returns a str; bytes are decoded as UTF-8, dropping invalid bytes."""
    if isinstance(text_or_bytes, str):
        return text_or_bytes
    if isinstance(text_or_bytes, bytes):
        return text_or_bytes.decode("utf-8", errors="ignore")
    raise TypeError(f"Expected str or bytes, got {type(text_or_bytes)!r}")


def load_vocabulary(path):
    """Maps each token of a vocabulary file to its line index.

    As the original's ``load_vocab``, which reads through ``tf.gfile``: a
    line ends at "\\n" and loses every "\\r" (the reading stops at a last
    line that held nothing else), its bytes are strict UTF-8, it is
    stripped, and a token on two lines keeps the index of the later one.
    """
    vocabulary = {}
    with open(path, "rb") as vocabulary_file:
        for index, line in enumerate(vocabulary_file):
            line = line.replace(b"\r", b"")
            if not line:
                break
            vocabulary[line.decode("utf-8").strip()] = index
    return vocabulary


# Character classes: each depends on one character only, so it is cached,
# purely to make tokenizing whole books faster.


@functools.cache
def is_whitespace(character):
    if character in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(character) == "Zs"


@functools.cache
def is_control(character):
    if character in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(character) in ("Cc", "Cf")


@functools.cache
def is_punctuation(character):
    code_point = ord(character)
    for low, high in ASCII_PUNCTUATION_RANGES:
        if low <= code_point <= high:
            return True
    return unicodedata.category(character).startswith("P")


@functools.cache
def is_cjk_ideograph(character):
    code_point = ord(character)
    return any(low <= code_point <= high for low, high in CJK_RANGES)


def clean_text(text):
    """Drops NUL, U+FFFD and control characters; maps whitespace to " "."""
    output = []
    for character in text:
        if character in ("\x00", "\ufffd") or is_control(character):
            continue
        output.append(" " if is_whitespace(character) else character)
    return "".join(output)


def space_out_cjk_ideographs(text):
    output = []
    for character in text:
        if is_cjk_ideograph(character):
            output.append(f" {character} ")
        else:
            output.append(character)
    return "".join(output)


def strip_accents(word):
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(
        character
        for character in decomposed
        if unicodedata.category(character) != "Mn"
    )


def split_on_punctuation(word):
    """Splits a word so that each punctuation character is its own piece."""
    pieces = []
    current_piece = []
    for character in word:
        if is_punctuation(character):
            if current_piece:
                pieces.append("".join(current_piece))
                current_piece = []
            pieces.append(character)
        else:
            current_piece.append(character)
    if current_piece:
        pieces.append("".join(current_piece))
    return pieces


def wordpiece_split(word, vocabulary):
    """Greedy longest-match-first WordPiece split of one word."""
    if len(word) > MAX_CHARACTERS_PER_WORD:
        return [UNKNOWN_TOKEN]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        match = None
        while end > start:
            candidate = word[start:end]
            if start > 0:
                candidate = CONTINUATION_PREFIX + candidate
            if candidate in vocabulary:
                match = candidate
                break
            end -= 1
        if match is None:
            return [UNKNOWN_TOKEN]
        pieces.append(match)
        start = end
    return pieces


class ReferenceBertTokenizer:
    """The original BERT FullTokenizer: basic tokenization, then WordPiece."""

    def __init__(self, vocab_file, lower_case=True):
        self.vocabulary = load_vocabulary(vocab_file)
        self.lower_case = lower_case
        self.unknown_id = self.vocabulary[UNKNOWN_TOKEN]

    def basic_tokenize(self, text):
        """Cleans, lower-cases and splits text into words and punctuation."""
        text = space_out_cjk_ideographs(clean_text(to_text(text)))
        split_words = []
        for word in text.split():
            if self.lower_case:
                word = strip_accents(word.lower())
            split_words.extend(split_on_punctuation(word))
        return " ".join(split_words).split()

    def tokenize(self, text):
        """Returns the WordPiece tokens of text."""
        tokens = []
        for word in self.basic_tokenize(text):
            tokens.extend(wordpiece_split(word, self.vocabulary))
        return tokens

    def tokenize_to_ids(self, text):
        """Returns the vocabulary ids of the WordPiece tokens of text."""
        return [
            self.vocabulary.get(token, self.unknown_id)
            for token in self.tokenize(text)
        ]
