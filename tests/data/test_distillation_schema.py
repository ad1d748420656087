"""The distillation record: written with plain protobuf, read with TensorFlow."""

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import distillation_schema as schema


def test_a_record_reads_back_as_written():
    records = [
        schema.serialize_record("a fine film", [-1.5, 2.25], label=1),
        schema.serialize_record("dull , très long", [0.5, -0.125], origin="augmented"),
    ]
    batch = schema.parse_examples(tf.constant(records), num_classes=2)
    assert [text.decode() for text in batch["text"].numpy()] == ["a fine film",
                                                                 "dull , très long"]
    np.testing.assert_array_equal(batch["teacher_logits"].numpy(), [[-1.5, 2.25], [0.5, -0.125]])
    assert batch["label"].numpy().tolist() == [1, schema.NO_LABEL]
    assert batch["origin"].numpy().tolist() == [b"labelled", b"augmented"]
    assert schema.record_num_classes(records[0]) == 2


def test_the_same_record_gives_the_same_bytes():
    assert (schema.serialize_record("x", [1.0, 2.0], 0)
            == schema.serialize_record("x", [1.0, 2.0], 0))


@pytest.mark.parametrize("arguments, message", [
    (("x", []), "non-empty"),
    (("x", [1.0, float("nan")]), "finite"),
    (("x", [1.0, 2.0], 2), "not a class id"),
    (("x", [1.0, 2.0], 0, "dev"), "origin"),
])
def test_bad_records_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message):
        schema.serialize_record(*arguments)


def test_a_record_of_another_schema_is_named():
    other = tf.train.Example()
    other.features.feature["token_ids"].int64_list.value.append(3)
    with pytest.raises(ValueError, match="not a distillation record"):
        schema.record_num_classes(other.SerializeToString())
