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
