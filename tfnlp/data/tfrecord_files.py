"""Locating and opening the TFRecord shards that the tf.data readers read.

What `pretraining_reader` and `translation_reader` share before they parse
a record:

- `normalize_compression`: the `compression` argument ("auto", "GZIP",
  "ZLIB", "" or None, any case) in the form that TensorFlow takes.
- `match_files`: the globs of a `file_pattern` argument and the sorted
  files they match, with errors that say which job writes the shards.
- `file_compression`, `file_compressions`: each file's compression, from
  its name (`.gz`, `.gzip`) or, with "auto", its first bytes (the gzip
  magic number); files written plain and gzipped can be read together.
- `first_record`: the first record of the first non-empty file, which the
  readers check before building a dataset.
- `record_reader`: a function from a file name (a string tensor, as
  `interleave` passes it) to that file's `tf.data.TFRecordDataset`, opened
  with its compression.
- `input_pipeline`, `sharded_records`: one `tf.distribute` input
  pipeline's share of the records (every N-th file, or every N-th record
  when there are fewer files than pipelines), the files read interleaved.
- `shuffle_and_repeat`: the serialized records read, shuffled (anew each
  epoch) and repeated as the readers' `shuffle`, `seed` and `repeat`
  arguments ask.
"""

import concurrent.futures

import tensorflow as tf

from tfnlp.data.file_patterns import match_patterns, split_patterns

_GZIP_MAGIC = b"\x1f\x8b\x08"  # gzip's magic number and "deflate" method
_COMPRESSIONS = {"": "", "none": "", "gzip": "GZIP", "zlib": "ZLIB"}
# Files whose first bytes are read at once when detecting compressions.
_DETECTION_THREADS = 16
# Files read at once by `sharded_records`' interleave.
MAX_PARALLEL_FILES = 16


def normalize_compression(compression):
    """The compression type TensorFlow takes, or "auto".

    Args:
        compression: "auto", "GZIP", "ZLIB", "" or "none" (any case), or
            None (no compression).

    Returns:
        "auto", "GZIP", "ZLIB" or "".

    Raises:
        TypeError: `compression` is neither a string nor None.
        ValueError: an unknown compression.

    Example:

    >>> normalize_compression("gzip"), normalize_compression(None)
    ('GZIP', '')
    """
    if compression is None:
        return ""
    if not isinstance(compression, str):
        raise TypeError(f"compression must be a string, got {compression!r}.")
    if compression.lower() == "auto":
        return "auto"
    if compression.lower() not in _COMPRESSIONS:
        raise ValueError(
            f"compression must be 'auto', 'GZIP', 'ZLIB' or '' (none), got "
            f"{compression!r}."
        )
    return _COMPRESSIONS[compression.lower()]


def match_files(file_pattern, argument, kind, example_glob, writer):
    """The globs of `file_pattern` and the files they match.

    Args:
        file_pattern: a path or glob (str or bytes; comma-separated globs
            too), or a list of them.
        argument: the reader's name for `file_pattern`, for the errors.
        kind: what the shards hold ("pretraining", "translation"), for the
            errors.
        example_glob: a glob that matches the shards, for the errors.
        writer: the module that writes the shards
            (`python -m <writer>`), for the errors.

    Returns:
        `(patterns, files)`: the globs as a list of str, and the sorted,
        de-duplicated paths they match (`tfnlp.data.file_patterns` with
        `tf.io.gfile.glob`).

    Raises:
        ValueError: no glob, or an empty one.
        FileNotFoundError: a glob matches no file.
    """
    given = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(file_pattern)
    patterns = split_patterns(given)
    if not patterns or len(patterns) < len(given):
        raise ValueError(
            f"{argument} must be a path or glob, or a list of them, of {kind} "
            f"TFRecord shards; got {file_pattern!r}."
        )
    expected = (f"{kind} TFRecord shards (for example {example_glob!r}); write them "
                f"first with `python -m {writer}`")
    return patterns, match_patterns(patterns, tf.io.gfile.glob, flag=argument,
                                    expected=expected)


def file_compression(path, compression):
    """The TFRecord compression type of one file ("", "GZIP" or "ZLIB").

    Args:
        path: the file (any `tf.io.gfile` path).
        compression: `normalize_compression`'s value; "auto" detects it:
            "GZIP" for names ending `.gz` or `.gzip`, otherwise "GZIP" when
            the file starts with the gzip magic number, else "".

    Returns:
        `compression`, or the detected type.
    """
    if compression != "auto":
        return compression
    if path.endswith((".gz", ".gzip")):
        return "GZIP"
    with tf.io.gfile.GFile(path, "rb") as file:
        return "GZIP" if file.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC else ""


def file_compressions(files, compression):
    """The compression type of each file (`file_compression`).

    Args:
        files: the paths.
        compression: `normalize_compression`'s value; with "auto" the files
            are inspected in parallel threads.

    Returns:
        A dict from each path to its compression type.
    """
    if compression == "auto" and len(files) > 1:
        with concurrent.futures.ThreadPoolExecutor(_DETECTION_THREADS) as pool:
            detected = list(pool.map(lambda path: file_compression(path, "auto"), files))
    else:
        detected = [file_compression(path, compression) for path in files]
    return dict(zip(files, detected))


def first_record(files, compressions):
    """The first record of the first non-empty file.

    Args:
        files: the paths, in the order to look.
        compressions: `file_compressions`'s dict.

    Returns:
        `(path, record)`: the file and the serialized record (bytes); None
        when every file is empty.
    """
    for path in files:
        records = tf.data.TFRecordDataset(path, compression_type=compressions[path])
        for record in records.take(1):
            return path, record.numpy()
    return None


def record_reader(files, compressions):
    """A function that opens a file as a `tf.data.TFRecordDataset`.

    The function takes a file name (a str, or a string tensor as
    `tf.data.Dataset.interleave` passes it) and opens the file with its
    compression: a constant when `files` share one, otherwise looked up in
    a table of `files`.

    Args:
        files: the paths the function is called with.
        compressions: a dict holding each path's compression type
            (`file_compressions`).

    Returns:
        The function.
    """
    types = [compressions[path] for path in files]
    if len(set(types)) == 1:
        compression_of = lambda filename: types[0]  # noqa: E731
    else:
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(files), tf.constant(types)),
            default_value="",
        )
        compression_of = table.lookup

    def read_file(filename):
        return tf.data.TFRecordDataset(filename, compression_type=compression_of(filename))

    return read_file


def input_pipeline(input_context):
    """`(num_input_pipelines, input_pipeline_id)` of a
    `tf.distribute.InputContext`; `(1, 0)` for None.

    Raises:
        ValueError: the context's id is not in `[0, num_input_pipelines)`.
    """
    if input_context is None:
        return 1, 0
    pipelines = int(input_context.num_input_pipelines)
    pipeline = int(input_context.input_pipeline_id)
    if pipelines < 1 or not 0 <= pipeline < pipelines:
        raise ValueError(
            f"input_context has input_pipeline_id={pipeline} and num_input_pipelines="
            f"{pipelines}; the id must be in [0, num_input_pipelines)."
        )
    return pipelines, pipeline


def sharded_records(files, compressions, input_context=None, shuffle=False, seed=None,
                    deterministic=None):
    """The serialized records of one input pipeline's share of `files`.

    With `input_context` each pipeline reads every `num_input_pipelines`-th
    file of the sorted list when there are at least as many files as
    pipelines, otherwise every `num_input_pipelines`-th record of all files
    read in a fixed order (the files are then not shuffled). The shares
    partition the records. The files are read `MAX_PARALLEL_FILES` at a
    time, one record from each in turn.

    Args:
        files: the sorted paths (`match_files`).
        compressions: `file_compressions`' dict.
        input_context: a `tf.distribute.InputContext`, or None (one
            pipeline).
        shuffle: shuffle the order of the files (anew each epoch).
        seed: the files' shuffle seed (None: random).
        deterministic: keep the parallel reads in order. None: in order
            when the order is asked to be reproducible (a `seed` is given,
            or `shuffle` is off); always when records are sharded across
            pipelines.

    Returns:
        `(records, deterministic)`: a `tf.data.Dataset` of serialized
        records, and whether the reads keep their order (for the caller's
        parallel maps).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "shard.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     for record in (b"a", b"b", b"c"):
    ...         writer.write(record)
    >>> records, _ = sharded_records([path], {path: ""})
    >>> [record.numpy() for record in records]
    [b'a', b'b', b'c']
    """
    pipelines, pipeline = input_pipeline(input_context)
    shard_records = pipelines > 1 and len(files) < pipelines
    if pipelines > 1 and not shard_records:
        files = files[pipeline::pipelines]
    if deterministic is None:
        deterministic = seed is not None or not shuffle
    deterministic = bool(deterministic or shard_records)
    records = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string))
    if shuffle and not shard_records:
        records = records.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    records = records.interleave(
        record_reader(files, compressions),
        cycle_length=min(len(files), MAX_PARALLEL_FILES),
        block_length=1,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
    if shard_records:
        records = records.shard(pipelines, pipeline)
    return records, deterministic


def shuffle_and_repeat(records, shuffle, shuffle_buffer, seed, repeat):
    """`records` shuffled and repeated as a reader's arguments ask.

    Args:
        records: a `tf.data.Dataset` (of serialized records).
        shuffle: shuffle through a buffer of `shuffle_buffer` elements, in
            a new order each epoch.
        shuffle_buffer: the shuffle buffer's size.
        seed: the shuffle's seed (None: random).
        repeat: True to repeat forever, an int to repeat that many times,
            False for one pass.

    Returns:
        The dataset.
    """
    if shuffle:
        records = records.shuffle(
            int(shuffle_buffer), seed=seed, reshuffle_each_iteration=True
        )
    if repeat is True:
        records = records.repeat()
    elif repeat:
        records = records.repeat(int(repeat))
    return records
