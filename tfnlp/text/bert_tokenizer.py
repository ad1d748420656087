"""The BERT WordPiece tokenizer, in the TensorFlow graph.

`BertTokenizer` is the Keras layer; `tokenize_any_rank`, which gives string
tensors of any rank one row of ids per string, also serves
`tfnlp.text.SentencePieceTokenizer`.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from tfnlp.text import normalization
from tfnlp.text.vocabulary import SPECIAL_TOKENS, load_vocabulary

# Private-use code points tried, in order, as the stand-in for words that are
# too long: the first one that no vocabulary token contains is used, so
# WordPiece turns it into [UNK].
_REPLACEMENT_CANDIDATES = range(0xE000, 0xF8FF)


def _replacement_character(tokens):
    used = set("".join(tokens))
    for code_point in _REPLACEMENT_CANDIDATES:
        if chr(code_point) not in used:
            return chr(code_point)
    raise ValueError("Every private-use character appears in the vocabulary.")


def tokenize_any_rank(strings, tokenize_rows):
    """Tokenizes a string tensor of any known rank, a row of ids per string.

    Args:
        strings: a string tensor of known rank.
        tokenize_rows: a function from a 1-D string tensor to a RaggedTensor
            with one row of ids per string.

    Returns:
        The ids with one more dimension than `strings`: the rows, grouped
        into the shape of `strings` (uniform dimensions, then the ragged
        one); for a scalar string, its one row (a 1-D Tensor).

    Raises:
        ValueError: the rank of `strings` is unknown.

    Example:

    >>> ids = tokenize_any_rank(tf.constant([["a b", "c"]]),
    ...                         lambda rows: tf.strings.split(rows))
    >>> ids.to_list()
    [[[b'a', b'b'], [b'c']]]
    """
    rank = strings.shape.rank
    if rank is None:
        raise ValueError("tokenize needs strings of known rank.")
    if rank == 1:
        return tokenize_rows(strings)
    ids = tokenize_rows(tf.reshape(strings, [-1]))
    if rank == 0:
        return ids[0]
    shape = tf.shape(strings, out_type=tf.int64)
    for axis in reversed(range(1, rank)):
        ids = tf.RaggedTensor.from_uniform_row_length(ids, shape[axis])
    return ids


@keras.saving.register_keras_serializable(package="tfnlp")
class BertTokenizer(keras.layers.Layer):
    """BERT's WordPiece tokenizer, with the ids of the original, in-graph.

    Gives exactly the ids of google-research/bert's `FullTokenizer` with the
    same vocabulary and `lower_case`: invalid UTF-8, NUL, U+FFFD and control
    characters are dropped; text is split on whitespace, on punctuation (ASCII
    33–47, 58–64, 91–96, 123–126 and every Unicode P* character) and around
    CJK ideographs; with `lower_case` it is lower-cased (Python's rules,
    final sigma included) and stripped of accents (NFD, marks removed); words
    are split by greedy longest-match WordPiece with the "##" prefix, and a
    word of more than 200 characters, or one that cannot be split, becomes
    [UNK]. A literal "[MASK]" in the text is ordinary text. No special tokens
    are added: see `tfnlp.text.pack_inputs` for [CLS]/[SEP] packing.

    Bad input never raises: invalid UTF-8 bytes are dropped (the original
    decodes with `errors="ignore"`), as are NUL and other control
    characters, joining the text around them; an empty or blank string gives
    no ids; a line of a megabyte or more is tokenized like any other (a
    "word" of more than 200 characters in it is one [UNK]).

    It runs as TensorFlow ops (tensorflow-text's `FastWordpieceTokenizer`
    after tfnlp's normalization, see `tfnlp.text.normalization`), so it works
    in `tf.data` maps, inside `tf.function` and in a SavedModel, where the
    vocabulary is a tracked asset. As a Keras layer it is TensorFlow-only.

    Args:
        vocab_file: path to a vocabulary, one token per line, the id being
            the line number; it must hold [UNK], and [PAD], [CLS], [SEP] and
            [MASK] for the special-id properties.
        lower_case: lower-case and strip accents (uncased vocabularies).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string tensor of any shape; the result has one more
            (ragged) dimension.

    Example:

    >>> import os, tempfile
    >>> import tensorflow as tf
    >>> from tfnlp.text import write_vocabulary
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                   "hello", ",", "world", "!"], vocab_file)
    >>> tokenizer = BertTokenizer(vocab_file)
    >>> ids = tokenizer.tokenize(tf.constant(["Hello, world!"]))
    >>> ids.to_list()
    [[5, 6, 7, 8]]
    >>> tokenizer.detokenize(ids).numpy()
    array([b'hello , world !'], dtype=object)

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
        - [Song et al., 2021. Fast WordPiece Tokenization](
          https://arxiv.org/abs/2012.15524)
    """

    def __init__(self, vocab_file, lower_case=True, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.vocab_file = str(vocab_file)
        self.lower_case = lower_case
        self.vocabulary = load_vocabulary(self.vocab_file)
        self._special_ids = {
            token: self.vocabulary.index(token)
            for token in SPECIAL_TOKENS
            if token in self.vocabulary
        }
        if "[UNK]" not in self._special_ids:
            raise ValueError(
                f"The vocabulary {self.vocab_file} has no [UNK] token; a BERT "
                "vocabulary needs one (and [PAD], [CLS], [SEP], [MASK])."
            )
        self.vocabulary_asset = tf.saved_model.Asset(self.vocab_file)
        self._long_word_replacement = _replacement_character(self.vocabulary)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary,
            suffix_indicator="##",
            # Words over 200 characters are replaced before WordPiece; 4
            # bytes per character keeps every shorter word.
            max_bytes_per_word=4 * normalization.MAX_CHARS_PER_WORD,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=False,
            support_detokenization=True,
        )
        self.built = True

    @property
    def vocab_size(self):
        return len(self.vocabulary)

    def _special_id(self, token):
        if token not in self._special_ids:
            raise ValueError(f"The vocabulary {self.vocab_file} has no {token}.")
        return self._special_ids[token]

    @property
    def pad_id(self):
        return self._special_id("[PAD]")

    @property
    def unk_id(self):
        return self._special_id("[UNK]")

    @property
    def cls_id(self):
        return self._special_id("[CLS]")

    @property
    def sep_id(self):
        return self._special_id("[SEP]")

    @property
    def mask_id(self):
        return self._special_id("[MASK]")

    def tokenize(self, strings):
        """Token ids of `strings` (any shape): a RaggedTensor of int64 with
        one more dimension."""
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        return tokenize_any_rank(strings, self._tokenize_batch)

    def _tokenize_batch(self, strings):
        strings = normalization.normalize_for_wordpiece(
            strings, self.lower_case, self._long_word_replacement
        )
        return self._wordpiece.tokenize(strings)

    def detokenize(self, ids):
        """Joins the word pieces of `ids` (the last dimension) into text.

        Pieces are separated by spaces and "##" continuations are glued to
        the piece before, so the text is the normalized one (lower-cased,
        without accents, punctuation separated), not the original.
        """
        return self._wordpiece.detokenize(ids)

    def id_to_token(self, ids):
        """The vocabulary tokens of `ids` (a tensor of any shape)."""
        return tf.gather(tf.constant(self.vocabulary), ids)

    def call(self, inputs):
        return self.tokenize(inputs)

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "lower_case": self.lower_case})
        return config
