"""Tests of `tfnlp.data.distillation_dataset`: what a batch holds, every
record read once, the origin filter, the class-count check, seeds and
input pipelines."""

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import distillation_dataset, distillation_num_classes, language_model_schema
from tfnlp.data import distillation_schema as schema

RECORDS = 23  # A prime: batches of 4 leave 3, shares of 2 or 3 pipelines differ.


def record(index):
    """Record `index`: its text names it; every third is labelled."""
    origin = "labelled" if index % 3 == 0 else "augmented"
    label = index % 2 if origin == "labelled" else schema.NO_LABEL
    return schema.serialize_record(f"text {index}", [float(index), -float(index), 0.5],
                                   label=label, origin=origin)


def write_shards(folder, shards=3):
    for shard in range(shards):
        path = folder / f"train-{shard:05d}-of-{shards:05d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for index in range(shard, RECORDS, shards):
                writer.write(record(index))
    return str(folder / "train-*")


def indexes(dataset):
    found = []
    for batch in dataset:
        for text, logits in zip(batch["text"].numpy(), batch["teacher_logits"].numpy()):
            index = int(text.decode().split()[1])
            np.testing.assert_array_equal(logits, [index, -index, 0.5])
            found.append(index)
    return found


def test_batches_hold_texts_logits_labels_and_origins(tmp_path):
    dataset = distillation_dataset(write_shards(tmp_path), batch_size=4)
    assert dataset.element_spec == {
        "text": tf.TensorSpec([4], tf.string),
        "teacher_logits": tf.TensorSpec([4, 3], tf.float32),
        "label": tf.TensorSpec([4], tf.int32),
        "origin": tf.TensorSpec([4], tf.string),
    }
    batch = next(iter(dataset))
    for text, label, origin in zip(*(batch[name].numpy() for name in ("text", "label",
                                                                      "origin"))):
        index = int(text.decode().split()[1])
        assert origin.decode() == ("labelled" if index % 3 == 0 else "augmented")
        assert label == (index % 2 if index % 3 == 0 else -1)


def test_no_batch_size_gives_single_records(tmp_path):
    dataset = distillation_dataset(write_shards(tmp_path), batch_size=None, shuffle=False)
    assert dataset.element_spec["text"] == tf.TensorSpec([], tf.string)
    assert dataset.element_spec["teacher_logits"] == tf.TensorSpec([3], tf.float32)
    assert sorted(int(record["text"].numpy().decode().split()[1])
                  for record in dataset) == list(range(RECORDS))


def test_one_pass_reads_every_record_once(tmp_path):
    dataset = distillation_dataset(write_shards(tmp_path), 4, shuffle=False,
                                   drop_remainder=False)
    assert sorted(indexes(dataset)) == list(range(RECORDS))


def test_origins_keeps_only_those_records(tmp_path):
    dataset = distillation_dataset(write_shards(tmp_path), 2, origins="labelled",
                                   shuffle=False, drop_remainder=False)
    assert sorted(indexes(dataset)) == list(range(0, RECORDS, 3))
    with pytest.raises(ValueError, match="origins must name"):
        distillation_dataset(str(tmp_path / "train-*"), 2, origins=["dev"])


def test_the_same_seed_gives_the_same_batches(tmp_path):
    pattern = write_shards(tmp_path)

    def first_pass(seed):
        return indexes(distillation_dataset(pattern, 4, seed=seed, repeat=2).take(10))

    assert first_pass(3) == first_pass(3)
    assert first_pass(3) != first_pass(4)


@pytest.mark.parametrize("shards, pipelines", [(3, 3), (1, 2)])
def test_input_pipelines_partition_the_records(tmp_path, shards, pipelines):
    pattern = write_shards(tmp_path, shards)
    shares = [indexes(distillation_dataset(
        pattern, 1, shuffle=False, drop_remainder=False,
        input_context=tf.distribute.InputContext(pipelines, pipeline, pipelines)))
        for pipeline in range(pipelines)]
    assert sorted(index for share in shares for index in share) == list(range(RECORDS))


def test_the_class_count_is_read_and_checked(tmp_path):
    pattern = write_shards(tmp_path)
    assert distillation_num_classes(pattern) == 3
    with pytest.raises(ValueError, match="hold 3 teacher logits, but num_classes=2"):
        distillation_dataset(pattern, 4, num_classes=2)


def test_shards_of_another_schema_are_named(tmp_path):
    path = tmp_path / "train-00000-of-00001.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(language_model_schema.serialize_record([1, 2, 3], 3))
    with pytest.raises(ValueError, match="does not hold distillation records"):
        distillation_dataset(str(path), 4)
