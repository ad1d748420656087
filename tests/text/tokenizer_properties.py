"""Property-based checks that tfnlp's two BERT tokenizers give the ids of
the original on any input, run by tests/text/test_tokenizer_fuzzing.py.

Each property draws inputs with Hypothesis and asserts that the in-graph
`BertTokenizer`, the plain-Python `PlainBertTokenizer` and the reference
re-statement of google-research/bert (tests/text/reference_bert_tokenizer.py)
give the same ids:

- "unicode text": arbitrary text, cased and uncased, over a small fixed
  vocabulary (every ASCII letter and digit alone and as a "##"
  continuation, a few words, accented, Greek and CJK characters), so that
  nearly every word is split into pieces instead of becoming [UNK]. The
  characters are any Unicode character that Python's database assigns
  (every category, controls, format characters, combining marks, private
  use), with extra weight on the ones the original treats specially
  (whitespace, controls, punctuation, CJK, final sigma), and runs of about
  200 characters around the long-word limit;
- "bytes": arbitrary bytes, invalid UTF-8 included, mixed with the UTF-8 of
  such text;
- "hostile vocabulary": vocabulary files drawn too, from a small alphabet
  with whitespace, "#", punctuation, CJK and a carriage return, with blank
  lines, tokens listed twice, "\\r\\n" line ends and "##" continuations,
  and text from the same alphabet, so that the odd tokens are met.

Code points that Python's Unicode database leaves unassigned (category Cn)
are not drawn: the original follows Python's database and tensorflow-text
follows its own, newer ICU, so the two disagree on some of them (see
tests/text/test_bert_tokenizer_parity.py).
"""

import functools
import os
import string
import tempfile

import tensorflow as tf
from hypothesis import strategies as st

from tests import property_runs

from tests.text.reference_bert_tokenizer import ReferenceBertTokenizer
from tfnlp.text import BertTokenizer, PlainBertTokenizer

# Characters the original treats specially, drawn more often than their
# share of Unicode: whitespace (including Zs, U+2028 and U+2029), controls
# and format characters that cleaning drops, combining marks, ASCII and
# Unicode punctuation, symbols, letters whose lower-casing or
# decomposition is odd (final sigma, dotted I, sharp s, a ligature), CJK
# ideographs from several of the original's ranges, private use.
SPECIAL_CHARACTERS = (
    " \t\n\r\x0b\x0c\x1c\x85\u00a0\u1680\u2000\u2028\u2029\u3000"
    "\x00\x01\x7f\x9f\u00ad\u200b\u200d\u2060\ufeff\ufffd\U000e0001"
    "\u0301\u0308\u0327\u064b\u20dd"
    "!#$.,;[]^`{}~\u00ab\u00bb\u00bf\u2014\u2026\u3002\uff0c"
    "\u00a9\u20ac+<=>|"
    "aAzZ09\u00e9\u00c9\u00df\u0130\ufb01\u1e9e\u03a3\u03c3\u03c2\u039f"
    "\u4e00\u732b\u9fff\u3400\U00020000\uf900\U0002f800"
    "\ue000\U000f0000"
)

FIXED_VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    *(string.ascii_letters + string.digits),
    *("##" + character for character in string.ascii_letters + string.digits),
    "the", "cat", "##s", "un", "##aff", "##able", "unaff", "cafe", "caf\u00e9",
    "\u00e9", "##\u00e9", "\u00df", "##\u00df", "\u03c3", "\u03c2", "##\u03c2",
    "##\u03c3", "\u03bf", "##\u03bf", "\u039f", "\u03a3", "\u4e00", "\u732b",
    "!", "#", ".", ",", "[", "]", "\u00ab", "\u00bb", "\u2026", "\u00a9",
    "a\u00a9", "\ue000", "##\ue000",
]

characters = st.one_of(
    st.sampled_from(SPECIAL_CHARACTERS),
    st.characters(exclude_categories=("Cs", "Cn")),
)
# A character repeated around the original's 200-character word limit.
long_runs = st.tuples(characters, st.integers(195, 205)).map(
    lambda pair: pair[0] * pair[1]
)
texts = st.lists(
    st.one_of(st.text(characters, max_size=10), long_runs), max_size=5
).map("".join)
byte_strings = st.lists(
    st.one_of(st.binary(max_size=4), texts.map(lambda text: text.encode("utf-8"))),
    max_size=5,
).map(b"".join)

# Vocabulary lines and the text run over them share an alphabet, and the
# text is partly made of the lines, so that tokens with whitespace, "#" or
# punctuation inside are met in the text.
HOSTILE_ALPHABET = "ab #.\u00a0\u3000\t\r\u732b\u00e9A"
hostile_tokens = st.one_of(
    st.text(HOSTILE_ALPHABET, max_size=5),
    st.text(HOSTILE_ALPHABET, max_size=4).map(lambda token: "##" + token),
)


@st.composite
def hostile_examples(draw):
    """A vocabulary file's bytes (drawn lines, some of them listed again,
    and [UNK] somewhere, joined by "\\n" or "\\r\\n"), `lower_case`, and a
    batch of texts made of its lines and of the same alphabet."""
    lines = draw(st.lists(hostile_tokens, max_size=10))
    if lines:
        for line in draw(st.lists(st.sampled_from(lines), max_size=3)):
            lines.insert(draw(st.integers(0, len(lines))), line)
    lines.insert(draw(st.integers(0, len(lines))), "[UNK]")
    separator = draw(st.sampled_from(["\n", "\r\n"]))
    ending = draw(st.sampled_from(["", separator]))
    vocabulary_bytes = (separator.join(lines) + ending).encode("utf-8")
    pieces = st.one_of(
        st.sampled_from(lines).map(lambda line: line.removeprefix("##")),
        st.text(HOSTILE_ALPHABET + "\n\x00", max_size=3),
    )
    batch = draw(st.lists(st.lists(pieces, max_size=6).map("".join), min_size=1, max_size=8))
    return vocabulary_bytes, draw(st.booleans()), batch


class ThreeTokenizers:
    """`BertTokenizer`, `PlainBertTokenizer` and the reference on one
    vocabulary file.

    Args:
        vocab_file: the vocabulary file.
        lower_case: the tokenizers' `lower_case`.
        compiled: call `BertTokenizer.tokenize` through a `tf.function`
            (traced once, then much faster per call than eagerly).
    """

    def __init__(self, vocab_file, lower_case=True, compiled=False):
        self.bert = BertTokenizer(vocab_file, lower_case=lower_case)
        self.plain = PlainBertTokenizer(vocab_file, lower_case=lower_case)
        self.reference = ReferenceBertTokenizer(vocab_file, lower_case=lower_case)
        self._bert_tokenize = self.bert.tokenize
        if compiled:
            self._bert_tokenize = tf.function(
                self.bert.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]
            )

    def assert_same_ids(self, texts):
        """Checks that all three give each of `texts` (str or bytes) the
        same ids, with one `BertTokenizer` call for the batch."""
        bert_ids = self._bert_tokenize(tf.constant(texts)).to_list()
        for text, ours in zip(texts, bert_ids):
            expected = self.reference.tokenize_to_ids(text)
            plain = self.plain.tokenize(text)
            assert ours == expected and plain == expected, (
                f"{text!r}: reference {expected}, BertTokenizer {ours}, "
                f"PlainBertTokenizer {plain}"
            )

    def ids(self, text):
        """The ids of `text`, after checking that all three agree."""
        self.assert_same_ids([text])
        return self.reference.tokenize_to_ids(text)


@functools.cache
def fixed_vocabulary_tokenizers(lower_case, compiled):
    """The three tokenizers on FIXED_VOCABULARY, built once per process
    (the vocabulary file goes when they do)."""
    directory = tempfile.TemporaryDirectory(prefix="tfnlp-fuzzing-")
    vocab_file = os.path.join(directory.name, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8", newline="\n") as file:
        file.write("".join(token + "\n" for token in FIXED_VOCABULARY))
    tokenizers = ThreeTokenizers(vocab_file, lower_case, compiled)
    tokenizers.vocabulary_directory = directory
    return tokenizers


def check_fixed_vocabulary(lower_case, batch, compiled):
    fixed_vocabulary_tokenizers(lower_case, compiled).assert_same_ids(batch)


def check_hostile_vocabulary(vocabulary_bytes, lower_case, batch, compiled):
    with tempfile.TemporaryDirectory() as directory:
        vocab_file = os.path.join(directory, "vocab.txt")
        with open(vocab_file, "wb") as file:
            file.write(vocabulary_bytes)
        ThreeTokenizers(vocab_file, lower_case, compiled).assert_same_ids(batch)


# Each property: the function that checks one drawn example, and the
# strategy of its arguments. A drawn batch of texts goes to BertTokenizer in
# one call (a call costs milliseconds however short the text).
PROPERTIES = {
    "unicode text": (
        check_fixed_vocabulary,
        st.tuples(st.booleans(), st.lists(texts, min_size=1, max_size=16)),
    ),
    "bytes": (
        check_fixed_vocabulary,
        st.tuples(st.booleans(), st.lists(byte_strings, min_size=1, max_size=16)),
    ),
    "hostile vocabulary": (check_hostile_vocabulary, hostile_examples()),
}


def run_property(name, max_examples, derandomize, compiled=False):
    """Runs the property `name` on `max_examples` drawn examples.

    Args:
        name: a key of PROPERTIES.
        max_examples: how many examples Hypothesis draws (at most).
        derandomize: draw the same examples on every run.
        compiled: call `BertTokenizer.tokenize` through a `tf.function`:
            seconds to trace for each vocabulary, then about ten times
            faster a call than eagerly, so only worth it for many examples
            over one vocabulary.

    Raises:
        AssertionError: the tokenizers disagree; Hypothesis has shrunk the
            example to a minimal one, which the error's notes show.
    """
    check, arguments = PROPERTIES[name]
    property_runs.run_property(lambda *example: check(*example, compiled), arguments,
                               max_examples, derandomize)
