"""Writing records to a fixed number of TFRecord shards, byte-identical
whatever the runner, the number of workers or the order records arrive in.

`beam.io.WriteToTFRecord(num_shards=N)` gives each record a random shard,
so the same records land in other files from one run to the next. Here a
record's shard is a hash of its bytes, and each shard is written in the
order of its records' SHA-256 digests: an order as well mixed as a shuffle,
that depends on the records alone. Every one of the N files is written,
also when a shard has no record.

Why written here: Beam's file sinks decide sharding and order at run time
(they are built for throughput, not reproducibility) and do not take a
sort order; the TFRecord framing is a few lines (`tfrecord_frame`).
"""

import hashlib
import struct

import apache_beam as beam
import google_crc32c
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def _masked_crc32c(data):
    """TFRecord's masked CRC-32C of `data`."""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(record):
    """The bytes of one record in a TFRecord file: its length (uint64,
    little-endian), the masked CRC-32C of the length, the record and its
    masked CRC-32C (TensorFlow's `tf.io.TFRecordWriter` format)."""
    length = struct.pack("<Q", len(record))
    return (length + struct.pack("<I", _masked_crc32c(length)) + record
            + struct.pack("<I", _masked_crc32c(record)))


def shard_file_name(prefix, index, num_shards, suffix):
    """`PREFIX-SSSSS-of-NNNNN.SUFFIX`, as Beam's sinks name shards."""
    return f"{prefix}-{index:05d}-of-{num_shards:05d}{suffix}"


def _shard_and_digest(record, num_shards):
    """`(shard, (digest, record))`: both come from the record's SHA-256."""
    digest = hashlib.sha256(record).digest()
    return int.from_bytes(digest[:8], "big") % num_shards, (digest, record)


def _write_shard(index_and_values, prefix, num_shards, suffix, gzip):
    """Writes one shard's records in digest order; the `None` placeholder
    that makes every shard index appear is skipped."""
    index, values = index_and_values
    path = shard_file_name(prefix, index, num_shards, suffix)
    compression = CompressionTypes.GZIP if gzip else CompressionTypes.UNCOMPRESSED
    with FileSystems.create(path, compression_type=compression) as file:
        for _, record in sorted(value for value in values if value is not None):
            file.write(tfrecord_frame(record))
    return path


class WriteShardedTFRecords(beam.PTransform):
    """Writes serialized records (bytes) to `num_shards` TFRecord files.

    The files are `PREFIX-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with
    `gzip`). A shard is sorted on one worker, so it must fit in that
    worker's memory: choose `num_shards` so that a shard holds at most a
    few hundred MB.

    Args:
        prefix: the path and name the shard files start with.
        num_shards: how many files, at least 1.
        gzip: write gzip-compressed files.

    Returns:
        A PCollection of the paths written, one per shard.

    Example:

    >>> import os, tempfile, apache_beam as beam
    >>> prefix = os.path.join(tempfile.mkdtemp(), "records")
    >>> with beam.Pipeline() as pipeline:
    ...     _ = (pipeline | beam.Create([b"a", b"b", b"c"])
    ...          | WriteShardedTFRecords(prefix, num_shards=2))
    >>> sorted(os.path.basename(path) for path in os.listdir(os.path.dirname(prefix)))
    ['records-00000-of-00002.tfrecord', 'records-00001-of-00002.tfrecord']

    References:
        - [TFRecord format](https://www.tensorflow.org/tutorials/load_data/tfrecord)
    """

    def __init__(self, prefix, num_shards, gzip=False):
        super().__init__()
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}.")
        self.prefix = prefix
        self.num_shards = num_shards
        self.gzip = gzip

    def expand(self, records):
        num_shards = self.num_shards
        keyed = records | "KeyByShard" >> beam.Map(_shard_and_digest, num_shards)
        # Every shard index, so that a shard without records is still written.
        indices = (records.pipeline | "ShardIndices" >> beam.Create(range(num_shards))
                   | "NoRecords" >> beam.Map(lambda index: (index, None)))
        return (
            (keyed, indices)
            | "AllShards" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(
                _write_shard, self.prefix, num_shards,
                ".tfrecord.gz" if self.gzip else ".tfrecord", self.gzip)
        )
