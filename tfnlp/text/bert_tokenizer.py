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


# Stands in, in the vocabulary given to FastWordpieceTokenizer, for a line
# whose token the original never produces; a control character, which
# normalization removes from every text, so it can never match.
_NEVER_MATCHED = "\x01"


def _replacement_character(tokens):
    used = set("".join(tokens))
    for code_point in _REPLACEMENT_CANDIDATES:
        if chr(code_point) not in used:
            return chr(code_point)
    raise ValueError("Every private-use character appears in the vocabulary.")


def _wordpiece_vocabulary(tokens):
    """`tokens` with a unique never-matched stand-in on each line whose
    token the original never produces, and one more at the end, for
    FastWordpieceTokenizer.

    FastWordpieceTokenizer refuses a token listed twice, and it matches a
    token with whitespace inside ("new york") across the words of the text,
    where the original, which looks up pieces of whitespace-split words,
    never produces it. So the earlier lines of a token listed twice (the
    original gives the later line's id) and the tokens with whitespace are
    replaced by stand-ins, which keep the other lines' ids. The stand-in
    after the last line (an id never produced) keeps the vocabulary from
    looking empty to FastWordpieceTokenizer, which skips the tokens that
    cannot be word pieces (such as "[PAD]" or "a.b") and refuses a
    vocabulary with nothing else.
    """
    last_line = {token: line for line, token in enumerate(tokens)}
    taken = set(tokens)
    wordpiece_tokens = list(tokens)

    def stand_in(line):
        token = f"{_NEVER_MATCHED}{line}"
        while token in taken:
            token += _NEVER_MATCHED
        taken.add(token)
        return token

    for line, token in enumerate(tokens):
        if last_line[token] != line or any(c.isspace() for c in token):
            wordpiece_tokens[line] = stand_in(line)
    wordpiece_tokens.append(stand_in(len(tokens)))
    return wordpiece_tokens


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

    The vocabulary file is read as the original reads it (see
    `tfnlp.text.load_vocabulary`), and hostile vocabularies give the
    original's ids too: a token listed twice has the id of its later line
    (special tokens included; the earlier id is never produced), and a token
    that no word piece can equal (one with whitespace inside, such as
    "new york", the empty token of a blank line, a lone "##") is never
    produced. `id_to_token` and `detokenize` give every line its own token.

    The original consults Python's Unicode database, this tokenizer
    tensorflow-text's; where they differ, so can the ids: a few dozen code
    points that Python 3.11 leaves unassigned and newer Unicode assigns
    split or vanish where the original keeps them in their word, and 43
    capitals new in Unicode 14 are not lower-cased.

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
        # A token listed twice has its later id, as in the original.
        ids = {token: index for index, token in enumerate(self.vocabulary)}
        self._special_ids = {
            token: ids[token] for token in SPECIAL_TOKENS if token in ids
        }
        if "[UNK]" not in self._special_ids:
            raise ValueError(
                f"The vocabulary {self.vocab_file} has no [UNK] token; a BERT "
                "vocabulary needs one (and [PAD], [CLS], [SEP], [MASK])."
            )
        self.vocabulary_asset = tf.saved_model.Asset(self.vocab_file)
        self._long_word_replacement = _replacement_character(self.vocabulary)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=_wordpiece_vocabulary(self.vocabulary),
            suffix_indicator="##",
            # Words over 200 characters are replaced before WordPiece; 4
            # bytes per character keeps every shorter word.
            max_bytes_per_word=4 * normalization.MAX_CHARS_PER_WORD,
            token_out_type=tf.int64,
            unknown_token="[UNK]",
            no_pretokenization=False,
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

        Pieces are separated by spaces and a "##" continuation (other than
        a lone "##") is glued to the piece before without its "##", as
        tensorflow-text's WordPiece detokenizer does, so the text is the
        normalized one (lower-cased, without accents, punctuation
        separated), not the original.

        Args:
            ids: a RaggedTensor or Tensor of ids, of rank 1 or more.

        Returns:
            A string tensor with one dimension less than `ids`.
        """
        if isinstance(ids, tf.RaggedTensor):
            position = tf.ragged.range(ids.nested_row_lengths()[-1]).flat_values
            pieces = self._pieces(ids.flat_values, position)
            return tf.strings.reduce_join(ids.with_flat_values(pieces), axis=-1)
        ids = tf.convert_to_tensor(ids)
        position = tf.broadcast_to(tf.range(tf.shape(ids)[-1]), tf.shape(ids))
        return tf.strings.reduce_join(self._pieces(ids, position), axis=-1)

    def _pieces(self, ids, position):
        """The text of each id at `position` in its row, for `detokenize`."""
        tokens = self.id_to_token(ids)
        continuation = tf.logical_and(
            position > 0, tf.strings.regex_full_match(tokens, "(?s)##.+")
        )
        return tf.where(
            continuation,
            tf.strings.regex_replace(tokens, "^##", "", replace_global=False),
            tf.where(position > 0, " " + tokens, tokens),
        )

    def id_to_token(self, ids):
        """The vocabulary tokens of `ids` (a tensor of any shape)."""
        return tf.gather(tf.constant(self.vocabulary), ids)

    def call(self, inputs):
        return self.tokenize(inputs)

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "lower_case": self.lower_case})
        return config
