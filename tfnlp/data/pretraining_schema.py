"""The BERT pretraining record: the one definition shared by writer and reader.

A pretraining shard is a TFRecord file (optionally gzip) of serialized
`tf.train.Example`s holding exactly the features that google-research/bert's
`run_pretraining.py` parses, so a reader written for the original reads
tfnlp's records, and tfnlp reads the original's:

| feature                | type    | shape                     | content |
|------------------------|---------|---------------------------|---------|
| `input_ids`            | int64   | [max_seq_length]          | `[CLS] A [SEP] B [SEP]`, zero-padded |
| `input_mask`           | int64   | [max_seq_length]          | 1 for real tokens, 0 for padding |
| `segment_ids`          | int64   | [max_seq_length]          | 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 padding |
| `masked_lm_positions`  | int64   | [max_predictions_per_seq] | ascending positions, zero-padded |
| `masked_lm_ids`        | int64   | [max_predictions_per_seq] | original token ids, zero-padded |
| `masked_lm_weights`    | float32 | [max_predictions_per_seq] | 1.0 per real prediction, 0.0 padding |
| `next_sentence_labels` | int64   | [1]                       | 1 = B is a random next segment, 0 = actual next |

With dynamic masking the writer stores the unmasked sequence and empty
masked-LM lists (positions, ids and weights all zero); the reader
(`tfnlp.data.pretraining_dataset`) then masks each epoch anew.

The writer side (`serialize_instance`) is plain protobuf
(`tfnlp.data.example_proto`), cheap enough to run once per record in Beam
workers that never load TensorFlow, and gives the same bytes for the same
instance (map keys are serialized in sorted order). The reader side
(`feature_spec`, `parse_examples`) is TensorFlow ops and, like the original,
casts int64 to int32; it imports TensorFlow when first called, so that
importing this module for writing costs no TensorFlow.
"""

from tfnlp.data import example_proto

INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"

# The feature names, in google-research/bert's order.
FEATURE_NAMES = (
    INPUT_IDS,
    INPUT_MASK,
    SEGMENT_IDS,
    MASKED_LM_POSITIONS,
    MASKED_LM_IDS,
    MASKED_LM_WEIGHTS,
    NEXT_SENTENCE_LABELS,
)


def _check_sizes(max_seq_length, max_predictions_per_seq):
    if int(max_seq_length) < 1:
        raise ValueError(f"max_seq_length must be at least 1, got {max_seq_length}.")
    if int(max_predictions_per_seq) < 0:
        raise ValueError(
            f"max_predictions_per_seq must not be negative, got "
            f"{max_predictions_per_seq}."
        )


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of a pretraining record.

    It is the `name_to_features` dict of google-research/bert's
    `run_pretraining.py`.

    Args:
        max_seq_length: the length of `input_ids`, `input_mask` and
            `segment_ids`.
        max_predictions_per_seq: the length of `masked_lm_positions`,
            `masked_lm_ids` and `masked_lm_weights`.

    Returns:
        A dict from feature name to `tf.io.FixedLenFeature` (int64, except
        float32 `masked_lm_weights`).

    Example:

    >>> spec = feature_spec(128, 20)
    >>> spec["masked_lm_weights"]
    FixedLenFeature(shape=[20], dtype=tf.float32, default_value=None)
    """
    import tensorflow as tf

    _check_sizes(max_seq_length, max_predictions_per_seq)
    sequence = [int(max_seq_length)]
    predictions = [int(max_predictions_per_seq)]
    return {
        INPUT_IDS: tf.io.FixedLenFeature(sequence, tf.int64),
        INPUT_MASK: tf.io.FixedLenFeature(sequence, tf.int64),
        SEGMENT_IDS: tf.io.FixedLenFeature(sequence, tf.int64),
        MASKED_LM_POSITIONS: tf.io.FixedLenFeature(predictions, tf.int64),
        MASKED_LM_IDS: tf.io.FixedLenFeature(predictions, tf.int64),
        MASKED_LM_WEIGHTS: tf.io.FixedLenFeature(predictions, tf.float32),
        NEXT_SENTENCE_LABELS: tf.io.FixedLenFeature([1], tf.int64),
    }


def serialize_instance(
    input_ids,
    segment_ids,
    masked_lm_positions,
    masked_lm_ids,
    is_random_next,
    max_seq_length,
    max_predictions_per_seq,
):
    """Serializes one pretraining instance to `tf.train.Example` bytes.

    Pads with zeros to the fixed lengths, sets `input_mask` to 1 for each
    real token and `masked_lm_weights` to 1.0 for each real prediction, as
    google-research/bert's `create_pretraining_data.py` does. Plain protobuf
    (no TensorFlow ops), and deterministic: the same instance always gives
    the same bytes.

    Args:
        input_ids: the real token ids, `[CLS] A [SEP] B [SEP]` (unpadded;
            `[CLS]`/`[SEP]` are ordinary ids here). With static masking the
            masked tokens are already replaced.
        segment_ids: 0 or 1 per token, as long as `input_ids`.
        masked_lm_positions: the strictly ascending positions (into
            `input_ids`) to predict; empty for dynamic masking.
        masked_lm_ids: the original token id at each position; empty for
            dynamic masking.
        is_random_next: whether segment B is a random next segment (label 1).
        max_seq_length: the padded sequence length.
        max_predictions_per_seq: the padded number of predictions.

    Returns:
        The serialized `tf.train.Example` (bytes).

    Raises:
        ValueError: a sequence longer than `max_seq_length`, more predictions
            than `max_predictions_per_seq`, lists of unequal lengths, or
            positions out of range or not strictly ascending.

    Example:

    >>> record = serialize_instance(
    ...     [101, 7592, 103, 102], [0, 0, 0, 0], [2], [2088], False, 8, 2)
    >>> example = example_proto.Example.FromString(record)
    >>> list(example.features.feature["input_ids"].int64_list.value)
    [101, 7592, 103, 102, 0, 0, 0, 0]
    >>> list(example.features.feature["masked_lm_weights"].float_list.value)
    [1.0, 0.0]
    """
    _check_sizes(max_seq_length, max_predictions_per_seq)
    # Lists as they are (the Beam job passes lists of ints, and protobuf
    # checks the element types); anything else is copied into one.
    input_ids, segment_ids, masked_lm_positions, masked_lm_ids = (
        values if isinstance(values, list) else list(values)
        for values in (input_ids, segment_ids, masked_lm_positions, masked_lm_ids)
    )
    length = len(input_ids)
    predictions = len(masked_lm_positions)

    if length > max_seq_length:
        raise ValueError(
            f"input_ids has {length} tokens, more than max_seq_length="
            f"{max_seq_length}; truncate the segments before serializing."
        )
    if len(segment_ids) != length:
        raise ValueError(
            f"segment_ids has {len(segment_ids)} values but input_ids has "
            f"{length}; they must be equally long."
        )
    if predictions > max_predictions_per_seq:
        raise ValueError(
            f"masked_lm_positions has {predictions} predictions, more than "
            f"max_predictions_per_seq={max_predictions_per_seq}."
        )
    if len(masked_lm_ids) != predictions:
        raise ValueError(
            f"masked_lm_ids has {len(masked_lm_ids)} values but "
            f"masked_lm_positions has {predictions}; they must be equally long."
        )
    previous = -1
    for position in masked_lm_positions:
        if position <= previous or position >= length:
            raise ValueError(
                f"masked_lm_positions must be strictly ascending positions in "
                f"[0, {length}) (the real tokens), got {masked_lm_positions}."
            )
        previous = position

    sequence_padding = [0] * (max_seq_length - length)
    prediction_padding = [0] * (max_predictions_per_seq - predictions)
    example = example_proto.Example()
    feature = example.features.feature
    # Filling the message in place is twice as fast as building Feature
    # objects and copying them in.
    feature[INPUT_IDS].int64_list.value.extend(input_ids + sequence_padding)
    feature[INPUT_MASK].int64_list.value.extend([1] * length + sequence_padding)
    feature[SEGMENT_IDS].int64_list.value.extend(segment_ids + sequence_padding)
    feature[MASKED_LM_POSITIONS].int64_list.value.extend(
        masked_lm_positions + prediction_padding
    )
    feature[MASKED_LM_IDS].int64_list.value.extend(masked_lm_ids + prediction_padding)
    feature[MASKED_LM_WEIGHTS].float_list.value.extend(
        [1.0] * predictions + [0.0] * len(prediction_padding)
    )
    feature[NEXT_SENTENCE_LABELS].int64_list.value.append(1 if is_random_next else 0)
    # deterministic=True writes the feature map in sorted key order, so the
    # bytes do not depend on the protobuf implementation or insertion order.
    return example.SerializeToString(deterministic=True)


def parse_examples(serialized, max_seq_length, max_predictions_per_seq):
    """Parses serialized pretraining records into tensors.

    Like google-research/bert's `_decode_record`, int64 features are cast to
    int32; `masked_lm_weights` stays float32.

    Args:
        serialized: a string tensor of records, shape `[batch]` (or a scalar
            for one record).
        max_seq_length: the records' sequence length.
        max_predictions_per_seq: the records' number of predictions.

    Returns:
        A dict of the seven features, each of shape `[batch, length]` (or
        `[length]` for a scalar input).

    Example:

    >>> import tensorflow as tf
    >>> record = serialize_instance([101, 7592, 102], [0, 0, 0], [], [], True, 4, 2)
    >>> features = parse_examples(tf.constant([record]), 4, 2)
    >>> features["input_ids"].numpy().tolist()
    [[101, 7592, 102, 0]]
    >>> features["next_sentence_labels"].numpy().tolist()
    [[1]]
    """
    import tensorflow as tf

    spec = feature_spec(max_seq_length, max_predictions_per_seq)
    serialized = tf.convert_to_tensor(serialized, dtype=tf.string)
    if serialized.shape.rank == 0:
        parsed = tf.io.parse_single_example(serialized, spec)
    else:
        parsed = tf.io.parse_example(serialized, spec)
    return {
        name: tf.cast(parsed[name], tf.int32) if parsed[name].dtype == tf.int64
        else parsed[name]
        for name in FEATURE_NAMES
    }
