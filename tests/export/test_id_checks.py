"""The ids signatures take every id of their tables and no other: both ends
of each range, and one past each, for `check_ids` itself and for the
inputs of BERT's ids signature (the translation ids signature's are in
tests/export/test_translation_signatures.py)."""

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.export.bert_signatures import BertEncoderSignatures
from tfnlp.export.id_checks import check_ids
from tfnlp.models import BertConfig, BertEncoder

VOCABULARY_SIZE = 20


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64], ids=["int32", "int64"])
def test_check_ids_takes_ids_from_0_to_size_minus_1(dtype):
    ids = tf.constant([[0, 6, 4]], dtype)
    assert check_ids(ids, size=7, name="token_ids").numpy().tolist() == [[0, 6, 4]]
    expected = "token_ids must hold ids from 0 to 6; it has "
    for bad_id, problem in ((7, "one of 7 or more"), (-1, "a negative one")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=expected + problem):
            check_ids(tf.constant([[0, bad_id]], dtype), size=7, name="token_ids")


@pytest.fixture(scope="module")
def encode_ids():
    """The ids signature of a tiny BERT encoder (2 segment types)."""
    config = BertConfig.preset("tiny", vocab_size=VOCABULARY_SIZE, num_layers=1)
    assert config.type_vocab_size == 2
    return BertEncoderSignatures(BertEncoder(config)).signatures()["encode_ids"]


def encode(encode_ids, input_ids, segment_ids):
    return encode_ids(input_ids=tf.constant([input_ids], tf.int32),
                      input_mask=tf.ones([1, len(input_ids)], tf.int32),
                      segment_ids=tf.constant([segment_ids], tf.int32))


def test_bert_ids_signature_takes_every_token_and_segment_id_and_no_other(encode_ids):
    outputs = encode(encode_ids, [0, VOCABULARY_SIZE - 1, 5], [0, 1, 1])
    assert np.isfinite(outputs["sequence_output"].numpy()).all()
    for input_ids, segment_ids, message in (
            ([0, VOCABULARY_SIZE, 5], [0, 0, 0],
             f"input_ids must hold ids from 0 to {VOCABULARY_SIZE - 1}; it has one of "
             f"{VOCABULARY_SIZE} or more"),
            ([0, -1, 5], [0, 0, 0],
             f"input_ids must hold ids from 0 to {VOCABULARY_SIZE - 1}; it has a negative one"),
            ([0, 4, 5], [0, 1, 2],
             "segment_ids must hold ids from 0 to 1; it has one of 2 or more"),
            ([0, 4, 5], [0, -1, 1],
             "segment_ids must hold ids from 0 to 1; it has a negative one")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            encode(encode_ids, input_ids, segment_ids)
