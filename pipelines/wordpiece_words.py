"""The words of `python -m pipelines.wordpiece_vocab`: counted as the
tokenizer splits them, then split into pieces of the learned vocabulary.

- `CountWords`: batches of lines normalized exactly as
  `tfnlp.text.BertTokenizer` does (`tfnlp.text.normalization.normalize`)
  and split, as the original BasicTokenizer does, on whitespace,
  punctuation and around CJK ideographs (`WORD_DELIMITER`,
  `KEPT_DELIMITER`), into `(word, count)` pairs; words longer than the
  tokenizer takes are only counted (`LONG_WORDS_TAG`).
- `batch_size_of_line`: a line's weight when lines are batched.
- `CountUnknownPieces`: `(word, count)` pairs split with tensorflow-text's
  `FastWordpieceTokenizer` into the pieces and [UNK] pieces they make,
  weighted by count; `sum_pairs` adds those up.
"""

import collections

import apache_beam as beam
import tensorflow as tf
import tensorflow_text as tf_text

from pipelines import job
from pipelines.wordpiece_learner import SUFFIX_INDICATOR
from tfnlp.text import normalization

WORD_DELIMITER = normalization.WHITESPACE + "|" + normalization.PUNCTUATION_OR_CJK
KEPT_DELIMITER = normalization.PUNCTUATION_OR_CJK
LONG_WORDS_TAG = "long_words"


@beam.typehints.with_output_types(tuple[str, int])
class CountWords(beam.DoFn):
    """Splits a batch of lines into words like the tokenizer and counts them.

    The main output is `(word, count)` per distinct word of the batch; the
    output tagged `LONG_WORDS_TAG` is the number of words of more than 200
    characters in the batch (each becomes one [UNK] in the tokenizer).

    Args:
        lower_case: lower-case and strip accents before splitting.
    """

    def __init__(self, lower_case):
        self._lower_case = lower_case
        self._split = None

    def setup(self):
        lower_case = self._lower_case

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def split_words(lines):
            lines = normalization.normalize(lines, lower_case)
            words = tf_text.regex_split(
                lines,
                delim_regex_pattern=WORD_DELIMITER,
                keep_delim_regex_pattern=KEPT_DELIMITER,
            )
            return words.flat_values

        self._split = split_words
        self._words_counter = beam.metrics.Metrics.counter(
            job.METRICS_NAMESPACE, "words_counted"
        )

    def process(self, lines):
        words = self._split(tf.constant(lines, dtype=tf.string)).numpy()
        self._words_counter.inc(len(words))
        counts = collections.Counter(words)
        long_words = 0
        for word, count in counts.items():
            word = word.decode("utf-8")
            if len(word) > normalization.MAX_CHARS_PER_WORD:
                long_words += count
            else:
                yield word, count
        if long_words:
            yield beam.pvalue.TaggedOutput(LONG_WORDS_TAG, long_words)


def batch_size_of_line(text):
    """A line's weight in a batch: one unit per 256 characters (at least 1),
    so that a batch of at most 4096 units holds about 1 MB of text."""
    return 1 + len(text) // 256


class CountUnknownPieces(beam.DoFn):
    """Splits batches of `(word, count)` pairs into pieces of the learned
    vocabulary and yields `(pieces, unknown_pieces)`, weighted by count.

    The vocabulary's tokens come as a side input (`process`'s `tokens`);
    the tokenizer is built from them once per worker.
    """

    def __init__(self):
        self._tokens = None
        self._tokenizer = None

    def process(self, batch, tokens):
        if self._tokenizer is None or (
            tokens is not self._tokens and tokens != self._tokens
        ):
            self._tokens = tokens
            self._tokenizer = tf_text.FastWordpieceTokenizer(
                vocab=tokens,
                suffix_indicator=SUFFIX_INDICATOR,
                max_bytes_per_word=4 * normalization.MAX_CHARS_PER_WORD,
                token_out_type=tf.int64,
                unknown_token="[UNK]",
                no_pretokenization=True,
            )
            self._unknown_id = tokens.index("[UNK]")
        words = tf.constant([word for word, _ in batch], dtype=tf.string)
        ids = self._tokenizer.tokenize(words)
        pieces = ids.row_lengths().numpy()
        unknown = tf.reduce_sum(
            tf.cast(tf.equal(ids, self._unknown_id), tf.int64), axis=1
        ).numpy()
        counts = [count for _, count in batch]
        yield (
            int(sum(int(c) * int(p) for c, p in zip(counts, pieces))),
            int(sum(int(c) * int(u) for c, u in zip(counts, unknown))),
        )


def sum_pairs(pairs):
    """Adds `(pieces, unknown_pieces)` pairs element-wise.

    Args:
        pairs: an iterable of pairs of integers.

    Returns:
        The pair of sums, `(0, 0)` for no pairs.
    """
    pieces = unknown = 0
    for piece_count, unknown_count in pairs:
        pieces += piece_count
        unknown += unknown_count
    return pieces, unknown
