"""Tests of `tfnlp.data.language_model_schema`: the TensorFlow-free writer
gives TensorFlow's bytes, and the reader side parses them back."""

import pytest
import tensorflow as tf

from tfnlp.data import language_model_schema as schema

WINDOW = [7, 0, 2, 65_535, 2**31 + 5]


def test_serialized_records_are_tensorflows_bytes():
    ours = schema.serialize_record(WINDOW, 11)
    example = tf.train.Example()
    example.features.feature["token_ids"].int64_list.value.extend(WINDOW)
    example.features.feature["character_count"].int64_list.value.append(11)
    assert ours == example.SerializeToString(deterministic=True)


def test_numpy_windows_give_the_same_bytes():
    import numpy as np

    assert schema.serialize_record(np.array(WINDOW, np.int64), np.int64(11)) == (
        schema.serialize_record(WINDOW, 11))


def test_parsing_gives_int32_ids_and_one_count_per_record():
    records = tf.constant([schema.serialize_record(WINDOW[:4], 3),
                           schema.serialize_record([1, 2, 3, 4], 9)])
    parsed = schema.parse_examples(records, sequence_length=3)
    assert parsed["token_ids"].dtype == parsed["character_count"].dtype == tf.int32
    assert parsed["token_ids"].numpy().tolist() == [WINDOW[:4], [1, 2, 3, 4]]
    assert parsed["character_count"].numpy().tolist() == [3, 9]


def test_the_spec_holds_sequence_length_plus_one_ids():
    spec = schema.feature_spec(256)
    assert spec["token_ids"].shape == [257]
    assert spec["character_count"].shape == []
    assert schema.feature_spec(1)["token_ids"].shape == [2]
    with pytest.raises(ValueError, match="at least 1"):
        schema.feature_spec(0)


def test_the_sequence_length_is_read_without_tensorflow():
    assert schema.record_sequence_length(schema.serialize_record([1, 2], 1)) == 1
    assert schema.record_sequence_length(schema.serialize_record(list(range(257)), 0)) == 256
    other = tf.train.Example()
    other.features.feature["input_ids"].int64_list.value.extend([1, 2])
    with pytest.raises(ValueError, match="not a language-model record"):
        schema.record_sequence_length(other.SerializeToString())


@pytest.mark.parametrize("ids, count, message", [
    ([5], 1, "at least 2 ids"),
    ([], 0, "at least 2 ids"),
    ([5, 6], -1, "must not be negative"),
])
def test_impossible_records_are_refused(ids, count, message):
    with pytest.raises(ValueError, match=message):
        schema.serialize_record(ids, count)
    assert schema.serialize_record([5, 6], 0)  # The edges accepted.
