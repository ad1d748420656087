import collections
import random
import re

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import pretraining_schema
from tfnlp.data.pretraining_schema import (
    FEATURE_NAMES,
    feature_spec,
    parse_examples,
    serialize_instance,
)

MAX_SEQ_LENGTH = 12
MAX_PREDICTIONS = 4
CLS, SEP, MASK = 101, 102, 103

# [CLS] a b [MASK] [SEP] c [MASK] [SEP]; the masked tokens were 2000 and 3001.
INSTANCE = dict(
    input_ids=[CLS, 1996, 1997, MASK, SEP, 3000, MASK, SEP],
    segment_ids=[0, 0, 0, 0, 0, 1, 1, 1],
    masked_lm_positions=[3, 6],
    masked_lm_ids=[2000, 3001],
    is_random_next=True,
)


def original_name_to_features(max_seq_length, max_predictions_per_seq):
    """`name_to_features` of google-research/bert's run_pretraining.py
    (`input_fn_builder`), with tf.io.FixedLenFeature for tf.FixedLenFeature."""
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def original_decode_record(record, name_to_features):
    """run_pretraining.py's `_decode_record`: parse one record, int64 -> int32."""
    example = tf.io.parse_single_example(record, name_to_features)
    for name in list(example.keys()):
        tensor = example[name]
        if tensor.dtype == tf.int64:
            tensor = tf.cast(tensor, tf.int32)
        example[name] = tensor
    return example


def original_example(instance, max_seq_length, max_predictions_per_seq):
    """The tf.train.Example that google-research/bert's create_pretraining_data.py
    (`write_instance_to_example_files`) builds for an instance."""
    input_ids = list(instance["input_ids"])
    input_mask = [1] * len(input_ids)
    segment_ids = list(instance["segment_ids"])
    while len(input_ids) < max_seq_length:
        input_ids.append(0)
        input_mask.append(0)
        segment_ids.append(0)
    masked_lm_positions = list(instance["masked_lm_positions"])
    masked_lm_ids = list(instance["masked_lm_ids"])
    masked_lm_weights = [1.0] * len(masked_lm_ids)
    while len(masked_lm_positions) < max_predictions_per_seq:
        masked_lm_positions.append(0)
        masked_lm_ids.append(0)
        masked_lm_weights.append(0.0)
    next_sentence_label = 1 if instance["is_random_next"] else 0

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    def float_feature(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))

    features = collections.OrderedDict()
    features["input_ids"] = int_feature(input_ids)
    features["input_mask"] = int_feature(input_mask)
    features["segment_ids"] = int_feature(segment_ids)
    features["masked_lm_positions"] = int_feature(masked_lm_positions)
    features["masked_lm_ids"] = int_feature(masked_lm_ids)
    features["masked_lm_weights"] = float_feature(masked_lm_weights)
    features["next_sentence_labels"] = int_feature([next_sentence_label])
    return tf.train.Example(features=tf.train.Features(feature=features))


def serialize(instance=INSTANCE, **overrides):
    arguments = dict(instance, max_seq_length=MAX_SEQ_LENGTH,
                     max_predictions_per_seq=MAX_PREDICTIONS)
    arguments.update(overrides)
    return serialize_instance(**arguments)


def test_feature_spec_is_the_originals_name_to_features():
    assert feature_spec(128, 20) == original_name_to_features(128, 20)
    assert tuple(feature_spec(128, 20)) == FEATURE_NAMES


def test_round_trip_with_padding():
    features = parse_examples(tf.constant([serialize(), serialize()]),
                              MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert set(features) == set(FEATURE_NAMES)
    for name in FEATURE_NAMES:
        expected_dtype = tf.float32 if name == "masked_lm_weights" else tf.int32
        assert features[name].dtype == expected_dtype, name
    row = {name: features[name][1].numpy().tolist() for name in FEATURE_NAMES}
    assert row["input_ids"] == INSTANCE["input_ids"] + [0] * 4
    assert row["input_mask"] == [1] * 8 + [0] * 4
    assert row["segment_ids"] == INSTANCE["segment_ids"] + [0] * 4
    assert row["masked_lm_positions"] == [3, 6, 0, 0]
    assert row["masked_lm_ids"] == [2000, 3001, 0, 0]
    assert row["masked_lm_weights"] == [1.0, 1.0, 0.0, 0.0]
    assert row["next_sentence_labels"] == [1]
    assert features["input_ids"].shape == (2, MAX_SEQ_LENGTH)
    assert features["masked_lm_weights"].shape == (2, MAX_PREDICTIONS)
    assert features["next_sentence_labels"].shape == (2, 1)


def test_a_scalar_record_parses_to_unbatched_features():
    features = parse_examples(serialize(is_random_next=False),
                              MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert features["input_ids"].shape == (MAX_SEQ_LENGTH,)
    assert features["next_sentence_labels"].numpy().tolist() == [0]


def test_full_length_and_full_predictions_need_no_padding():
    ids = list(range(200, 200 + MAX_SEQ_LENGTH))
    features = parse_examples(
        serialize(input_ids=ids, segment_ids=[0] * 6 + [1] * 6,
                  masked_lm_positions=[1, 2, 3, 11], masked_lm_ids=[5, 6, 7, 8]),
        MAX_SEQ_LENGTH, MAX_PREDICTIONS,
    )
    assert features["input_ids"].numpy().tolist() == ids
    assert features["input_mask"].numpy().sum() == MAX_SEQ_LENGTH
    assert features["masked_lm_weights"].numpy().tolist() == [1.0] * 4


def test_dynamic_masking_records_have_empty_masked_lm_fields():
    features = parse_examples(
        serialize(masked_lm_positions=[], masked_lm_ids=[]),
        MAX_SEQ_LENGTH, MAX_PREDICTIONS,
    )
    for name in ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights"):
        assert features[name].numpy().tolist() == [0] * MAX_PREDICTIONS


def test_serialized_bytes_are_deterministic():
    record = serialize()
    assert serialize() == record
    # Tuples, numpy arrays and numpy booleans give the same bytes.
    assert serialize(
        input_ids=np.array(INSTANCE["input_ids"], np.int64),
        segment_ids=tuple(INSTANCE["segment_ids"]),
        masked_lm_positions=np.array([3, 6], np.int32),
        masked_lm_ids=(2000, 3001),
        is_random_next=np.bool_(True),
    ) == record
    # The map is written in sorted key order, whatever the insertion order.
    reordered = tf.train.Example.FromString(record)
    shuffled = tf.train.Example()
    for name in reversed(FEATURE_NAMES):
        shuffled.features.feature[name].CopyFrom(reordered.features.feature[name])
    assert shuffled.SerializeToString(deterministic=True) == record


def random_instance(rng, max_seq_length, max_predictions_per_seq):
    length = rng.randint(1, max_seq_length)
    predictions = rng.randint(0, min(length, max_predictions_per_seq))
    segment_a = rng.randint(0, length)
    return dict(
        # Ids of one to five varint bytes, as the largest vocabularies need.
        input_ids=[rng.randrange(1 << rng.choice((7, 14, 21, 28, 35))) for _ in range(length)],
        segment_ids=[0] * segment_a + [1] * (length - segment_a),
        masked_lm_positions=sorted(rng.sample(range(length), predictions)),
        masked_lm_ids=[rng.randrange(30522) for _ in range(predictions)],
        is_random_next=rng.random() < 0.5,
    )


def test_a_serializer_writes_the_original_writers_bytes_instance_after_instance():
    """One `InstanceSerializer` fills its message anew for each instance: a
    short instance after a long one, or one without predictions, keeps
    nothing of the one before, and every record has the bytes of the
    original writer's example (TensorFlow's deterministic serialization)."""
    rng = random.Random(0)
    serializer = pretraining_schema.InstanceSerializer(MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    for _ in range(300):
        instance = random_instance(rng, MAX_SEQ_LENGTH, MAX_PREDICTIONS)
        record = serializer.serialize(**instance)
        expected = original_example(instance, MAX_SEQ_LENGTH, MAX_PREDICTIONS)
        assert record == expected.SerializeToString(deterministic=True)
        assert record == serialize(instance)
    with pytest.raises(ValueError, match="strictly ascending"):
        serializer.serialize(**dict(INSTANCE, masked_lm_positions=[6, 3]))
    # A failed call leaves the serializer usable.
    assert serializer.serialize(**INSTANCE) == serialize()


def test_a_reader_written_for_the_original_parses_our_records():
    name_to_features = original_name_to_features(MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    theirs = original_decode_record(tf.constant(serialize()), name_to_features)
    ours = parse_examples(serialize(), MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert set(theirs) == set(ours)
    for name in FEATURE_NAMES:
        assert theirs[name].dtype == ours[name].dtype
        np.testing.assert_array_equal(theirs[name].numpy(), ours[name].numpy())


def test_our_record_equals_the_original_writers_example():
    ours = tf.train.Example.FromString(serialize())
    theirs = original_example(INSTANCE, MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert ours == theirs
    # And the original writer's bytes parse with parse_examples.
    parsed = parse_examples(theirs.SerializeToString(), MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    assert parsed["masked_lm_ids"].numpy().tolist() == [2000, 3001, 0, 0]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(input_ids=list(range(13)), segment_ids=[0] * 13),
         "input_ids has 13 tokens, more than max_seq_length=12"),
        (dict(masked_lm_positions=[1, 2, 3, 4, 5], masked_lm_ids=[9] * 5),
         "masked_lm_positions has 5 predictions, more than max_predictions_per_seq=4"),
        (dict(segment_ids=[0] * 7), "segment_ids has 7 values but input_ids has 8"),
        (dict(masked_lm_ids=[2000]), "masked_lm_ids has 1 values but masked_lm_positions has 2"),
        (dict(masked_lm_positions=[6, 3]), "strictly ascending"),
        (dict(masked_lm_positions=[3, 3]), "strictly ascending"),
        (dict(masked_lm_positions=[3, 8]), "in [0, 8)"),
    ],
)
def test_invalid_instances_raise_clear_errors(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        serialize(**overrides)


def test_invalid_sizes_raise():
    with pytest.raises(ValueError, match="max_seq_length must be at least 1"):
        feature_spec(0, 20)
    with pytest.raises(ValueError, match="max_predictions_per_seq must not be negative"):
        pretraining_schema.serialize_instance([1], [0], [], [], False, 4, -1)
