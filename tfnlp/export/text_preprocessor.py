"""Raw text to BERT's packed inputs, in the TensorFlow graph."""

import tensorflow as tf

from tfnlp.text.bert_tokenizer import BertTokenizer
from tfnlp.text.packing import pack_inputs

MASK_TOKEN = "[MASK]"


class BertTextPreprocessor(tf.Module):
    """Tokenizes and packs raw text for a BERT model, inside the graph.

    The text signatures of exported models call it, so a SavedModel takes
    raw strings and needs nothing but TensorFlow and the tensorflow-text ops
    at serving time. `text` is a string tensor of shape `[batch]` (one
    segment per example: `[CLS] A [SEP]`) or `[batch, 2]` (a pair: `[CLS] A
    [SEP] B [SEP]`). Text that does not fit in `sequence_length` tokens is
    truncated (the longer segment of a pair loses tokens from its end first,
    as in google-research/bert); every row is padded to `sequence_length`.

    Args:
        tokenizer: a `tfnlp.text.BertTokenizer` (its vocabulary becomes a
            SavedModel asset).
        sequence_length: the length of the packed inputs (at most the
            model's `max_position_embeddings`).

    Example:

    >>> import os, tempfile
    >>> import tensorflow as tf
    >>> from tfnlp.text import BertTokenizer, write_vocabulary
    >>> vocab_file = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...                   "hello", "world"], vocab_file)
    >>> preprocessor = BertTextPreprocessor(BertTokenizer(vocab_file), 6)
    >>> inputs = preprocessor(tf.constant([["Hello", "world"]]))
    >>> inputs["input_ids"].numpy().tolist()
    [[2, 5, 3, 6, 3, 0]]
    >>> preprocessor(tf.constant(["Hello [MASK]"]), mask_tokens=True)[
    ...     "input_ids"].numpy().tolist()
    [[2, 5, 4, 3, 0, 0]]

    References:
        - [Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding](
          https://arxiv.org/abs/1810.04805)
    """

    def __init__(self, tokenizer, sequence_length):
        super().__init__()
        if not isinstance(tokenizer, BertTokenizer):
            raise TypeError(
                f"BertTextPreprocessor needs a tfnlp.text.BertTokenizer, got "
                f"{type(tokenizer).__name__}."
            )
        if sequence_length < 4:
            raise ValueError(
                f"sequence_length={sequence_length} leaves no room for text "
                "after [CLS] and [SEP]; use at least 4 (typically 128 or 512)."
            )
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)

    @property
    def vocabulary(self):
        return self.tokenizer.vocabulary

    def __call__(self, text, mask_tokens=False):
        """The packed inputs of `text` (`[batch]` or `[batch, 2]` strings).

        Args:
            text: a string tensor, one segment per row (`[batch]`) or a pair
                per row (`[batch, 2]`).
            mask_tokens: whether a literal "[MASK]" in the text becomes the
                [MASK] token (for fill-mask) instead of ordinary text.

        Returns:
            A dict of int32 `[batch, sequence_length]` tensors: `input_ids`,
            `input_mask` and `segment_ids`.
        """
        text = tf.convert_to_tensor(text, dtype=tf.string)
        tokenize = self._tokenize_with_masks if mask_tokens else self.tokenizer.tokenize
        num_segments = _static_segments(text.shape)
        if num_segments is not None:  # Known when traced: no branch in the graph.
            columns = tf.reshape(text, [-1, num_segments])
            return self._pack([tokenize(columns[:, index]) for index in range(num_segments)])
        with tf.control_dependencies([
            tf.debugging.assert_rank_in(
                text, [1, 2],
                message="text must be a batch of strings, [batch] for single "
                        "segments or [batch, 2] for pairs",
            )
        ]):
            shape = tf.shape(text)
        num_segments = tf.reduce_prod(shape[1:])
        with tf.control_dependencies([
            tf.debugging.assert_less_equal(
                num_segments, 2,
                message="text must have one segment ([batch]) or two "
                        "([batch, 2]) per example",
            )
        ]):
            columns = tf.reshape(text, tf.stack([shape[0], num_segments]))

        def single():
            return self._pack([tokenize(columns[:, 0])])

        def pair():
            return self._pack([tokenize(columns[:, 0]), tokenize(columns[:, 1])])

        return tf.cond(tf.equal(num_segments, 1), single, pair)

    def _pack(self, segments):
        return pack_inputs(
            segments, self.sequence_length, self.tokenizer.cls_id, self.tokenizer.sep_id
        )

    def _tokenize_with_masks(self, strings):
        """Token ids of `strings` `[batch]` where each literal "[MASK]" is
        the [MASK] id: the text between masks is tokenized as usual."""
        pieces = tf.strings.split(strings, sep=MASK_TOKEN)  # [batch, masks + 1]
        piece_ids = self.tokenizer.tokenize(pieces.flat_values)  # [pieces, tokens]
        mask_ids = tf.fill([tf.shape(pieces.flat_values)[0], 1],
                           tf.constant(self.tokenizer.mask_id, piece_ids.dtype))
        with_masks = tf.concat([piece_ids, mask_ids], axis=1)  # a mask after each piece
        ids = tf.RaggedTensor.from_row_splits(with_masks, pieces.row_splits)
        ids = ids.merge_dims(1, 2)
        return ids[:, :-1]  # no mask after the last piece


def _static_segments(shape):
    """1 or 2 segments per example when `shape` says so, None when unknown.

    Raises:
        ValueError: for a shape other than `[batch]` or `[batch, 1 or 2]`.
    """
    if shape.rank is None or (shape.rank == 2 and shape[1] is None):
        return None
    if shape.rank == 1:
        return 1
    if shape.rank == 2 and shape[1] in (1, 2):
        return shape[1]
    raise ValueError(
        f"text has shape {shape}; it must be a batch of strings, [batch] for single "
        "segments or [batch, 2] for pairs."
    )
