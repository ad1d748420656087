"""The character tokenizer of the language-model data, in the TensorFlow graph."""

import keras
import numpy as np
import tensorflow as tf

from tfnlp.text import plain_character_tokenizer as plain
from tfnlp.text.bert_tokenizer import tokenize_any_rank
from tfnlp.text.id_rows import append_to_rows, detokenize_any_rank, ids_before_end

_REPLACEMENT_CODE_POINT = ord(plain.REPLACEMENT_CHARACTER)


@keras.saving.register_keras_serializable(package="tfnlp")
class CharacterTokenizer(keras.layers.Layer):
    """A character vocabulary's tokenizer and detokenizer, in-graph.

    Each character (Unicode code point) of the UTF-8 text becomes its id in
    the vocabulary, or `<unk>`'s (1) when the vocabulary lacks it; invalid
    UTF-8 becomes U+FFFD first. Nothing is normalized: line breaks, tabs
    and spaces are characters like any other. The ids are those of
    `tfnlp.text.PlainCharacterTokenizer` (no TensorFlow) with the same
    vocabulary, which `pipelines.lm_data` writes its records with.

    The vocabulary file (`tfnlp.text.plain_character_tokenizer`: one JSON
    string a line, `<pad>`, `<unk>`, `<eod>` first) is read once; the
    lookup runs on constants of the graph (a sorted array of code points
    and `tf.searchsorted`, no table resource), and the file is a tracked
    `tf.saved_model.Asset`, so a SavedModel holding the layer carries it in
    its `assets/`.

    Args:
        vocabulary_file: the vocabulary's path (any `tf.io.gfile` path).
        add_end_of_document: whether `call` appends `<eod>` to each
            sequence.
        **kwargs: standard `keras.layers.Layer` arguments.

    Attributes:
        PAD_ID, UNKNOWN_ID, END_OF_DOCUMENT_ID: the special ids (0, 1, 2).
        vocabulary: the tokens in id order.
        vocabulary_asset: the file, as a `tf.saved_model.Asset`.

    Call arguments:
        inputs: a string tensor of any shape; `tokenize(inputs,
            add_end_of_document)`.

    Example:

    >>> import os, tempfile
    >>> from tfnlp.text import plain_character_tokenizer as plain
    >>> path = os.path.join(tempfile.mkdtemp(), "characters.txt")
    >>> with open(path, "wb") as file:
    ...     _ = file.write(plain.character_vocabulary_bytes(
    ...         plain.character_vocabulary({"a": 1, "b": 1, "\\n": 1})))
    >>> tokenizer = CharacterTokenizer(path)
    >>> ids = tokenizer.tokenize(tf.constant(["ab\\n", "bz"]), add_end_of_document=True)
    >>> ids.to_list()
    [[4, 5, 3, 2], [5, 1, 2]]
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'ab\\n', b'b\\xef\\xbf\\xbd']

    References:
        - [Karpathy, 2015. The Unreasonable Effectiveness of Recurrent
          Neural Networks](https://karpathy.github.io/2015/05/21/rnn-effectiveness/)
          (char-rnn, Tiny Shakespeare)
    """

    PAD_ID = plain.PAD_ID
    UNKNOWN_ID = plain.UNKNOWN_ID
    END_OF_DOCUMENT_ID = plain.END_OF_DOCUMENT_ID

    def __init__(self, vocabulary_file, add_end_of_document=False, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.vocabulary_file = str(vocabulary_file)
        self.add_end_of_document = bool(add_end_of_document)
        with tf.io.gfile.GFile(self.vocabulary_file, "rb") as file:
            self.vocabulary = plain.parse_character_vocabulary(file.read(), self.vocabulary_file)
        self.vocabulary_asset = tf.saved_model.Asset(self.vocabulary_file)
        first = len(plain.SPECIAL_TOKENS)
        by_code_point = sorted((ord(character), index) for index, character
                               in enumerate(self.vocabulary[first:], first))
        # A sentinel above every code point keeps the arrays non-empty.
        self._code_points = np.array([c for c, _ in by_code_point] + [0x110000], np.int32)
        self._code_point_ids = np.array([i for _, i in by_code_point] + [self.UNKNOWN_ID],
                                        np.int32)
        id_code_points = [0] * len(self.vocabulary)
        id_code_points[self.UNKNOWN_ID] = _REPLACEMENT_CODE_POINT
        for index, character in enumerate(self.vocabulary[first:], first):
            id_code_points[index] = ord(character)
        self._id_code_points = np.array(id_code_points, np.int32)
        self.built = True

    @property
    def vocabulary_size(self):
        """The number of ids (the special ones included)."""
        return len(self.vocabulary)

    def tokenize(self, strings, add_end_of_document=False):
        """The ids of `strings`.

        Args:
            strings: a string tensor of any shape (UTF-8).
            add_end_of_document: append `<eod>` to each sequence.

        Returns:
            int32 ids with one more dimension than `strings`: a RaggedTensor
            (a 1-D Tensor for a scalar string).
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)

        def tokenize_rows(rows):
            code_points = tf.strings.unicode_decode(
                rows, "UTF-8", errors="replace", replacement_char=_REPLACEMENT_CODE_POINT)
            ids = code_points.with_flat_values(self._lookup(code_points.flat_values))
            if add_end_of_document:
                ids = append_to_rows(ids, self.END_OF_DOCUMENT_ID)
            return ids

        return tokenize_any_rank(strings, tokenize_rows)

    def _lookup(self, code_points):
        known = tf.constant(self._code_points)
        positions = tf.searchsorted(known, code_points, side="left", out_type=tf.int32)
        found = tf.equal(tf.gather(known, positions), code_points)
        return tf.where(found, tf.gather(tf.constant(self._code_point_ids), positions),
                        self.UNKNOWN_ID)

    def detokenize(self, ids):
        """The text of `ids`, as generated sequences come.

        Each sequence ends at its first `<eod>` (what follows is ignored),
        `<pad>` is left out wherever it is, and `<unk>` becomes U+FFFD.

        Args:
            ids: integer ids in the last dimension, dense (padded) or
                ragged, of rank 1 or more; every id in
                `[0, vocabulary_size)`.

        Returns:
            A UTF-8 string tensor of the shape of `ids` without its last
            dimension.
        """
        def detokenize_rows(rows):
            rows = ids_before_end(rows, self.END_OF_DOCUMENT_ID, self.PAD_ID)
            code_points = rows.with_flat_values(
                tf.gather(tf.constant(self._id_code_points), rows.flat_values))
            return tf.strings.unicode_encode(code_points, "UTF-8")

        return detokenize_any_rank(ids, detokenize_rows)

    def id_to_token(self, ids):
        """The tokens (characters, or `<pad>`, `<unk>`, `<eod>`) of `ids`."""
        return tf.gather(tf.constant(self.vocabulary), ids)

    def call(self, inputs):
        return self.tokenize(inputs, add_end_of_document=self.add_end_of_document)

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_file": self.vocabulary_file,
                       "add_end_of_document": self.add_end_of_document})
        return config
