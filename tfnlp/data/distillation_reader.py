"""Reads distillation TFRecords (texts and their teacher's logits) into a
batched `tf.data.Dataset`.

The records follow `tfnlp.data.distillation_schema` (the transfer set that
`pipelines.distillation_data` writes). `distillation_dataset` lists the
shards, reads them in parallel (interleaved, plain or gzip), parses each
record, keeps those of the asked origins, shuffles, batches and yields

    text            string   [batch]
    teacher_logits  float32  [batch, num_classes]
    label           int32    [batch]   the gold class id, or -1 (none)
    origin          string   [batch]   "labelled", "augmented" or "unlabelled"

The texts are raw: the student tokenizes them with a vocabulary of its
own (in a `map` after this dataset, or inside its model).
"""

import tensorflow as tf

from tfnlp.data import distillation_schema, tfrecord_files

KIND = "distillation"
WRITER = "pipelines.distillation_data"


def _check_origins(origins):
    if origins is None:
        return None
    origins = (origins,) if isinstance(origins, str) else tuple(origins)
    unknown = [origin for origin in origins if origin not in distillation_schema.ORIGINS]
    if not origins or unknown:
        raise ValueError(
            f"origins must name some of {', '.join(distillation_schema.ORIGINS)} (or be "
            f"None for every record); got {origins!r}."
        )
    return origins


def _record_num_classes(first):
    """The classes of the first record; ValueError naming a file of another
    schema."""
    path, record = first
    try:
        return distillation_schema.record_num_classes(record)
    except ValueError as error:
        raise ValueError(f"{path} does not hold distillation records: {error}") from None


def distillation_num_classes(file_pattern, compression="auto"):
    """The number of classes (teacher logits per record) of distillation
    shards, read from their first record.

    Raises:
        FileNotFoundError: no file matches `file_pattern`.
        ValueError: every file is empty, or the first record is not a
            distillation record.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train-00000-of-00001.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     writer.write(distillation_schema.serialize_record("fine", [0.5, 1.0, -2.0]))
    >>> distillation_num_classes(path)
    3
    """
    files, compressions = _match_files(file_pattern, compression)
    first = tfrecord_files.first_record(files, compressions)
    if first is None:
        raise ValueError(
            f"The distillation shards {files[:3]} hold no record: the data job wrote "
            f"nothing. Check the output of `python -m {WRITER}`."
        )
    return _record_num_classes(first)


def _match_files(file_pattern, compression):
    compression = tfrecord_files.normalize_compression(compression)
    _, files = tfrecord_files.match_files(
        file_pattern, "file_pattern", KIND, "DIR/train-*.tfrecord*", WRITER)
    return files, tfrecord_files.file_compressions(files, compression)


def distillation_dataset(
    file_pattern,
    batch_size,
    num_classes=None,
    origins=None,
    shuffle=True,
    shuffle_buffer=10000,
    seed=None,
    repeat=False,
    drop_remainder=True,
    input_context=None,
    compression="auto",
    deterministic=None,
):
    """A batched `tf.data.Dataset` of distillation records.

    The first record is read up front: it gives the number of classes (or
    checks `num_classes`), so a file of another schema or another task is a
    clear error here rather than a parse error in the middle of training.

    Input pipelines (`tf.distribute`): with `input_context` each pipeline
    reads its share, every `num_input_pipelines`-th file (or record, with
    fewer files than pipelines; `tfnlp.data.tfrecord_files.sharded_records`).
    `batch_size` is the batch this dataset yields: with
    `strategy.distribute_datasets_from_function`, pass
    `input_context.get_per_replica_batch_size(global_batch_size)`. With
    `batch_size=None` it yields single records, for a caller that batches
    them itself (by length, for example: `trainer.length_buckets`).

    Args:
        file_pattern: a glob, or a list of globs (comma-separated globs
            too), of the shards (`DIR/train-*.tfrecord`).
        batch_size: records per batch; None: single records, unbatched.
        num_classes: the teacher's number of classes; None: that of the
            first record.
        origins: keep only the records of these origins (a name or a list
            of "labelled", "augmented", "unlabelled"); None: every record.
            A student trained on the gold labels alone reads
            `origins="labelled"`.
        shuffle: shuffle the files and the records (anew each epoch).
        shuffle_buffer: records in the shuffle buffer.
        seed: seeds the shuffles; the same seed gives the same batches.
            None: random (or from `tf.random.set_seed`).
        repeat: True to repeat forever, an int to repeat that many times,
            False for one pass.
        drop_remainder: drop the last, smaller batch (fixed shapes, as XLA
            and TPUs want).
        input_context: a `tf.distribute.InputContext`, or None (one
            pipeline).
        compression: "auto" (gzip for names ending .gz, otherwise detected
            from each file's first bytes), "GZIP", "ZLIB" or "" (none).
        deterministic: keep the parallel reads and maps in order. None: in
            order when the order is asked to be reproducible (a `seed` is
            given, or `shuffle` is off) and when records are sharded across
            pipelines.

    Returns:
        A `tf.data.Dataset` of `{"text": string [batch], "teacher_logits":
        float32 [batch, num_classes], "label": int32 [batch], "origin":
        string [batch]}` (without the `[batch]` dimension when
        `batch_size` is None).

    Raises:
        FileNotFoundError: no file matches `file_pattern`.
        ValueError: bad arguments, records of another schema, or of another
            number of classes than `num_classes`.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train-00000-of-00001.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     writer.write(distillation_schema.serialize_record("a fine film", [-1.0, 2.0], 1))
    ...     writer.write(distillation_schema.serialize_record(
    ...         "a [MASK] film", [0.5, 0.25], origin="augmented"))
    >>> dataset = distillation_dataset(path, batch_size=2, shuffle=False)
    >>> batch = next(iter(dataset))
    >>> batch["text"].numpy().tolist(), batch["label"].numpy().tolist()
    ([b'a fine film', b'a [MASK] film'], [1, -1])
    >>> labelled = distillation_dataset(path, batch_size=1, origins="labelled",
    ...                                 shuffle=False)
    >>> [batch["origin"].numpy().tolist() for batch in labelled]
    [[b'labelled']]

    References:
        - [Hinton et al., 2015. Distilling the Knowledge in a Neural
          Network](https://arxiv.org/abs/1503.02531) (the transfer set)
        - [Tang et al., 2019. Distilling Task-Specific Knowledge from BERT
          into Simple Neural Networks](https://arxiv.org/abs/1903.12136)
    """
    if batch_size is not None and int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if shuffle and int(shuffle_buffer) < 1:
        raise ValueError(f"shuffle_buffer must be at least 1, got {shuffle_buffer}.")
    origins = _check_origins(origins)
    tfrecord_files.input_pipeline(input_context)  # A bad context fails before any read.
    files, compressions = _match_files(file_pattern, compression)
    first = tfrecord_files.first_record(files, compressions)
    if first is not None:
        written = _record_num_classes(first)
        if num_classes is not None and written != int(num_classes):
            raise ValueError(
                f"The records in {first[0]} hold {written} teacher logits, but "
                f"num_classes={num_classes} was asked for. Pass num_classes={written}, or "
                "give the shards of the teacher of this task."
            )
        num_classes = written
    elif num_classes is None:
        num_classes = 2  # Empty files: nothing is parsed, any spec will do.
    spec = distillation_schema.feature_spec(num_classes)

    def parse(serialized):
        features = tf.io.parse_single_example(serialized, spec)
        features[distillation_schema.LABEL] = tf.cast(
            features[distillation_schema.LABEL], tf.int32)
        return features

    records, deterministic = tfrecord_files.sharded_records(
        files, compressions, input_context, shuffle, seed, deterministic)
    dataset = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=deterministic)
    if origins is not None:
        kept = tf.constant(origins)
        dataset = dataset.filter(lambda features: tf.reduce_any(
            tf.equal(features[distillation_schema.ORIGIN], kept)))
    dataset = tfrecord_files.shuffle_and_repeat(dataset, shuffle, shuffle_buffer, seed, repeat)
    if batch_size is not None:
        dataset = dataset.batch(int(batch_size), drop_remainder=bool(drop_remainder))
    return dataset.prefetch(tf.data.AUTOTUNE)
