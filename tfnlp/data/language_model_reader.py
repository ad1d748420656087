"""Reads causal language-model TFRecords into a batched `tf.data.Dataset`.

The records follow `tfnlp.data.language_model_schema` (the windows that
`pipelines.lm_data` writes). `language_model_dataset` lists the shards,
reads them in parallel (interleaved, plain or gzip), shuffles, batches,
parses whole batches at once and yields

    token_ids        int32  [batch, sequence_length + 1]
    character_count  int32  [batch]

The model reads `token_ids[:, :-1]` and predicts `token_ids[:, 1:]`; the sum
of `character_count` over the records is the number of characters of text
that the predicted ids stand for, so `sum(loss in nats) / ln 2 / sum(
character_count)` is the bits per character.
"""

import tensorflow as tf

from tfnlp.data import language_model_schema, tfrecord_files


def _check_first_record(first, sequence_length):
    if first is None:
        return
    path, record = first
    try:
        written = language_model_schema.record_sequence_length(record)
    except ValueError as error:
        raise ValueError(f"{path} does not hold language-model records: {error}") from None
    if written != sequence_length:
        raise ValueError(
            f"The records in {path} hold {written + 1} ids (sequence_length={written}), "
            f"but sequence_length={sequence_length} was asked for. Pass "
            f"sequence_length={written} (the data's stats.json records it), or write the "
            f"data again with python -m pipelines.lm_data --sequence_length={sequence_length}."
        )


def language_model_dataset(
    file_pattern,
    batch_size,
    sequence_length,
    shuffle=True,
    shuffle_buffer=10000,
    seed=None,
    repeat=False,
    drop_remainder=True,
    input_context=None,
    compression="auto",
    deterministic=None,
):
    """A batched `tf.data.Dataset` of causal language-model windows.

    The first record is read up front to check that it holds
    `sequence_length + 1` ids, so a mismatch is a clear error here rather
    than a parse error in the middle of training.

    Input pipelines (`tf.distribute`): with `input_context` each pipeline
    reads its share: every `num_input_pipelines`-th file of the sorted list
    when there are at least as many files as pipelines, otherwise every
    `num_input_pipelines`-th record of all files read in a fixed order (the
    files are then not shuffled; the records are). The shares partition the
    data. `batch_size` is the batch this dataset yields: with
    `strategy.distribute_datasets_from_function`, pass
    `input_context.get_per_replica_batch_size(global_batch_size)`.

    Args:
        file_pattern: a glob, or a list of globs (comma-separated globs
            too), of the shards (`DIR/train-*.tfrecord`).
        batch_size: records per batch.
        sequence_length: the records' sequence length (each holds
            `sequence_length + 1` ids).
        shuffle: shuffle the files and the records (anew each epoch).
        shuffle_buffer: records in the shuffle buffer.
        seed: seeds the shuffles; the same seed gives the same batches
            (each epoch still differing from the last). None: random (or
            from `tf.random.set_seed`).
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
            given, or `shuffle` is off) and when records are sharded
            across pipelines.

    Returns:
        A `tf.data.Dataset` of `{"token_ids": int32 [batch, sequence_length
        + 1], "character_count": int32 [batch]}`.

    Raises:
        FileNotFoundError: no file matches `file_pattern`.
        ValueError: bad arguments, or records of another sequence length or
            schema.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train-00000-of-00001.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     for ids in ([5, 6, 7, 8], [8, 9, 2, 5]):
    ...         writer.write(language_model_schema.serialize_record(ids, 3))
    >>> dataset = language_model_dataset(path, batch_size=2, sequence_length=3,
    ...                                  shuffle=False)
    >>> batch = next(iter(dataset))
    >>> batch["token_ids"].numpy().tolist()
    [[5, 6, 7, 8], [8, 9, 2, 5]]
    >>> batch["character_count"].numpy().tolist()
    [3, 3]

    References:
        - [Radford et al., 2019. Language Models are Unsupervised Multitask
          Learners](https://openai.com/research/better-language-models) (GPT-2)
        - [nanoGPT](https://github.com/karpathy/nanoGPT) (`get_batch`: x and y
          windows of one stream)
    """
    sequence_length = language_model_schema._check_sequence_length(sequence_length)
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if shuffle and int(shuffle_buffer) < 1:
        raise ValueError(f"shuffle_buffer must be at least 1, got {shuffle_buffer}.")
    tfrecord_files.input_pipeline(input_context)  # A bad context fails before any read.
    compression = tfrecord_files.normalize_compression(compression)
    _, files = tfrecord_files.match_files(
        file_pattern, "file_pattern", "language-model", "DIR/train-*.tfrecord*",
        "pipelines.lm_data",
    )
    compressions = tfrecord_files.file_compressions(files, compression)
    _check_first_record(tfrecord_files.first_record(files, compressions), sequence_length)

    records, deterministic = tfrecord_files.sharded_records(
        files, compressions, input_context, shuffle, seed, deterministic)
    dataset = tfrecord_files.shuffle_and_repeat(records, shuffle, shuffle_buffer, seed, repeat)
    dataset = dataset.batch(int(batch_size), drop_remainder=bool(drop_remainder))
    dataset = dataset.map(
        lambda serialized: language_model_schema.parse_examples(serialized, sequence_length),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)
