"""Packing token ids into BERT's fixed-length model inputs."""

import tensorflow as tf
import tensorflow_text as tf_text


def pack_inputs(segments, sequence_length, cls_id, sep_id):
    """Packs one or two segments as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

    When the segments do not fit, the longer one loses tokens from its end
    first, as in google-research/bert's `truncate_seq_pair` (which drops one
    token at a time from the longer segment, from the second on a tie). The
    result is the same as sharing the budget out round-robin
    (tensorflow-text's `RoundRobinTrimmer`): a segment that fits in half the
    budget keeps all its tokens; when both are long, the first keeps
    `ceil(budget / 2)` and the second `floor(budget / 2)`.

    Args:
        segments: a list of one or two int RaggedTensors of shape
            `(batch, None)` (for example from `BertTokenizer.tokenize`).
        sequence_length: the length of every output row.
        cls_id, sep_id: the ids of [CLS] and [SEP].

    Returns:
        A dict of int32 tensors of shape `(batch, sequence_length)`:
        `input_ids` (zero-padded), `input_mask` (1 for real tokens) and
        `segment_ids` (0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 for padding).

    Example:

    >>> import tensorflow as tf
    >>> first = tf.ragged.constant([[7, 8, 9, 10]])
    >>> second = tf.ragged.constant([[20, 21, 22]])
    >>> packed = pack_inputs([first, second], 8, cls_id=101, sep_id=102)
    >>> packed["input_ids"].numpy().tolist()
    [[101, 7, 8, 9, 102, 20, 21, 102]]
    >>> packed["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    """
    if len(segments) not in (1, 2):
        raise ValueError(
            f"BERT packs one or two segments; received {len(segments)}."
        )
    budget = sequence_length - 1 - len(segments)
    if budget < len(segments):
        raise ValueError(
            f"sequence_length={sequence_length} leaves no room for tokens "
            f"after [CLS] and {len(segments)} [SEP]; use a larger one."
        )
    segments = [tf.cast(segment, tf.int64) for segment in segments]
    trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(segments)
    input_ids, segment_ids = tf_text.combine_segments(
        trimmed, start_of_sequence_id=cls_id, end_of_segment_id=sep_id
    )
    shape = [None, sequence_length]
    input_ids = input_ids.to_tensor(default_value=0, shape=shape)
    segment_ids = segment_ids.to_tensor(default_value=0, shape=shape)
    lengths = tf.add_n([segment.row_lengths() for segment in trimmed])
    input_mask = tf.sequence_mask(lengths + 1 + len(segments), sequence_length)
    return {
        "input_ids": tf.cast(input_ids, tf.int32),
        "input_mask": tf.cast(input_mask, tf.int32),
        "segment_ids": tf.cast(segment_ids, tf.int32),
    }
