"""The translation-pair record: the one definition shared by writer and reader.

A translation shard is a TFRecord file of serialized `tf.train.Example`s
with the feature names of tensor2tensor and the TF Model Garden's
translation data:

| feature   | type  | shape    | content |
|-----------|-------|----------|---------|
| `inputs`  | int64 | variable | the source sentence's subword ids, then `EOS_ID` |
| `targets` | int64 | variable | the target sentence's subword ids, then `EOS_ID` |

The ids are those of the job's SentencePiece model, whose special ids are
fixed (`PAD_ID` 0, `UNK_ID` 1, `BOS_ID` 2, `EOS_ID` 3), so id 0 is padding
everywhere. Neither side holds `BOS_ID`: the model puts it in front of the
targets to make the decoder's inputs.

The writer side (`serialize_pair`) is plain protobuf
(`tfnlp.data.example_proto`), for Beam workers that do not load TensorFlow;
the same pair gives the same bytes. The reader side (`feature_spec`,
`parse_examples`) is TensorFlow ops, imported when first called.
"""

from tfnlp.data import example_proto

INPUTS = "inputs"
TARGETS = "targets"
FEATURE_NAMES = (INPUTS, TARGETS)

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3


def serialize_pair(inputs, targets):
    """The serialized `tf.train.Example` of one pair of id lists.

    Args:
        inputs: the source ids, ending with `EOS_ID`.
        targets: the target ids, ending with `EOS_ID`.

    Example:

    >>> record = serialize_pair([17, 3], [21, 22, 3])
    >>> example = example_proto.Example.FromString(record)
    >>> list(example.features.feature["targets"].int64_list.value)
    [21, 22, 3]
    """
    for name, ids in ((INPUTS, inputs), (TARGETS, targets)):
        if not ids or ids[-1] != EOS_ID:
            raise ValueError(
                f"The {name!r} ids of a translation pair must be non-empty and end "
                f"with EOS_ID={EOS_ID}; got {list(ids)[:10]}. Append EOS_ID to each "
                "side after tokenizing."
            )
    example = example_proto.Example()
    for name, ids in ((INPUTS, inputs), (TARGETS, targets)):
        example.features.feature[name].int64_list.value.extend(int(i) for i in ids)
    return example.SerializeToString(deterministic=True)


def feature_spec():
    """The `tf.io.parse_example` spec: both features as variable-length int64."""
    import tensorflow as tf

    return {name: tf.io.VarLenFeature(tf.int64) for name in FEATURE_NAMES}


def parse_example(serialized):
    """One serialized record → `{"inputs", "targets"}` as 1-D int32 tensors."""
    import tensorflow as tf

    features = tf.io.parse_single_example(serialized, feature_spec())
    return {
        name: tf.cast(tf.sparse.to_dense(features[name]), tf.int32)
        for name in FEATURE_NAMES
    }
