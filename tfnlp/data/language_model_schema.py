"""The causal language-model record: the one definition shared by writer and reader.

A language-model shard (`pipelines.lm_data`) is a TFRecord file of
serialized `tf.train.Example`s, each a window of the packed token stream:

| feature           | type  | shape                 | content |
|-------------------|-------|-----------------------|---------|
| `token_ids`       | int64 | [sequence_length + 1] | consecutive ids of the stream; the model reads `token_ids[:-1]` and predicts `token_ids[1:]` |
| `character_count` | int64 | [1]                   | how many characters of text the predicted ids `token_ids[1:]` stand for (for bits per character) |

Consecutive windows of a stream overlap by one id (the last id of one is the
first of the next), so every id of the stream but its first is predicted
exactly once (nanoGPT's `x`/`y` windows). A stream is documents, each ended
by the end-of-document id, so windows cross document boundaries, as GPT-2's
training data and Hugging Face's `run_clm` packing do.

Characters per id (`pipelines.lm_tokenizers`): a character id stands for 1
character, as do `<unk>` and every end-of-document id; a SentencePiece
piece for the length of its decoded text (a byte piece for 1 when it starts
a UTF-8 character, else 0; the space SentencePiece puts in front of a
document is not counted); a WordPiece token for its length in the
detokenized text (without "##", plus the space in front of a word).

The writer side (`serialize_record`) is plain protobuf
(`tfnlp.data.example_proto`), for Beam workers that do not load
TensorFlow; the same record gives the same bytes. The reader side
(`feature_spec`, `parse_examples`) is TensorFlow ops, imported when first
called, and casts to int32.
"""

from tfnlp.data import example_proto

TOKEN_IDS = "token_ids"
CHARACTER_COUNT = "character_count"
FEATURE_NAMES = (TOKEN_IDS, CHARACTER_COUNT)


def _check_sequence_length(sequence_length):
    if int(sequence_length) < 1:
        raise ValueError(f"sequence_length must be at least 1, got {sequence_length}.")
    return int(sequence_length)


def serialize_record(token_ids, character_count):
    """The serialized `tf.train.Example` of one window.

    Args:
        token_ids: the window's `sequence_length + 1` ids (ints, or a numpy
            integer array).
        character_count: the characters its predicted ids stand for.

    Returns:
        The bytes; the same window gives the same bytes.

    Example:

    >>> record = serialize_record([5, 6, 7], 2)
    >>> example = example_proto.Example.FromString(record)
    >>> list(example.features.feature["token_ids"].int64_list.value)
    [5, 6, 7]
    """
    token_ids = [int(index) for index in token_ids]
    if len(token_ids) < 2:
        raise ValueError(
            f"A language-model record holds at least 2 ids (an input and its "
            f"target), got {token_ids}."
        )
    if int(character_count) < 0:
        raise ValueError(f"character_count must not be negative, got {character_count}.")
    example = example_proto.Example()
    features = example.features.feature
    features[TOKEN_IDS].int64_list.value.extend(token_ids)
    features[CHARACTER_COUNT].int64_list.value.append(int(character_count))
    return example.SerializeToString(deterministic=True)


def record_sequence_length(record):
    """The `sequence_length` a serialized record was written with (its ids
    minus one), read without TensorFlow.

    Raises:
        ValueError: the record lacks a feature of this schema.

    Example:

    >>> record_sequence_length(serialize_record([5, 6, 7, 8], 3))
    3
    """
    features = example_proto.Example.FromString(record).features.feature
    missing = [name for name in FEATURE_NAMES if not features[name].int64_list.value]
    if missing:
        raise ValueError(
            f"The record is not a language-model record: it has no int64 {missing} "
            f"(features found: {sorted(features)}; see tfnlp.data.language_model_schema)."
        )
    return len(features[TOKEN_IDS].int64_list.value) - 1


def feature_spec(sequence_length):
    """The `tf.io.parse_example` spec: `token_ids` int64
    `[sequence_length + 1]`, `character_count` an int64 scalar."""
    import tensorflow as tf

    length = _check_sequence_length(sequence_length)
    return {
        TOKEN_IDS: tf.io.FixedLenFeature([length + 1], tf.int64),
        CHARACTER_COUNT: tf.io.FixedLenFeature([], tf.int64),
    }


def parse_examples(serialized, sequence_length):
    """A batch of serialized records → `{"token_ids": int32 [batch,
    sequence_length + 1], "character_count": int32 [batch]}`."""
    import tensorflow as tf

    features = tf.io.parse_example(serialized, feature_spec(sequence_length))
    return {name: tf.cast(features[name], tf.int32) for name in FEATURE_NAMES}
