"""The students' training batches of transfer-set records: texts of one
length bucket, each with its own teacher logits and label."""

import random

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import distillation_schema as schema
from tfnlp.text import BertTokenizer, WordTokenizer, write_vocabulary, write_word_vocabulary
from trainer.distillation_inputs import StudentInputs

WORDS = "the a film book was very good bad plot story".split()
WIDTHS = (4, 8, 16)
BATCH = 5


@pytest.fixture(scope="module", params=["bilstm", "bert"])
def inputs(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("student_inputs")
    if request.param == "bert":
        write_vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS,
                         str(folder / "vocab.txt"))
        return StudentInputs(BertTokenizer(str(folder / "vocab.txt")), 16, WIDTHS)
    write_word_vocabulary(WORDS, str(folder / "words.txt"))
    return StudentInputs(WordTokenizer(str(folder / "words.txt"), sequence_length=16), 16,
                         WIDTHS)


def records(count, seed=0):
    """Records of 1 to 20 words (some cut at 16 tokens), text `i` with
    teacher logits `[i, -i]` and label `i % 2`."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20)))
             for _ in range(count)]
    return texts, tf.data.Dataset.from_tensor_slices({
        schema.TEXT: texts,
        schema.TEACHER_LOGITS: np.array([[index, -index] for index in range(count)],
                                        np.float32),
        schema.LABEL: np.arange(count, dtype=np.int32) % 2,
        schema.ORIGIN: ["labelled"] * count,
    })


def real_tokens(inputs, features):
    ids = features[inputs.feature_names[0]].numpy()
    mask = features["input_mask"].numpy()
    return [tuple(row[row_mask == 1]) for row, row_mask in zip(ids, mask)]


def test_training_batches_hold_texts_of_one_bucket_with_their_logits(inputs):
    texts, dataset = records(120)
    widths_seen = set()
    rows = 0
    for batch in inputs.training_batches(dataset, BATCH):
        width = batch[inputs.feature_names[0]].shape[1]
        lengths = batch["input_mask"].numpy().sum(axis=1)
        narrower = [candidate for candidate in WIDTHS if candidate < width]
        assert width in WIDTHS and len(lengths) == BATCH
        assert lengths.max() <= width and (not narrower or lengths.min() > narrower[-1])
        indexes = batch[schema.TEACHER_LOGITS].numpy()[:, 0].astype(int)
        expected = inputs.features(tf.constant([texts[index] for index in indexes]))
        assert real_tokens(inputs, batch) == real_tokens(inputs, expected)
        np.testing.assert_array_equal(batch[schema.LABEL].numpy(), indexes % 2)
        widths_seen.add(width)
        rows += BATCH
    assert widths_seen == set(WIDTHS)
    # Only each bucket's last incomplete batch is left out.
    assert rows > 120 - len(WIDTHS) * BATCH


def test_without_buckets_training_batches_keep_the_record_order(inputs):
    plain = StudentInputs(inputs.tokenizer, inputs.sequence_length)
    _, dataset = records(12)
    batches = list(plain.training_batches(dataset, BATCH, with_teacher_logits=False))
    assert len(batches) == 2 and schema.TEACHER_LOGITS not in batches[0]
    assert all(batch[plain.feature_names[0]].shape == (BATCH, 16) for batch in batches)
    np.testing.assert_array_equal(
        np.concatenate([batch[schema.LABEL].numpy() for batch in batches]),
        np.arange(10) % 2)
