"""Writing records to a fixed number of TFRecord shards, byte-identical
whatever the runner, the number of workers or the order records arrive in.

`beam.io.WriteToTFRecord(num_shards=N)` gives each record a random shard,
so the same records land in other files from one run to the next. Here a
record's shard is a hash of its bytes, and each shard is written in the
order of its records' SHA-256 digests: an order as well mixed as a shuffle,
that depends on the records alone. Every one of the N files is written,
also when a shard has no record. Records reach their shard through the
runner's shuffle where it is on disk (Dataflow, Flink, Spark) and through
temporary spill files beside the output where it is in memory (the
in-process and Dask runners), so a worker holds one shard at most,
whatever the size of the corpus.

Why written here: Beam's file sinks decide sharding and order at run time
(they are built for throughput, not reproducibility) and do not take a
sort order; the TFRecord framing is a few lines (`tfrecord_frame`).
"""

import hashlib
import os
import struct
import uuid

import apache_beam as beam
import google_crc32c
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms import window

# Runners whose shuffle holds all its input in memory (the names of their
# classes and bases): records reach their shard through spill files there.
IN_MEMORY_SHUFFLE_RUNNERS = frozenset(
    ("SwitchingDirectRunner", "BundleBasedDirectRunner", "FnApiRunner", "DaskRunner"))
# A bundle writes its spill files once it holds this many record bytes.
SPILL_BYTES = 64 * 2**20
_SPILL_HEADER = struct.Struct("<32sQ")  # digest, record length


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


class _SpillByShard(beam.DoFn):
    """Appends each record, with its digest, to its shard's spill file of
    this bundle; emits `(shard, path)` for each file written."""

    def __init__(self, num_shards, spill_directory):
        self.num_shards = num_shards
        self.spill_directory = spill_directory

    def start_bundle(self):
        self._buffers = {}
        self._buffered = 0
        self._written = []

    def process(self, record):
        shard, (digest, record) = _shard_and_digest(record, self.num_shards)
        self._buffers.setdefault(shard, []).append(
            _SPILL_HEADER.pack(digest, len(record)) + record)
        self._buffered += len(record)
        if self._buffered >= SPILL_BYTES:
            self._flush()

    def _flush(self):
        for shard, frames in sorted(self._buffers.items()):
            path = FileSystems.join(self.spill_directory,
                                    f"shard-{shard:05d}-{uuid.uuid4().hex}.bin")
            with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as file:
                file.write(b"".join(frames))
            self._written.append((shard, path))
        self._buffers, self._buffered = {}, 0

    def finish_bundle(self):
        self._flush()
        for pair in self._written:
            yield window.GlobalWindows.windowed_value(pair)


def _read_spill_file(path):
    """The `(digest, record)` pairs of one spill file."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as file:
        data = file.read()
    pairs, offset = [], 0
    while offset < len(data):
        digest, length = _SPILL_HEADER.unpack_from(data, offset)
        offset += _SPILL_HEADER.size
        pairs.append((digest, data[offset:offset + length]))
        offset += length
    return pairs


def shuffles_in_memory(pipeline):
    """Whether `pipeline`'s runner holds a shuffle's input in memory."""
    return any(cls.__name__ in IN_MEMORY_SHUFFLE_RUNNERS for cls in type(pipeline.runner).__mro__)


def _write_shard(index_and_values, prefix, num_shards, suffix, gzip):
    """Writes one shard's records in digest order. The values are
    `(digest, record)` pairs, or the paths of spill files, which are read
    and then deleted; the `None` placeholder that makes every shard index
    appear is skipped."""
    index, values = index_and_values
    values = [value for value in values if value is not None]
    paths = sorted(value for value in values if isinstance(value, str))
    pairs = sorted([*(value for value in values if not isinstance(value, str)),
                    *(pair for path in paths for pair in _read_spill_file(path))])
    path = shard_file_name(prefix, index, num_shards, suffix)
    compression = CompressionTypes.GZIP if gzip else CompressionTypes.UNCOMPRESSED
    with FileSystems.create(path, compression_type=compression) as file:
        for _, record in pairs:
            file.write(tfrecord_frame(record))
    if paths:
        FileSystems.delete(paths)
    return path


def _remove_directory(_, directory):
    if FileSystems.exists(directory):
        FileSystems.delete([directory])


class WriteShardedTFRecords(beam.PTransform):
    """Writes serialized records (bytes) to `num_shards` TFRecord files.

    The files are `PREFIX-SSSSS-of-NNNNN.tfrecord` (`.tfrecord.gz` with
    `gzip`). On the in-process and Dask runners records go to their shard
    through spill files in `PREFIX`'s folder (`tmp-NAME-spill`, removed at
    the end), elsewhere through the runner's shuffle; a shard is sorted on
    one worker, so it must fit in that worker's memory: choose
    `num_shards` so that a shard holds at most a few hundred MB.

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
        spill_directory = None
        if shuffles_in_memory(records.pipeline):
            directory, name = os.path.split(self.prefix)
            spill_directory = FileSystems.join(directory or ".", f"tmp-{name}-spill")
            keyed = records | "SpillByShard" >> beam.ParDo(
                _SpillByShard(num_shards, spill_directory))
        else:
            keyed = records | "KeyByShard" >> beam.Map(_shard_and_digest, num_shards)
        # Every shard index, so that a shard without records is still written.
        indices = (records.pipeline | "ShardIndices" >> beam.Create(range(num_shards))
                   | "NoRecords" >> beam.Map(lambda index: (index, None)))
        written = (
            (keyed, indices)
            | "AllShards" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(
                _write_shard, self.prefix, num_shards,
                ".tfrecord.gz" if self.gzip else ".tfrecord", self.gzip)
        )
        if spill_directory:
            _ = (written | "CountShards" >> beam.combiners.Count.Globally()
                 | "RemoveSpillDirectory" >> beam.Map(_remove_directory, spill_directory))
        return written
