"""WriteShardedTFRecords: TensorFlow's TFRecord bytes, every shard, and the
same bytes whatever the order records arrive in."""

import collections

import apache_beam as beam
import tensorflow as tf

from pipelines.beam_options import pipeline_options
from pipelines import sharded_tfrecords
from pipelines.sharded_tfrecords import WriteShardedTFRecords, tfrecord_frame

read_spill_file = sharded_tfrecords._read_spill_file

RECORDS = [f"record {index}".encode() * (index % 5 + 1) for index in range(60)] + [b"", b"a"]


def test_frames_are_tensorflows_tfrecord_bytes(tmp_path):
    path = str(tmp_path / "tensorflow.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in RECORDS[:5] + [b""]:
            writer.write(record)
    with open(path, "rb") as file:
        assert file.read() == b"".join(tfrecord_frame(record) for record in RECORDS[:5] + [b""])


def write(records, prefix, num_shards, gzip=False, workers=1):
    options = pipeline_options([f"--direct_num_workers={workers}",
                                "--direct_running_mode=multi_threading"])
    with beam.Pipeline(options=options) as pipeline:
        _ = pipeline | beam.Create(records) | WriteShardedTFRecords(prefix, num_shards, gzip)


def file_bytes(directory):
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_same_bytes_whatever_the_order_and_the_workers(tmp_path):
    (tmp_path / "forward").mkdir()
    (tmp_path / "backward").mkdir()
    write(RECORDS, str(tmp_path / "forward" / "records"), 3)
    write(RECORDS[::-1], str(tmp_path / "backward" / "records"), 3, workers=2)
    forward = file_bytes(tmp_path / "forward")
    assert sorted(forward) == [f"records-0000{index}-of-00003.tfrecord" for index in range(3)]
    assert forward == file_bytes(tmp_path / "backward")
    read = [record.numpy() for name in forward
            for record in tf.data.TFRecordDataset(str(tmp_path / "forward" / name))]
    assert collections.Counter(read) == collections.Counter(RECORDS)


def test_every_shard_is_written_even_empty_and_gzip_reads_back(tmp_path):
    write([b"only"], str(tmp_path / "records"), 4, gzip=True)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [f"records-0000{index}-of-00004.tfrecord.gz" for index in range(4)]
    read = [record.numpy() for name in names
            for record in tf.data.TFRecordDataset(str(tmp_path / name), compression_type="GZIP")]
    assert read == [b"only"]


def test_spill_files_and_the_runners_shuffle_give_the_same_bytes(tmp_path, monkeypatch):
    """The in-process runner spills; runners with a shuffle on disk group the
    records themselves."""
    for name in ("spilled", "shuffled"):
        (tmp_path / name).mkdir()
    spill_files = []
    monkeypatch.setattr(sharded_tfrecords, "SPILL_BYTES", 40)
    monkeypatch.setattr(sharded_tfrecords, "_read_spill_file", lambda path: (
        spill_files.append(path) or read_spill_file(path)))
    write(RECORDS, str(tmp_path / "spilled" / "records"), 3)
    spilled = len(spill_files)
    assert spilled > 20
    monkeypatch.setattr(sharded_tfrecords, "shuffles_in_memory", lambda pipeline: False)
    write(RECORDS, str(tmp_path / "shuffled" / "records"), 3)
    assert len(spill_files) == spilled
    # No spill folder is left beside the shards.
    assert file_bytes(tmp_path / "spilled") == file_bytes(tmp_path / "shuffled")
    assert sorted(file_bytes(tmp_path / "spilled")) == [
        f"records-0000{index}-of-00003.tfrecord" for index in range(3)]


def test_the_in_process_and_dask_runners_spill():
    assert sharded_tfrecords.shuffles_in_memory(beam.Pipeline())
    assert sharded_tfrecords.shuffles_in_memory(
        beam.Pipeline(options=pipeline_options(["--runner=dask"])))
    assert not sharded_tfrecords.shuffles_in_memory(beam.Pipeline(options=pipeline_options(
        ["--runner=PortableRunner", "--job_endpoint=localhost:1"])))
