"""A word-level tokenizer and its vocabulary, in the TensorFlow graph.

A word-level student (the BiLSTM of Tang et al., 2019) reads words, not
word pieces. `split_words` is the one definition of a word here: the text
is lower-cased, every punctuation mark or symbol becomes a word of its own
(the augmentation's "[MASK]" stays whole) and the rest is split at
whitespace. `WordTokenizer` maps the words to ids with a
`keras.layers.StringLookup` over a vocabulary file, so the training input
pipeline and an exported SavedModel tokenize with the same ops, and the
file is a SavedModel asset. `word_counts`, `build_word_vocabulary` and
`write_word_vocabulary` make that file from training texts;
`read_word_list` reads the words of a word list or WordPiece vocabulary
that may extend it.

Ids: 0 is padding (StringLookup's mask token ""), 1 is `[UNK]` (every word
the vocabulary lacks), 2 onwards the file's words in order.
"""

import collections

import keras
import numpy as np
import tensorflow as tf

# A punctuation mark or symbol: anything but a letter, a digit, a combining
# mark or whitespace (RE2 syntax, on lower-cased UTF-8). The augmentation's
# mask token, lower-cased, is kept whole.
_PUNCTUATION = r"\[mask\]|[^\pL\pN\pM\s]"
PADDING_ID = 0
UNKNOWN_ID = 1
UNKNOWN_TOKEN = "[UNK]"
# The ids before the vocabulary file's first word.
RESERVED_TOKENS = ("", UNKNOWN_TOKEN)


def split_words(strings):
    """The words of `strings`, as a `WordTokenizer` sees them.

    Lower-cases (Unicode), splits every punctuation mark and symbol off as a
    word of its own and splits the rest at whitespace.

    Args:
        strings: a string tensor `[batch]` (UTF-8).

    Returns:
        A string `RaggedTensor` `[batch, words]`.

    Example:

    >>> split_words(tf.constant(["A fine, FINE film!", "Très [MASK] bien"])).to_list()
    [[b'a', b'fine', b',', b'fine', b'film', b'!'], [b'tr\\xc3\\xa8s', b'[mask]', b'bien']]

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
    """
    strings = tf.convert_to_tensor(strings, tf.string)
    lowered = tf.strings.lower(strings, encoding="utf-8")
    spaced = tf.strings.regex_replace(lowered, _PUNCTUATION, r" \0 ")
    return tf.strings.split(spaced)


def word_counts(text_batches):
    """How often each word (`split_words`) occurs in batches of texts.

    Args:
        text_batches: an iterable of string batches (tensors `[batch]`,
            numpy arrays or lists of str or bytes), such as the `text` of a
            `tf.data` pass over the training records.

    Returns:
        A `collections.Counter` from word (str) to count.

    Example:

    >>> word_counts([["A film.", "a FILM"], ["film"]]).most_common(2)
    [('film', 3), ('a', 2)]
    """
    counts = collections.Counter()
    for batch in text_batches:
        words = split_words(batch).flat_values.numpy()
        unique, occurrences = np.unique(words, return_counts=True)
        counts.update({word.decode("utf-8", "replace"): int(count)
                       for word, count in zip(unique, occurrences)})
    return counts


def build_word_vocabulary(counts, max_size=None, min_count=1):
    """The vocabulary of word counts: the most frequent words first.

    Args:
        counts: a mapping from word to count (`word_counts`).
        max_size: the most words kept (the reserved padding and `[UNK]` ids
            come on top); None for all.
        min_count: leave out the words seen fewer times.

    Returns:
        A list of words, by decreasing count, ties in alphabetical order
        (the same counts give the same list).

    Raises:
        ValueError: a bad `max_size` or `min_count`, or no word is left.

    Example:

    >>> build_word_vocabulary({"b": 2, "a": 2, "c": 5, "d": 1}, max_size=3)
    ['c', 'a', 'b']
    """
    if max_size is not None and (isinstance(max_size, bool) or int(max_size) < 1):
        raise ValueError(f"max_size must be a positive number or None, got {max_size!r}.")
    if isinstance(min_count, bool) or int(min_count) < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count!r}.")
    words = sorted(((word, count) for word, count in counts.items()
                    if count >= min_count and word not in RESERVED_TOKENS),
                   key=lambda item: (-item[1], item[0]))
    if max_size is not None:
        words = words[:int(max_size)]
    if not words:
        raise ValueError(
            f"No word occurs {min_count} or more times in the {len(counts)} distinct words "
            "given, so the vocabulary would be empty. Lower min_count, or check that "
            "the training texts are not empty."
        )
    return [word for word, _ in words]


def read_word_list(path):
    """The words of a word list or a WordPiece vocabulary file, as a
    `WordTokenizer` reads them.

    Each line's first whitespace-separated field is taken (a `vocab.txt`
    line, or the word of a "word count" line), lower-cased as
    `split_words` lower-cases. WordPiece continuations ("##ing"),
    bracketed special tokens ("[PAD]") and entries that `split_words`
    splits into several words ("don't") are skipped: no text tokenizes to
    them. Repeats are dropped, the first kept.

    Args:
        path: the file (UTF-8, one entry a line).

    Returns:
        The words, in the file's order.

    Example:

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> _ = open(path, "w").write("[PAD]\\nthe\\n##s\\nFilm 12\\ndon't\\n!\\nthe\\n")
    >>> read_word_list(path)
    ['the', 'film', '!']
    """
    with tf.io.gfile.GFile(path, "r") as file:
        entries = [fields[0] for fields in map(str.split, file) if fields]
    entries = [entry for entry in entries
               if not entry.startswith("##") and not (entry.startswith("[")
                                                      and entry.endswith("]"))]
    if not entries:
        return []
    words = split_words(tf.constant(entries))
    single = (words.row_lengths() == 1).numpy()
    kept = words.to_list()
    return list(dict.fromkeys(row[0].decode("utf-8", "replace")
                              for row, one in zip(kept, single) if one))


def write_word_vocabulary(words, path):
    """Writes a `WordTokenizer` vocabulary file: one word a line, UTF-8.

    Raises:
        ValueError: a word is empty, reserved or holds whitespace (no word
            of `split_words` does).
    """
    for word in words:
        if word in RESERVED_TOKENS or not word or any(character.isspace()
                                                      for character in word):
            raise ValueError(
                f"{word!r} cannot be a vocabulary word: words are non-empty, hold no "
                f"whitespace and are not {RESERVED_TOKENS}. Make the words with "
                "split_words."
            )
    with tf.io.gfile.GFile(path, "w") as file:
        file.write("".join(f"{word}\n" for word in words))


@keras.saving.register_keras_serializable(package="tfnlp")
class WordTokenizer(keras.layers.Layer):
    """Text to word ids, in the graph (`split_words`, then a vocabulary).

    The vocabulary file (`write_word_vocabulary`: one word a line) is read
    by a `keras.layers.StringLookup`, whose table is initialised from the
    file: a SavedModel holding the layer copies the file to its `assets/`.
    Id 0 is padding, 1 is `[UNK]`, the file's words follow from 2.

    Args:
        vocabulary_file: the vocabulary's path (any `tf.io.gfile` path).
        sequence_length: keep at most this many words of each text (the
            first ones); None for all.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string tensor `[batch]`.

    Returns (call):
        int32 ids `[batch, width]`, padded with 0 to the longest text of the
        batch (at least 1 wide, so that a batch of empty texts still has
        a column of padding).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "words.txt")
    >>> write_word_vocabulary(["film", "a", ","], path)
    >>> tokenizer = WordTokenizer(path)
    >>> tokenizer(tf.constant(["A film, a FILM", "A dull film"])).numpy().tolist()
    [[3, 2, 4, 3, 2], [3, 1, 2, 0, 0]]
    >>> tokenizer.vocabulary_size, tokenizer.vocabulary[:3]
    (5, ['', '[UNK]', 'film'])

    References:
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
    """

    def __init__(self, vocabulary_file, sequence_length=None, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.vocabulary_file = str(vocabulary_file)
        if not tf.io.gfile.exists(self.vocabulary_file):
            raise FileNotFoundError(
                f"The word vocabulary {self.vocabulary_file!r} does not exist. Write it "
                "with tfnlp.text.write_word_vocabulary (trainer.distill writes "
                "MODEL_DIR/vocabulary.txt)."
            )
        if sequence_length is not None and int(sequence_length) < 1:
            raise ValueError(
                f"sequence_length must be a positive number of words or None, got "
                f"{sequence_length!r}."
            )
        self.sequence_length = None if sequence_length is None else int(sequence_length)
        self.lookup = keras.layers.StringLookup(
            vocabulary=self.vocabulary_file, mask_token=RESERVED_TOKENS[PADDING_ID],
            oov_token=UNKNOWN_TOKEN, num_oov_indices=1, name="lookup")
        self.built = True

    @property
    def vocabulary(self):
        """The tokens in id order: "", "[UNK]", then the file's words."""
        return [token.decode("utf-8") if isinstance(token, bytes) else str(token)
                for token in self.lookup.get_vocabulary()]

    @property
    def vocabulary_size(self):
        """The number of ids (padding and `[UNK]` included)."""
        return int(self.lookup.vocabulary_size())

    def tokenize(self, strings):
        """The word ids of `strings` `[batch]`: int32 `RaggedTensor`
        `[batch, words]`, cut to `sequence_length`."""
        words = split_words(strings)
        if self.sequence_length is not None:
            words = words[:, :self.sequence_length]
        return words.with_flat_values(tf.cast(self.lookup(words.flat_values), tf.int32))

    def call(self, inputs):
        ids = self.tokenize(inputs)
        rows = ids.nrows(out_type=tf.int32)
        width = tf.maximum(tf.cast(ids.bounding_shape()[1], tf.int32), 1)
        return ids.to_tensor(default_value=PADDING_ID, shape=tf.stack([rows, width]))

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_file": self.vocabulary_file,
                       "sequence_length": self.sequence_length})
        return config
