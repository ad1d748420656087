import numpy as np
import pytest
import tensorflow as tf

from tfnlp.text import pack_inputs

CLS, SEP = 101, 102


def original_truncate_seq_pair(first, second, budget):
    """google-research/bert's rule: drop the last token of the longer segment
    (of the second on a tie) until both fit."""
    first, second = list(first), list(second)
    while len(first) + len(second) > budget:
        if len(first) > len(second):
            first.pop()
        else:
            second.pop()
    return first, second


def test_pair_truncation_matches_the_original_rule():
    rng = np.random.default_rng(0)
    sequence_length = 16
    firsts, seconds = [], []
    for _ in range(300):
        firsts.append(list(rng.integers(1000, 2000, rng.integers(0, 20))))
        seconds.append(list(rng.integers(2000, 3000, rng.integers(0, 20))))
    packed = pack_inputs(
        [tf.ragged.constant(firsts, dtype=tf.int64),
         tf.ragged.constant(seconds, dtype=tf.int64)],
        sequence_length, CLS, SEP,
    )
    for row, (first, second) in enumerate(zip(firsts, seconds)):
        first, second = original_truncate_seq_pair(first, second, sequence_length - 3)
        tokens = [CLS] + first + [SEP] + second + [SEP]
        padding = sequence_length - len(tokens)
        assert packed["input_ids"][row].numpy().tolist() == tokens + [0] * padding
        assert packed["segment_ids"][row].numpy().tolist() == (
            [0] * (len(first) + 2) + [1] * (len(second) + 1) + [0] * padding
        )
        assert packed["input_mask"][row].numpy().tolist() == (
            [1] * len(tokens) + [0] * padding
        )


def test_single_segment_is_cut_to_fit_cls_and_sep():
    packed = pack_inputs([tf.ragged.constant([[5, 6, 7, 8, 9], [5]])], 5, CLS, SEP)
    assert packed["input_ids"].numpy().tolist() == [
        [CLS, 5, 6, 7, SEP], [CLS, 5, SEP, 0, 0]
    ]
    assert packed["segment_ids"].numpy().sum() == 0
    assert packed["input_mask"].numpy().tolist() == [[1] * 5, [1, 1, 1, 0, 0]]
    assert packed["input_ids"].dtype == tf.int32


def test_packing_with_the_tokenizer_in_tf_data(shared_data_dir):
    from tfnlp.text import BertTokenizer

    tokenizer = BertTokenizer(shared_data_dir / "vocab/bert-base-uncased-vocab.txt")

    def encode(first, second):
        return pack_inputs(
            [tokenizer.tokenize(first), tokenizer.tokenize(second)], 8,
            tokenizer.cls_id, tokenizer.sep_id,
        )

    dataset = tf.data.Dataset.from_tensor_slices(
        (["Hello there, world", "hi"], ["goodbye", "you"])
    ).batch(2).map(encode)
    batch = next(iter(dataset))
    assert batch["input_ids"].numpy().tolist() == [
        [101, 7592, 2045, 1010, 2088, 102, 9119, 102],
        [101, 7632, 102, 2017, 102, 0, 0, 0],
    ]


@pytest.mark.parametrize("segments, length", [(1, 2), (2, 4), (3, 64)])
def test_impossible_packing_is_rejected(segments, length):
    with pytest.raises(ValueError):
        pack_inputs([tf.ragged.constant([[1]])] * segments, length, CLS, SEP)


def test_the_shortest_sequence_length_keeps_one_token_per_segment():
    # One past the lengths rejected above: room for exactly one token each.
    single = pack_inputs([tf.ragged.constant([[5, 6], [7]])], 3, CLS, SEP)
    assert single["input_ids"].numpy().tolist() == [[CLS, 5, SEP], [CLS, 7, SEP]]
    pair = pack_inputs([tf.ragged.constant([[5, 6]]), tf.ragged.constant([[8, 9]])], 5, CLS, SEP)
    assert pair["input_ids"].numpy().tolist() == [[CLS, 5, SEP, 8, SEP]]
    assert pair["input_mask"].numpy().tolist() == [[1] * 5]


def test_segments_that_exactly_fit_are_kept_whole():
    packed = pack_inputs([tf.ragged.constant([[5, 6, 7], [5, 6, 7, 8]])], 5, CLS, SEP)
    assert packed["input_ids"].numpy().tolist() == [[CLS, 5, 6, 7, SEP], [CLS, 5, 6, 7, SEP]]
    assert packed["input_mask"].numpy().tolist() == [[1] * 5] * 2
