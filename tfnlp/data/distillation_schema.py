"""The distillation record: a text and its teacher's logits, the one
definition shared by the writer (`pipelines.distillation_data`) and the
reader (`trainer.distill`).

A distillation shard is a TFRecord file of serialized `tf.train.Example`s:

| feature          | type    | shape         | content |
|------------------|---------|---------------|---------|
| `text`           | bytes   | [1]           | the example's text (UTF-8) as the teacher read it |
| `teacher_logits` | float32 | [num_classes] | the teacher's logits for `text` |
| `label`          | int64   | [1]           | the gold class id, or -1 (`NO_LABEL`) for a text without one |
| `origin`         | bytes   | [1]           | where the text comes from: "labelled", "augmented" or "unlabelled" |

The text, not token ids, is the interface between teacher and student, so
a student may tokenize it with a vocabulary of its own.

The writer side (`serialize_record`) is plain protobuf
(`tfnlp.data.example_proto`), for Beam workers that do not load
TensorFlow; the same record gives the same bytes. The reader side
(`feature_spec`, `parse_examples`) is TensorFlow ops, imported when first
called.
"""

import math

from tfnlp.data import example_proto

TEXT = "text"
TEACHER_LOGITS = "teacher_logits"
LABEL = "label"
ORIGIN = "origin"
FEATURE_NAMES = (TEXT, TEACHER_LOGITS, LABEL, ORIGIN)

# The label of a text that has none (unlabelled or augmented text).
NO_LABEL = -1
ORIGINS = ("labelled", "augmented", "unlabelled")


def serialize_record(text, teacher_logits, label=NO_LABEL, origin="labelled"):
    """The serialized `tf.train.Example` of one text.

    Args:
        text: the text (str).
        teacher_logits: the teacher's logits (floats, one per class).
        label: the gold class id, or `NO_LABEL`.
        origin: one of `ORIGINS`.

    Returns:
        The bytes; the same arguments give the same bytes.

    Example:

    >>> record = serialize_record("a fine film", [-1.5, 2.0], label=1)
    >>> example = example_proto.Example.FromString(record)
    >>> list(example.features.feature["teacher_logits"].float_list.value)
    [-1.5, 2.0]
    """
    logits = [float(value) for value in teacher_logits]
    if not logits or not all(math.isfinite(value) for value in logits):
        raise ValueError(
            f"teacher_logits must be a non-empty list of finite numbers, got {logits} for "
            f"{text!r}. Check the teacher's output."
        )
    if int(label) < NO_LABEL or int(label) >= len(logits):
        raise ValueError(
            f"label {label} is not a class id of {len(logits)} classes nor NO_LABEL "
            f"({NO_LABEL})."
        )
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS}, got {origin!r}.")
    example = example_proto.Example()
    features = example.features.feature
    features[TEXT].bytes_list.value.append(text.encode("utf-8"))
    features[TEACHER_LOGITS].float_list.value.extend(logits)
    features[LABEL].int64_list.value.append(int(label))
    features[ORIGIN].bytes_list.value.append(origin.encode("utf-8"))
    return example.SerializeToString(deterministic=True)


def record_num_classes(record):
    """The number of classes (teacher logits) of a serialized record, read
    without TensorFlow.

    Example:

    >>> record_num_classes(serialize_record("a fine film", [0.5, 0.1, 2.0]))
    3
    """
    features = example_proto.Example.FromString(record).features.feature
    logits = features[TEACHER_LOGITS].float_list.value
    if not logits or not features[TEXT].bytes_list.value:
        raise ValueError(
            f"The record is not a distillation record: it has no {TEXT!r} or no "
            f"{TEACHER_LOGITS!r} (features found: {sorted(features)}; see "
            "tfnlp.data.distillation_schema)."
        )
    return len(logits)


def feature_spec(num_classes):
    """The `tf.io.parse_example` spec of records of `num_classes` logits."""
    import tensorflow as tf

    if int(num_classes) < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}.")
    return {
        TEXT: tf.io.FixedLenFeature([], tf.string),
        TEACHER_LOGITS: tf.io.FixedLenFeature([int(num_classes)], tf.float32),
        LABEL: tf.io.FixedLenFeature([], tf.int64),
        ORIGIN: tf.io.FixedLenFeature([], tf.string),
    }


def parse_examples(serialized, num_classes):
    """A batch of serialized records → `{"text": string [batch],
    "teacher_logits": float32 [batch, num_classes], "label": int32 [batch],
    "origin": string [batch]}`."""
    import tensorflow as tf

    features = tf.io.parse_example(serialized, feature_spec(num_classes))
    features[LABEL] = tf.cast(features[LABEL], tf.int32)
    return features
