import gzip
import re

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import pretraining_schema
from tfnlp.data.pretraining_reader import mask_dynamically, pretraining_dataset

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
VOCAB_SIZE = 30522
MASKING = dict(vocab_size=VOCAB_SIZE, cls_id=CLS, sep_id=SEP, mask_id=MASK)
FEATURE_DTYPES = {
    name: tf.float32 if name == "masked_lm_weights" else tf.int32
    for name in pretraining_schema.FEATURE_NAMES
}


def make_instances(count, max_seq_length, rng, min_length=None, masked=False):
    """`count` instances `[CLS] A [SEP] B [SEP]` of random lengths. The
    token after [CLS] is the instance's number + 1000, so rows can be found
    again; with `masked`, the first token of B is masked statically."""
    min_length = min_length or 6
    instances = []
    for number in range(count):
        length = int(rng.integers(min_length, max_seq_length + 1))
        first = int(rng.integers(1, length - 3))
        second = length - 3 - first
        tokens = [CLS, 1000 + number] + list(rng.integers(5, VOCAB_SIZE, first - 1))
        tokens += [SEP] + list(rng.integers(5, VOCAB_SIZE, second)) + [SEP]
        tokens = [int(token) for token in tokens]
        segments = [0] * (first + 2) + [1] * (second + 1)
        positions, labels = [], []
        if masked and second:
            positions, labels = [first + 2], [tokens[first + 2]]
        instances.append(dict(
            input_ids=tokens, segment_ids=segments, masked_lm_positions=positions,
            masked_lm_ids=labels, is_random_next=bool(number % 2),
        ))
    return instances


def write_shard(path, instances, max_seq_length, max_predictions_per_seq,
                compression=""):
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for instance in instances:
            writer.write(pretraining_schema.serialize_instance(
                **instance, max_seq_length=max_seq_length,
                max_predictions_per_seq=max_predictions_per_seq))
    return str(path)


def collect(dataset):
    """All batches of one pass, concatenated per feature (numpy)."""
    batches = list(dataset.as_numpy_iterator())
    return {name: np.concatenate([batch[name] for batch in batches])
            for name in pretraining_schema.FEATURE_NAMES}


def rows_by_number(features):
    """Row index by instance number (the token after [CLS] minus 1000, read
    with the masked-LM labels put back)."""
    rows = {}
    for index, row in enumerate(features["input_ids"]):
        token = row[1]
        for position, label, weight in zip(features["masked_lm_positions"][index],
                                           features["masked_lm_ids"][index],
                                           features["masked_lm_weights"][index]):
            if weight and position == 1:
                token = label
        rows[int(token) - 1000] = index
    return rows


@pytest.fixture(scope="module")
def small_shards(tmp_path_factory):
    """30 statically masked instances in 3 plain shards (length 16, 3 predictions)."""
    folder = tmp_path_factory.mktemp("small")
    instances = make_instances(30, 16, np.random.default_rng(0), masked=True)
    for shard in range(3):
        write_shard(folder / f"shard-{shard}.tfrecord", instances[shard::3], 16, 3)
    return folder, instances


def test_round_trip_shapes_dtypes_and_values(small_shards):
    folder, instances = small_shards
    dataset = pretraining_dataset(str(folder / "*.tfrecord"), batch_size=4,
                                  max_seq_length=16, max_predictions_per_seq=3,
                                  shuffle=False)
    for name, dtype in FEATURE_DTYPES.items():
        spec = dataset.element_spec[name]
        assert spec.dtype == dtype, name
    assert dataset.element_spec["input_ids"].shape == (4, 16)
    assert dataset.element_spec["masked_lm_positions"].shape == (4, 3)
    assert dataset.element_spec["next_sentence_labels"].shape == (4, 1)

    features = collect(dataset)
    assert len(features["input_ids"]) == 28  # 30 records, the last 2 dropped
    for number, row in rows_by_number(features).items():
        instance = instances[number]
        length = len(instance["input_ids"])
        expected = pretraining_schema.parse_examples(
            pretraining_schema.serialize_instance(**instance, max_seq_length=16,
                                                  max_predictions_per_seq=3), 16, 3)
        for name in pretraining_schema.FEATURE_NAMES:
            np.testing.assert_array_equal(features[name][row], expected[name].numpy())
        assert features["input_mask"][row].sum() == length


def test_drop_remainder_false_keeps_every_record_and_repeat_counts(small_shards):
    folder, _ = small_shards
    dataset = pretraining_dataset(str(folder / "*.tfrecord"), batch_size=4,
                                  max_seq_length=16, max_predictions_per_seq=3,
                                  shuffle=False, drop_remainder=False)
    assert dataset.element_spec["input_ids"].shape.as_list() == [None, 16]
    features = collect(dataset)
    assert sorted(rows_by_number(features)) == list(range(30))
    repeated = collect(pretraining_dataset(
        [str(folder / "shard-0.tfrecord"), str(folder / "shard-[12].tfrecord")],
        batch_size=4, max_seq_length=16, max_predictions_per_seq=3,
        shuffle=False, drop_remainder=False, repeat=2))
    assert len(repeated["input_ids"]) == 60


def test_unshuffled_order_is_deterministic(small_shards):
    folder, _ = small_shards
    build = lambda: collect(pretraining_dataset(  # noqa: E731
        str(folder / "*.tfrecord"), batch_size=5, max_seq_length=16,
        max_predictions_per_seq=3, shuffle=False))
    np.testing.assert_array_equal(build()["input_ids"], build()["input_ids"])


def test_shuffle_with_a_seed_is_deterministic_and_reshuffles_each_epoch(small_shards):
    folder, _ = small_shards

    def build(seed):
        return pretraining_dataset(str(folder / "*.tfrecord"), batch_size=5,
                                   max_seq_length=16, max_predictions_per_seq=3,
                                   shuffle_buffer=30, seed=seed)

    def order(dataset):
        return list(rows_by_number(collect(dataset)))

    dataset = build(7)
    first_epoch, second_epoch = order(dataset), order(dataset)
    assert sorted(first_epoch) == list(range(30))
    assert first_epoch != second_epoch
    again = build(7)
    assert order(again) == first_epoch
    assert order(again) == second_epoch
    assert order(build(8)) != first_epoch


def test_gzip_shards_are_read(tmp_path):
    instances = make_instances(12, 16, np.random.default_rng(1), masked=True)
    named = write_shard(tmp_path / "named.tfrecord.gz", instances[:4], 16, 3, "GZIP")
    unnamed = write_shard(tmp_path / "unnamed.tfrecord", instances[4:8], 16, 3, "GZIP")
    plain = write_shard(tmp_path / "plain.tfrecord", instances[8:], 16, 3)
    with open(unnamed, "rb") as file:
        assert file.read(2) == b"\x1f\x8b"
    with gzip.open(named, "rb") as file:
        assert file.read(1)

    def numbers(pattern, **options):
        features = collect(pretraining_dataset(
            pattern, batch_size=2, max_seq_length=16, max_predictions_per_seq=3,
            shuffle=False, drop_remainder=False, **options))
        return sorted(rows_by_number(features))

    assert numbers(named) == [0, 1, 2, 3]
    assert numbers(unnamed) == [4, 5, 6, 7]  # detected from the gzip magic
    assert numbers(unnamed, compression="GZIP") == [4, 5, 6, 7]
    # Plain and gzip shards in one pattern.
    assert numbers(str(tmp_path / "*")) == list(range(12))
    assert numbers(plain, compression=None) == [8, 9, 10, 11]
    with pytest.raises(ValueError, match="compression must be"):
        numbers(plain, compression="bz2")


def test_missing_files_give_a_clear_error(tmp_path):
    pattern = str(tmp_path / "nothing" / "*.tfrecord")
    with pytest.raises(FileNotFoundError, match=re.escape(pattern)) as error:
        pretraining_dataset(pattern, batch_size=2)
    assert "python -m pipelines.pretraining_data" in str(error.value)
    with pytest.raises(ValueError, match="file_pattern must be"):
        pretraining_dataset("", batch_size=2)


def test_records_of_other_lengths_give_a_clear_error(small_shards):
    folder, _ = small_shards
    with pytest.raises(ValueError, match="written with max_seq_length=16 and "
                                         "max_predictions_per_seq=3"):
        pretraining_dataset(str(folder / "*.tfrecord"), batch_size=2,
                            max_seq_length=128, max_predictions_per_seq=20)


# Dynamic masking.

MAX_SEQ_LENGTH = 128
MAX_PREDICTIONS = 20


@pytest.fixture(scope="module")
def unmasked_shards(tmp_path_factory):
    """1200 unmasked instances of length 8..128, in 2 shards."""
    folder = tmp_path_factory.mktemp("unmasked")
    instances = make_instances(1200, MAX_SEQ_LENGTH, np.random.default_rng(2),
                               min_length=8)
    for shard in range(2):
        write_shard(folder / f"shard-{shard}.tfrecord", instances[shard::2],
                    MAX_SEQ_LENGTH, MAX_PREDICTIONS)
    return str(folder / "*.tfrecord"), instances


def dynamic_dataset(pattern, seed=0, **options):
    arguments = dict(batch_size=64, max_seq_length=MAX_SEQ_LENGTH,
                     max_predictions_per_seq=MAX_PREDICTIONS,
                     dynamic_masking=True, shuffle=False, seed=seed,
                     drop_remainder=False)
    arguments.update(MASKING)
    arguments.update(options)
    return pretraining_dataset(pattern, **arguments)


def test_dynamic_masking_follows_bert_rules(unmasked_shards):
    pattern, instances = unmasked_shards
    features = collect(dynamic_dataset(pattern))
    rows = rows_by_number(features)
    assert sorted(rows) == list(range(len(instances)))

    selected = choices_mask = choices_random = choices_same = 0
    selectable_total = 0
    for number, row in rows.items():
        original = np.array(instances[number]["input_ids"])
        length = len(original)
        selectable = (original != CLS) & (original != SEP)
        count = int(features["masked_lm_weights"][row].sum())
        # The original's count over the non-special tokens, capped.
        assert count == min(MAX_PREDICTIONS, max(1, round(0.15 * selectable.sum())))
        assert features["masked_lm_weights"][row].tolist() == (
            [1.0] * count + [0.0] * (MAX_PREDICTIONS - count))
        positions = features["masked_lm_positions"][row][:count]
        assert np.all(np.diff(positions) > 0), positions
        assert np.all(positions < length)  # never padding
        assert np.all(selectable[positions])  # never [CLS] or [SEP]
        assert features["masked_lm_positions"][row][count:].sum() == 0
        assert features["masked_lm_ids"][row][count:].sum() == 0
        np.testing.assert_array_equal(features["masked_lm_ids"][row][:count],
                                      original[positions])
        masked = features["input_ids"][row]
        unchanged = np.ones(MAX_SEQ_LENGTH, bool)
        unchanged[positions] = False
        np.testing.assert_array_equal(masked[unchanged][:length - count],
                                      original[np.delete(np.arange(length), positions)])
        assert np.all(masked[length:] == 0)
        new_values = masked[positions]
        assert np.all((new_values >= 0) & (new_values < VOCAB_SIZE))
        choices_mask += int((new_values == MASK).sum())
        choices_same += int((new_values == original[positions]).sum())
        choices_random += int(((new_values != MASK)
                               & (new_values != original[positions])).sum())
        selected += count
        selectable_total += int(selectable.sum())
        # The other features are the stored ones.
        np.testing.assert_array_equal(
            features["segment_ids"][row][:length], instances[number]["segment_ids"])
        assert features["input_mask"][row].sum() == length
        assert features["next_sentence_labels"][row][0] == number % 2

    assert abs(selected / selectable_total - 0.15) < 0.005
    assert abs(choices_mask / selected - 0.8) < 0.02
    assert abs(choices_random / selected - 0.1) < 0.02
    assert abs(choices_same / selected - 0.1) < 0.02


def test_dynamic_masks_change_each_epoch_and_repeat_with_the_seed(unmasked_shards):
    pattern, _ = unmasked_shards
    dataset = dynamic_dataset(pattern, seed=3).take(6)
    first, second = collect(dataset), collect(dataset)
    assert not np.array_equal(first["masked_lm_positions"], second["masked_lm_positions"])
    # The same sequences, masked differently.
    np.testing.assert_array_equal(first["segment_ids"], second["segment_ids"])
    again = dynamic_dataset(pattern, seed=3).take(6)
    for expected in (first, second):
        features = collect(again)
        for name in pretraining_schema.FEATURE_NAMES:
            np.testing.assert_array_equal(features[name], expected[name])
    other = collect(dynamic_dataset(pattern, seed=4).take(6))
    assert not np.array_equal(other["masked_lm_positions"], first["masked_lm_positions"])


def test_dynamic_masking_with_shuffle_and_repeat_is_reproducible(unmasked_shards):
    pattern, _ = unmasked_shards

    def first_batches(seed):
        dataset = dynamic_dataset(pattern, seed=seed, shuffle=True, repeat=True,
                                  shuffle_buffer=100)
        return list(dataset.take(12).as_numpy_iterator())

    one, two = first_batches(5), first_batches(5)
    for left, right in zip(one, two):
        for name in pretraining_schema.FEATURE_NAMES:
            np.testing.assert_array_equal(left[name], right[name])


def test_short_sequences_get_one_prediction_and_long_ones_are_capped(tmp_path):
    short = dict(input_ids=[CLS, 50, SEP], segment_ids=[0, 0, 0],
                 masked_lm_positions=[], masked_lm_ids=[], is_random_next=False)
    specials_only = dict(short, input_ids=[CLS, SEP, SEP])
    long = dict(short, input_ids=[CLS] + list(range(100, 160)) + [SEP],
                segment_ids=[0] * 62)
    path = write_shard(tmp_path / "lengths.tfrecord", [short, specials_only, long], 64, 4)
    features = collect(pretraining_dataset(
        path, batch_size=3, max_seq_length=64, max_predictions_per_seq=4,
        dynamic_masking=True, shuffle=False, seed=1, **MASKING))
    assert features["masked_lm_weights"].sum(axis=1).tolist() == [1.0, 0.0, 4.0]
    assert features["masked_lm_positions"][0].tolist() == [1, 0, 0, 0]
    assert features["masked_lm_ids"][0].tolist() == [50, 0, 0, 0]
    np.testing.assert_array_equal(features["input_ids"][1][:3], [CLS, SEP, SEP])


def test_dynamic_masking_is_detected_from_unmasked_records(unmasked_shards, small_shards):
    pattern, _ = unmasked_shards
    dataset = pretraining_dataset(pattern, batch_size=8, shuffle=False,
                                  seed=0, **MASKING)
    batch = next(iter(dataset))
    assert batch["masked_lm_weights"].numpy().sum(axis=1).min() >= 1
    with pytest.raises(ValueError, match="stored unmasked.*mask_id"):
        pretraining_dataset(pattern, batch_size=8)
    with pytest.raises(ValueError, match="tokenizer="):
        pretraining_dataset(pattern, batch_size=8, dynamic_masking=True,
                            vocab_size=VOCAB_SIZE)
    # Statically masked records are read as stored unless asked otherwise.
    folder, instances = small_shards
    static = collect(pretraining_dataset(str(folder / "*.tfrecord"), batch_size=2,
                                         max_seq_length=16, max_predictions_per_seq=3,
                                         shuffle=False))
    assert static["masked_lm_weights"].sum(axis=1).max() == 1


def test_dynamic_masking_of_statically_masked_records_restores_the_labels(small_shards):
    folder, instances = small_shards
    # The stored inputs keep their tokens (the test data does not replace
    # them); put [MASK] at the stored positions to check they are restored.
    features = pretraining_schema.parse_examples(tf.constant([
        pretraining_schema.serialize_instance(
            **dict(instance, input_ids=[
                MASK if position in instance["masked_lm_positions"] else token
                for position, token in enumerate(instance["input_ids"])]),
            max_seq_length=16, max_predictions_per_seq=3)
        for instance in instances]), 16, 3)
    masked = mask_dynamically(features, tf.constant([0, 1]),
                              max_predictions_per_seq=3, **MASKING)
    for row, instance in enumerate(instances):
        count = int(masked["masked_lm_weights"][row].numpy().sum())
        positions = masked["masked_lm_positions"][row][:count].numpy()
        labels = masked["masked_lm_ids"][row][:count].numpy()
        np.testing.assert_array_equal(labels, np.array(instance["input_ids"])[positions])


def test_masking_ids_from_a_tokenizer(tmp_path, unmasked_shards):
    from tfnlp.text import BertTokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        f"word{number}" for number in range(200)]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab_file)
    pattern, instances = unmasked_shards
    features = collect(pretraining_dataset(
        pattern, batch_size=64, max_seq_length=MAX_SEQ_LENGTH,
        max_predictions_per_seq=MAX_PREDICTIONS, shuffle=False, seed=0,
        tokenizer=tokenizer).take(4))
    weights = features["masked_lm_weights"] > 0
    new_values = features["input_ids"][
        np.arange(len(weights))[:, None].repeat(MAX_PREDICTIONS, 1)[weights],
        features["masked_lm_positions"][weights]]
    assert (new_values == MASK).mean() > 0.7
    changed = (new_values != MASK) & (new_values != features["masked_lm_ids"][weights])
    assert np.all(new_values[changed] < tokenizer.vocab_size)
    assert changed.any()


def test_dynamic_masking_validates_its_ids(unmasked_shards):
    pattern, _ = unmasked_shards
    message = "mask_id=40000 is outside [0, vocab_size=30522)"
    with pytest.raises(ValueError, match=re.escape(message)):
        pretraining_dataset(pattern, batch_size=8, **dict(MASKING, mask_id=40000))


def unmasked_batch(selectable_counts, max_seq_length, max_predictions_per_seq):
    """Parsed unmasked features: row i is [CLS], `selectable_counts[i]`
    distinct ordinary ids, [SEP]."""
    return pretraining_schema.parse_examples(tf.constant([
        pretraining_schema.serialize_instance(
            [CLS] + list(range(100, 100 + count)) + [SEP], [0] * (count + 2), [], [], False,
            max_seq_length, max_predictions_per_seq)
        for count in selectable_counts]), max_seq_length, max_predictions_per_seq)


@pytest.mark.parametrize("masked_lm_prob", [0.3, 0.5])
def test_dynamic_prediction_counts_round_half_to_even_and_stop_at_the_cap(masked_lm_prob):
    # Counts whose share lands on a half (0.3 * 15 = 4.5, 0.5 * 7 = 3.5) or
    # right at, or past, the cap of 10 (0.5 * 19 = 9.5, 0.3 * 35 = 10.5).
    counts = [1, 3, 5, 7, 9, 15, 17, 19, 20, 21, 25, 33, 35, 37]
    masked = mask_dynamically(unmasked_batch(counts, 40, 10), tf.constant([4, 2]),
                              max_predictions_per_seq=10, masked_lm_prob=masked_lm_prob,
                              **MASKING)
    expected = [min(10, max(1, round(masked_lm_prob * count))) for count in counts]
    assert masked["masked_lm_weights"].numpy().sum(axis=1).tolist() == expected


def test_dynamic_masking_splits_80_10_10_at_another_masked_lm_prob():
    # 400 rows of 60 selectable tokens at masked_lm_prob=0.5: 30 predictions
    # each, under the cap of 40, so 12,000 choices (binomial spread < 0.004).
    features = unmasked_batch([60] * 400, 64, 40)
    masked = mask_dynamically(features, tf.constant([5, 6]), max_predictions_per_seq=40,
                              masked_lm_prob=0.5, **MASKING)
    weights = masked["masked_lm_weights"].numpy()
    assert weights.sum(axis=1).tolist() == [30.0] * 400
    positions = masked["masked_lm_positions"].numpy()[:, :30]
    labels = masked["masked_lm_ids"].numpy()[:, :30]
    values = np.take_along_axis(masked["input_ids"].numpy(), positions, axis=1)
    np.testing.assert_array_equal(labels, positions + 99)  # the original ids
    shares = [np.mean(values == MASK), np.mean(values == labels),
              np.mean((values != MASK) & (values != labels))]
    np.testing.assert_allclose(shares, [0.8, 0.1, 0.1], atol=0.02)
