"""Tests of `tfnlp.data.language_model_dataset`: shapes and dtypes, every
record read once, the sequence-length check, seeds, input pipelines,
compression."""

import gzip

import pytest
import tensorflow as tf

from tfnlp.data import language_model_dataset, pretraining_schema
from tfnlp.data import language_model_schema as schema

SEQUENCE_LENGTH = 5
RECORDS = 23  # A prime: batches of 4 leave 3, shares of 2 or 3 pipelines differ.


def window(index):
    """Record `index`: ids that name it (all distinct), characters 10 + index."""
    return [index * 100 + position for position in range(SEQUENCE_LENGTH + 1)], 10 + index


def write_shards(folder, shards=3, compress=False):
    paths = []
    for shard in range(shards):
        path = folder / f"train-{shard:05d}-of-{shards:05d}.tfrecord{'.gz' if compress else ''}"
        options = tf.io.TFRecordOptions("GZIP" if compress else "")
        with tf.io.TFRecordWriter(str(path), options) as writer:
            for index in range(shard, RECORDS, shards):
                writer.write(schema.serialize_record(*window(index)))
        paths.append(path)
    return paths


def record_indexes(dataset):
    indexes = []
    for batch in dataset:
        ids = batch["token_ids"].numpy()
        counts = batch["character_count"].numpy()
        for row, count in zip(ids, counts):
            index = int(row[0]) // 100
            assert row.tolist() == window(index)[0] and count == window(index)[1]
            indexes.append(index)
    return indexes


def test_batches_hold_int32_windows_and_counts(tmp_path):
    write_shards(tmp_path)
    dataset = language_model_dataset(str(tmp_path / "train-*"), 4, SEQUENCE_LENGTH)
    assert dataset.element_spec == {
        "token_ids": tf.TensorSpec([4, SEQUENCE_LENGTH + 1], tf.int32),
        "character_count": tf.TensorSpec([4], tf.int32),
    }
    assert len(record_indexes(dataset)) == 20  # 5 full batches; 3 dropped.


def test_one_pass_reads_every_record_once(tmp_path):
    write_shards(tmp_path)
    dataset = language_model_dataset(str(tmp_path / "*.tfrecord"), 4, SEQUENCE_LENGTH,
                                     shuffle=False, drop_remainder=False)
    indexes = record_indexes(dataset)
    assert sorted(indexes) == list(range(RECORDS))
    assert [batch["token_ids"].shape[0] for batch in dataset] == [4] * 5 + [3]


def test_another_sequence_length_is_a_clear_error(tmp_path):
    write_shards(tmp_path)
    for asked in (SEQUENCE_LENGTH - 1, SEQUENCE_LENGTH + 1):
        with pytest.raises(ValueError, match=f"hold {SEQUENCE_LENGTH + 1} ids "
                           f"\\(sequence_length={SEQUENCE_LENGTH}\\), but "
                           f"sequence_length={asked}"):
            language_model_dataset(str(tmp_path / "train-*"), 4, asked)


def test_other_records_are_refused(tmp_path):
    path = tmp_path / "pretraining.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(pretraining_schema.serialize_instance([2, 5, 3], [0, 0, 0], [], [],
                                                           False, 8, 2))
    with pytest.raises(ValueError, match="does not hold language-model records"):
        language_model_dataset(str(path), 1, SEQUENCE_LENGTH)


def test_missing_files_name_the_job(tmp_path):
    with pytest.raises(FileNotFoundError, match="pipelines.lm_data"):
        language_model_dataset(str(tmp_path / "train-*"), 1, SEQUENCE_LENGTH)


def test_a_seed_gives_the_same_order_and_epochs_differ(tmp_path):
    write_shards(tmp_path)
    pattern = str(tmp_path / "train-*")

    def epochs(seed):
        dataset = language_model_dataset(pattern, 1, SEQUENCE_LENGTH, seed=seed, repeat=2,
                                          shuffle_buffer=50)
        indexes = record_indexes(dataset)
        return indexes[:RECORDS], indexes[RECORDS:]

    first, second = epochs(7)
    assert epochs(7) == (first, second)
    assert sorted(first) == sorted(second) == list(range(RECORDS))
    assert first != second and first != sorted(first)


@pytest.mark.parametrize("shards, pipelines", [(3, 2), (3, 3), (2, 3)])
def test_input_pipelines_partition_the_records(tmp_path, shards, pipelines):
    write_shards(tmp_path, shards)
    shares = [
        record_indexes(language_model_dataset(
            str(tmp_path / "train-*"), 1, SEQUENCE_LENGTH, shuffle=True, seed=3,
            input_context=tf.distribute.InputContext(pipelines, pipeline, 1)))
        for pipeline in range(pipelines)
    ]
    assert sorted(index for share in shares for index in share) == list(range(RECORDS))
    assert all(shares)


def test_gzip_shards_are_read_like_plain_ones(tmp_path):
    for name in ("plain", "zipped"):
        (tmp_path / name).mkdir()
    write_shards(tmp_path / "plain")
    paths = write_shards(tmp_path / "zipped", compress=True)
    assert gzip.decompress(paths[0].read_bytes())  # Really gzip.
    read = {name: sorted(record_indexes(language_model_dataset(
        str(tmp_path / name / "train-*"), 2, SEQUENCE_LENGTH, drop_remainder=False)))
        for name in ("plain", "zipped")}
    assert read["plain"] == read["zipped"] == list(range(RECORDS))


@pytest.mark.parametrize("arguments, message", [
    ({"batch_size": 0}, "batch_size"),
    ({"sequence_length": 0}, "sequence_length"),
    ({"shuffle_buffer": 0}, "shuffle_buffer"),
])
def test_bad_arguments_are_refused(tmp_path, arguments, message):
    write_shards(tmp_path)
    settings = {"batch_size": 1, "sequence_length": SEQUENCE_LENGTH, **arguments}
    with pytest.raises(ValueError, match=message):
        language_model_dataset(str(tmp_path / "train-*"), **settings)
