"""Small SavedModels in TensorFlow Serving's layout, built with plain
TensorFlow, for the server's tests.

Version 1 and 2 of the toy model have the same signatures and answer
differently: version 2 adds `LENGTH_OFFSET` to every `length`.

- "serving_default": `text` (string, [batch]) to `length` (int32 bytes),
  `upper` (the upper-cased text), `first_byte` (its first byte: not valid
  UTF-8 when the text starts with a multi-byte character) and `text_bytes`
  (the text again, always base64 in JSON);
- "length": `text` to `length` alone (a single output);
- "weighted_sum": `ids` (int32, [batch, any]) and `scale` (float32,
  [batch]) to `sum` (float32: the sum of the ids times the scale) and
  `count` (int64: how many ids); negative ids fail with InvalidArgumentError;
- "total_length": `text` to the total byte length of the batch (a scalar,
  not one row per instance);
- "capped_sum": `ids` (int32, [batch, any]) and `cap` (int32, [batch]) to
  `sum` (int32: the sum of the ids, each at most the cap); `cap` is
  optional (`CAP_RULES`: default 10, from 1 to 100).

Every call of "serving_default" adds one to the variable `calls`, so tests
can count how many times the model ran.
"""

import tensorflow as tf

from tfnlp.export.input_rules import InputRules, input_rules_file

LENGTH_OFFSET = 1000
TEXT_SPEC = tf.TensorSpec([None], tf.string, name="text")
CAP_RULES = InputRules(defaults={"cap": 10}, ranges={"cap": {"at_least": 1, "at_most": 100}})


class ToyModel(tf.Module):
    """The toy model of one version.

    Args:
        length_offset: added to every `length` output.
    """

    def __init__(self, length_offset):
        super().__init__()
        self.length_offset = tf.Variable(length_offset, dtype=tf.int32)
        self.calls = tf.Variable(0, dtype=tf.int64)

    def _length(self, text):
        return tf.strings.length(text) + self.length_offset

    @tf.function(input_signature=[TEXT_SPEC])
    def describe(self, text):
        self.calls.assign_add(1)
        return {
            "length": self._length(text),
            "upper": tf.strings.upper(text),
            "first_byte": tf.strings.substr(text, 0, 1),
            "text_bytes": text,
        }

    @tf.function(input_signature=[TEXT_SPEC])
    def length(self, text):
        return {"length": self._length(text)}

    @tf.function(input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="ids"),
        tf.TensorSpec([None], tf.float32, name="scale"),
    ])
    def weighted_sum(self, ids, scale):
        checks = [tf.debugging.assert_non_negative(ids, message="ids must be non-negative")]
        with tf.control_dependencies(checks):
            total = tf.cast(tf.reduce_sum(ids, axis=1), tf.float32)
        return {
            "sum": total * scale,
            "count": tf.fill(tf.shape(scale), tf.cast(tf.shape(ids)[1], tf.int64)),
        }

    @tf.function(input_signature=[TEXT_SPEC])
    def total_length(self, text):
        return {"total": tf.reduce_sum(self._length(text))}

    @tf.function(input_signature=[
        tf.TensorSpec([None, None], tf.int32, name="ids"),
        tf.TensorSpec([None], tf.int32, name="cap"),
    ])
    def capped_sum(self, ids, cap):
        return {"sum": tf.reduce_sum(tf.minimum(ids, cap[:, None]), axis=1)}


def export_toy_model(export_dir):
    """Writes versions 1 and 2 of the toy model to `export_dir/<version>/`."""
    for version in (1, 2):
        model = ToyModel(length_offset=0 if version == 1 else LENGTH_OFFSET)
        tf.saved_model.save(model, f"{export_dir}/{version}", signatures={
            "serving_default": model.describe,
            "length": model.length,
            "weighted_sum": model.weighted_sum,
            "total_length": model.total_length,
            "capped_sum": model.capped_sum,
        })
        for name, contents in input_rules_file({"capped_sum": CAP_RULES}).items():
            extra = tf.io.gfile.join(f"{export_dir}/{version}", "assets.extra")
            tf.io.gfile.makedirs(extra)
            with tf.io.gfile.GFile(tf.io.gfile.join(extra, name), "wb") as file:
                file.write(contents)
    return export_dir
