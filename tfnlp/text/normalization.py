"""In-graph text normalization with the semantics of the original BERT.

google-research/bert's `BasicTokenizer` cleans the text, splits it on
whitespace, optionally lower-cases and strips accents, and splits on
punctuation and around CJK ideographs. tensorflow-text's
`FastWordpieceTokenizer` (in its end-to-end mode) already splits on exactly
the original's whitespace, punctuation and CJK characters (checked code point
by code point in the tests), so this module supplies only what it lacks,
each as one vectorised TensorFlow op over a batch of strings:

- `clean_text`: invalid UTF-8 bytes, NUL, U+FFFD and control characters
  (Unicode categories Cc and Cf, except tab, newline and carriage return)
  are dropped, joining their neighbours as the original does;
- `lower_case_and_strip_accents`: full Unicode lower-casing (ICU, with the
  Greek final-sigma rule, like Python's `str.lower`), NFD, and removal of
  non-spacing marks (category Mn);
- `replace_long_words`: a word longer than 200 characters becomes one
  character that the vocabulary lacks, so WordPiece maps it to [UNK] (the
  original's `max_input_chars_per_word`). Only strings that could hold such
  a word (a run of more than 200 characters without a space) take this
  slower path.

`normalize_for_wordpiece` runs all of it, but lets lines of plain printable
ASCII without long words skip straight to ASCII lower-casing, which gives
them the same result at a fraction of the cost (most English text).

tensorflow-text's own `FastBertNormalizer` is faster but maps some characters
differently from the original ('…' to '...', a full-width comma to ',', the
final sigma to σ), which would change token ids.
"""

import tensorflow as tf
import tensorflow_text as tf_text

MAX_CHARS_PER_WORD = 200

# Cc without tab (09), newline (0A) and carriage return (0D), all of Cf,
# and U+FFFD. NUL is part of Cc.
CONTROL_CHARACTERS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x{9f}\p{Cf}\x{fffd}]"
NON_SPACING_MARKS = r"\p{Mn}"
# Over-approximates "a word of more than 200 characters": any run of more
# than 200 characters without an ASCII whitespace.
LONG_RUN = r"[^ \t\n\r]{%d}" % (MAX_CHARS_PER_WORD + 1)
# Lines that normalization cannot change beyond ASCII lower-casing: tab,
# newline, carriage return and printable ASCII, no word over 200 characters.
SIMPLE_TEXT = r"[\t\n\r ]*(?:[!-~]{1,%d}[\t\n\r ]+)*(?:[!-~]{1,%d})?" % (
    MAX_CHARS_PER_WORD,
    MAX_CHARS_PER_WORD,
)
WHITESPACE = r"[\s\p{Zs}\x{2028}\x{2029}]"
PUNCTUATION_OR_CJK = (
    r"[!-/:-@\[-`{-~\p{P}\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}"
    r"\x{2a700}-\x{2b73f}\x{2b740}-\x{2b81f}\x{2b820}-\x{2ceaf}\x{f900}-\x{faff}"
    r"\x{2f800}-\x{2fa1f}]"
)


def clean_text(strings):
    """Drops invalid UTF-8, NUL, U+FFFD and control characters."""
    strings = tf.strings.unicode_transcode(
        strings,
        input_encoding="UTF-8",
        output_encoding="UTF-8",
        errors="replace",
        replacement_char=0xFFFD,
    )
    return tf.strings.regex_replace(strings, CONTROL_CHARACTERS, "")


def lower_case_and_strip_accents(strings):
    """Python's `str.lower`, then NFD without non-spacing marks."""
    strings = tf.strings.lower(strings, encoding="utf-8")
    strings = tf_text.normalize_utf8(strings, "NFD")
    return tf.strings.regex_replace(strings, NON_SPACING_MARKS, "")


def replace_long_words(strings, replacement):
    """Replaces each word of more than 200 characters with `replacement`.

    Words are what remains after splitting on whitespace, punctuation and
    CJK ideographs, as in the original. Strings without a long run of
    non-space characters are returned untouched, without the split.
    """
    has_long_run = tf.strings.regex_full_match(strings, r"(?s).*" + LONG_RUN + r".*")
    indices = tf.where(has_long_run)
    candidates = tf.gather_nd(strings, indices)
    words = tf_text.regex_split(
        candidates,
        delim_regex_pattern=WHITESPACE + "|" + PUNCTUATION_OR_CJK,
        keep_delim_regex_pattern=PUNCTUATION_OR_CJK,
    )
    too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
    words = tf.ragged.map_flat_values(
        lambda flat, flat_too_long: tf.where(flat_too_long, replacement, flat),
        words,
        too_long,
    )
    rewritten = tf.strings.reduce_join(words, axis=-1, separator=" ")
    return tf.tensor_scatter_nd_update(strings, indices, rewritten)


def normalize(strings, lower_case):
    """All of the original's normalization, ready for end-to-end WordPiece."""
    strings = clean_text(strings)
    if lower_case:
        strings = lower_case_and_strip_accents(strings)
    return strings


def normalize_for_wordpiece(strings, lower_case, long_word_replacement):
    """`normalize` and `replace_long_words`, with a fast path for the lines
    of plain ASCII (see SIMPLE_TEXT), where both reduce to ASCII
    lower-casing (or nothing, without `lower_case`)."""
    simple = tf.strings.regex_full_match(strings, SIMPLE_TEXT)
    easy = tf.strings.lower(strings) if lower_case else strings

    def with_hard_lines():
        hard = tf.where(tf.logical_not(simple))
        rest = tf.gather_nd(strings, hard)
        rest = replace_long_words(normalize(rest, lower_case), long_word_replacement)
        return tf.tensor_scatter_nd_update(easy, hard, rest)

    return tf.cond(tf.reduce_all(simple), lambda: easy, with_hard_lines)
