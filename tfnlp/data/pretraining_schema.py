"""The BERT pretraining record: the one definition shared by writer and reader.

A pretraining shard is a TFRecord file (optionally gzip) of serialized
`tf.train.Example`s holding exactly the features that google-research/bert's
`run_pretraining.py` parses (`FEATURE_NAMES`), so a reader written for the
original reads tfnlp's records, and tfnlp reads the original's. The writer
side (`serialize_instance`, `InstanceSerializer`, `record_sizes`) needs no
TensorFlow; the reader side (`feature_spec`, `parse_examples`) imports it
when first called, so that importing this module for writing costs none.
"""

import typing

from tfnlp.data import example_proto

INPUT_IDS = "input_ids"
INPUT_MASK = "input_mask"
SEGMENT_IDS = "segment_ids"
MASKED_LM_POSITIONS = "masked_lm_positions"
MASKED_LM_IDS = "masked_lm_ids"
MASKED_LM_WEIGHTS = "masked_lm_weights"
NEXT_SENTENCE_LABELS = "next_sentence_labels"

# The feature names, in google-research/bert's order:
#
# | feature                | type    | shape                     | content |
# |------------------------|---------|---------------------------|---------|
# | `input_ids`            | int64   | [max_seq_length]          | `[CLS] A [SEP] B [SEP]`, zero-padded |
# | `input_mask`           | int64   | [max_seq_length]          | 1 for real tokens, 0 for padding |
# | `segment_ids`          | int64   | [max_seq_length]          | 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 padding |
# | `masked_lm_positions`  | int64   | [max_predictions_per_seq] | ascending positions, zero-padded |
# | `masked_lm_ids`        | int64   | [max_predictions_per_seq] | original token ids, zero-padded |
# | `masked_lm_weights`    | float32 | [max_predictions_per_seq] | 1.0 per real prediction, 0.0 padding |
# | `next_sentence_labels` | int64   | [1]                       | 1 = B is a random next segment, 0 = actual next |
#
# With dynamic masking the writer stores the unmasked sequence and empty
# masked-LM lists (positions, ids and weights all zero); the reader
# (`tfnlp.data.pretraining_dataset`) then masks each epoch anew.
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
    (`tfnlp.data.example_proto`, no TensorFlow: cheap enough to run once
    per record in Beam workers that never load TensorFlow), and
    deterministic: the same instance always gives the same bytes (map keys
    are serialized in sorted order). To serialize many instances of one shape, an
    `InstanceSerializer` does the same work with less overhead.

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
    serializer = InstanceSerializer(max_seq_length, max_predictions_per_seq)
    return serializer.serialize(
        input_ids, segment_ids, masked_lm_positions, masked_lm_ids, is_random_next
    )


class InstanceSerializer:
    """Serializes pretraining instances of one shape, as `serialize_instance`.

    It fills one `tf.train.Example` message again for each instance instead
    of building a new one, which makes it the writer of choice for many
    records (the Beam job's workers). The bytes are those of
    `serialize_instance`. One serializer is used by one thread at a time.

    Args:
        max_seq_length: the padded sequence length.
        max_predictions_per_seq: the padded number of predictions.

    Raises:
        ValueError: `max_seq_length` below 1 or `max_predictions_per_seq`
            negative.

    Example:

    >>> serializer = InstanceSerializer(max_seq_length=8, max_predictions_per_seq=2)
    >>> record = serializer.serialize([101, 7592, 103, 102], [0, 0, 0, 0], [2], [2088], False)
    >>> record == serialize_instance(
    ...     [101, 7592, 103, 102], [0, 0, 0, 0], [2], [2088], False, 8, 2)
    True
    """

    def __init__(self, max_seq_length, max_predictions_per_seq):
        _check_sizes(max_seq_length, max_predictions_per_seq)
        self.max_seq_length = int(max_seq_length)
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self._example = example_proto.Example()
        feature = self._example.features.feature
        # The repeated fields of the seven features, filled anew per instance.
        self._values = {
            name: (feature[name].float_list if name == MASKED_LM_WEIGHTS
                   else feature[name].int64_list).value
            for name in FEATURE_NAMES
        }
        # `input_mask` and `masked_lm_weights` depend only on the numbers of
        # tokens and predictions, often the same as the instance before's.
        self._mask_length = None
        self._weighted_predictions = None

    def serialize(self, input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
                  is_random_next):
        """The serialized `tf.train.Example` (bytes) of one instance.

        Args:
            input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
                is_random_next: as for `serialize_instance`.

        Raises:
            ValueError: as `serialize_instance`.
        """
        # Lists as they are (the Beam job passes lists of ints, and protobuf
        # checks the element types); anything else is copied into one.
        input_ids, segment_ids, masked_lm_positions, masked_lm_ids = (
            values if isinstance(values, list) else list(values)
            for values in (input_ids, segment_ids, masked_lm_positions, masked_lm_ids)
        )
        _check_instance(input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
                        self.max_seq_length, self.max_predictions_per_seq)
        length = len(input_ids)
        predictions = len(masked_lm_positions)
        sequence_padding = [0] * (self.max_seq_length - length)
        prediction_padding = [0] * (self.max_predictions_per_seq - predictions)
        values = self._values
        values[INPUT_IDS][:] = input_ids + sequence_padding
        values[SEGMENT_IDS][:] = segment_ids + sequence_padding
        values[MASKED_LM_POSITIONS][:] = masked_lm_positions + prediction_padding
        values[MASKED_LM_IDS][:] = masked_lm_ids + prediction_padding
        values[NEXT_SENTENCE_LABELS][:] = [1 if is_random_next else 0]
        if length != self._mask_length:
            values[INPUT_MASK][:] = [1] * length + sequence_padding
            self._mask_length = length
        if predictions != self._weighted_predictions:
            values[MASKED_LM_WEIGHTS][:] = (
                [1.0] * predictions + [0.0] * len(prediction_padding))
            self._weighted_predictions = predictions
        # deterministic=True writes the feature map in sorted key order, so
        # the bytes do not depend on the protobuf implementation or on the
        # order the features were added in.
        return self._example.SerializeToString(deterministic=True)


def _check_instance(input_ids, segment_ids, masked_lm_positions, masked_lm_ids,
                    max_seq_length, max_predictions_per_seq):
    """Raises the `ValueError` that `serialize_instance` documents."""
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


class RecordSizes(typing.NamedTuple):
    """What one record says about the data it belongs to.

    Attributes:
        max_seq_length: the length of its `input_ids`.
        max_predictions_per_seq: the length of its `masked_lm_positions`.
        largest_token_id: the largest id of its `input_ids` and
            `masked_lm_ids`: the vocabulary has more ids than that.
        stored_unmasked: no prediction is set (`masked_lm_weights` all
            0): the data was written with `--dynamic_masking`, to be
            masked while it is read.
    """

    max_seq_length: int
    max_predictions_per_seq: int
    largest_token_id: int
    stored_unmasked: bool


def record_sizes(record):
    """The `RecordSizes` of a serialized record, read without TensorFlow
    (for the checks before training).

    Raises:
        ValueError: the record lacks a feature of this schema.

    Example:

    >>> sizes = record_sizes(serialize_instance([2, 7, 4, 3], [0, 0, 0, 0], [2], [9], False, 8, 2))
    >>> sizes.max_seq_length, sizes.max_predictions_per_seq, sizes.largest_token_id
    (8, 2, 9)
    >>> sizes.stored_unmasked
    False
    """
    features = example_proto.Example.FromString(record).features.feature
    missing = [name for name in FEATURE_NAMES if name not in features]
    if missing:
        raise ValueError(f"the record lacks {missing} (see tfnlp.data.pretraining_schema)")
    input_ids = features[INPUT_IDS].int64_list.value
    masked_lm_ids = features[MASKED_LM_IDS].int64_list.value
    return RecordSizes(len(input_ids), len(features[MASKED_LM_POSITIONS].int64_list.value),
                       max([0, *input_ids, *masked_lm_ids]),
                       not any(features[MASKED_LM_WEIGHTS].float_list.value))


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
