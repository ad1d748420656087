"""Length-bucketed fine-tuning batches: every example once, cut to the
narrowest bucket that holds it."""

import collections
import random

import numpy as np
import pytest

from tfnlp.command_line import UsageError
from tfnlp.text.bert_tokenizer import BertTokenizer
from trainer import finetune_data, length_buckets

WORDS = "the a film book was very good bad plot story".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
WIDTHS = (4, 8, 16)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("buckets") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return BertTokenizer(str(path))


def sentences(count, seed=0):
    rng = random.Random(seed)
    # 1 to 20 words: some examples are cut at max_seq_length=16.
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20)))
            for _ in range(count)]


def classification_batches(tokenizer, texts, **options):
    examples = [(text, "", ("good", "bad")[index % 2]) for index, text in enumerate(texts)]
    return list(finetune_data.classification_dataset(
        examples, ["good", "bad"], tokenizer, max_seq_length=16, batch_size=5, **options))


def rows(batches):
    """The multiset of (real token ids, label) of every example."""
    counted = collections.Counter()
    for features, labels in batches:
        ids, mask = features["input_ids"].numpy(), features["input_mask"].numpy()
        for row, row_mask, label in zip(ids, mask, labels.numpy()):
            counted[(tuple(row[row_mask == 1]), int(label))] += 1
    return counted


def test_bucket_widths_keep_the_boundaries_below_the_maximum():
    assert length_buckets.bucket_widths("32,8,16", 16) == (8, 16)
    assert length_buckets.bucket_widths([4], 16) == (4, 16)
    with pytest.raises(UsageError, match="comma-separated"):
        length_buckets.bucket_widths("8,sixteen", 16)
    with pytest.raises(UsageError, match="positive"):
        length_buckets.bucket_widths("0,8", 16)


def test_evaluation_batches_hold_every_example_once(tokenizer):
    texts = sentences(47)
    bucketed = classification_batches(tokenizer, texts, bucket_widths=WIDTHS)
    padded = classification_batches(tokenizer, texts)
    assert rows(bucketed) == rows(padded)
    assert sum(len(labels) for _, labels in bucketed) == 47


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_evaluation_datasets_know_their_number_of_batches(tokenizer, drop_remainder):
    """Keras warns that an evaluation "ran out of data" when a dataset of
    unknown length ends; the count is checked against the batches made."""
    texts = sentences(47)
    examples = [(text, "", "good") for text in texts]
    dataset = finetune_data.classification_dataset(
        examples, ["good", "bad"], tokenizer, max_seq_length=16, batch_size=5,
        bucket_widths=WIDTHS, drop_remainder=drop_remainder)
    # A wrong count fails the iteration (tf.data asserts it).
    assert int(dataset.cardinality()) == len(list(dataset))


def test_each_batch_is_cut_to_the_narrowest_bucket_that_holds_it(tokenizer):
    batches = classification_batches(tokenizer, sentences(60, seed=1), bucket_widths=WIDTHS)
    widths = collections.Counter()
    for features, _ in batches:
        width = features["input_ids"].shape[1]
        longest = int(features["input_mask"].numpy().sum(axis=1).max())
        narrower = [candidate for candidate in WIDTHS if candidate < width]
        assert width in WIDTHS and longest <= width
        assert not narrower or longest > narrower[-1]
        # The examples of a batch come from one bucket.
        shortest = int(features["input_mask"].numpy().sum(axis=1).min())
        assert not narrower or shortest > narrower[-1]
        widths[width] += 1
    assert set(widths) == set(WIDTHS)


def test_training_batches_are_full_and_seeded(tokenizer):
    texts = sentences(40, seed=2)

    def first_batches(seed):
        dataset = finetune_data.classification_dataset(
            [(text, "", "good") for text in texts], ["good"], tokenizer, max_seq_length=16,
            batch_size=5, training=True, seed=seed, bucket_widths=WIDTHS)
        return [features["input_ids"].numpy() for features, _ in dataset.take(12)]

    first = first_batches(3)
    assert all(len(batch) == 5 for batch in first)
    again = first_batches(3)
    assert all(np.array_equal(one, other) for one, other in zip(first, again))


def test_token_labels_are_cut_with_their_features(tokenizer):
    rng = random.Random(4)
    examples = []
    for _ in range(30):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        examples.append((words, ["B" if word == "film" else "O" for word in words]))
    dataset = finetune_data.token_classification_dataset(
        examples, ["O", "B"], tokenizer, max_seq_length=16, batch_size=4,
        bucket_widths=WIDTHS)
    tagged = 0
    for features, labels, weights in dataset:
        width = features["input_ids"].shape[1]
        assert labels.shape[1] == weights.shape[1] == width
        tagged += int(weights.numpy().sum())
    assert tagged == sum(min(len(words), 14) for words, _ in examples)
