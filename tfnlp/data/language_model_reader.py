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
character_count)` is the bits per character. With a `window_length` shorter
than the records', the records are cut into windows of that length
(`random_windows` in training, `consecutive_windows` for evaluation).
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
    window_length=None,
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
        window_length: yield windows of `window_length + 1` ids cut from
            the records (a divisor of `sequence_length`; None: the
            records whole). With `shuffle`, one window at a random offset
            of each record, drawn anew each epoch (`random_windows`);
            without, each record's consecutive windows, so one pass reads
            every predicted id once (`consecutive_windows`); a batch then
            holds `batch_size * sequence_length / window_length` windows.

    Returns:
        A `tf.data.Dataset` of `{"token_ids": int32 [batch, sequence_length
        + 1], "character_count": int32 [batch]}` (`window_length + 1` ids
        with a `window_length`).

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
    _check_window_length(window_length, sequence_length)
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
    if window_length is not None and window_length != sequence_length:
        if shuffle:
            dataset = tf.data.Dataset.zip(dataset, tf.data.Dataset.random(seed=seed)).map(
                lambda batch, draw: random_windows(batch, window_length, tf.stack([draw, 0])))
        else:
            dataset = dataset.map(lambda batch: consecutive_windows(batch, window_length))
    return dataset.prefetch(tf.data.AUTOTUNE)


def _check_window_length(window_length, sequence_length):
    if window_length is None:
        return
    if not 1 <= int(window_length) <= sequence_length or sequence_length % int(window_length):
        raise ValueError(
            f"window_length={window_length} must divide the records' sequence_length="
            f"{sequence_length} (so that evaluation reads each record as whole windows): "
            f"pass a divisor of it, such as {sequence_length // 2 or 1}, or write the data "
            f"again with python -m pipelines.lm_data --sequence_length=LENGTH.")


def random_windows(batch, window_length, seed):
    """One window of `window_length + 1` ids of each record, at an offset
    drawn uniformly from the record's `sequence_length - window_length + 1`.

    Training on windows cut afresh each epoch shows each id in other
    contexts and at other positions from one epoch to the next, which
    records cut once for all do not (nanoGPT samples its blocks at random
    offsets; AWD-LSTM varies where its sequences split for the same
    reason). A window's `character_count` is its record's in proportion to
    the ids it predicts, rounded: an estimate where ids stand for differing
    numbers of characters.

    Args:
        batch: a parsed batch, `{"token_ids": [batch, sequence_length + 1],
            "character_count": [batch]}`.
        window_length: the ids each window predicts.
        seed: a stateless seed, int `[2]`: the same seed cuts the same
            windows.

    Returns:
        The batch of windows, `token_ids` `[batch, window_length + 1]`.

    Example:

    >>> batch = {"token_ids": tf.constant([[0, 1, 2, 3, 4]]),
    ...          "character_count": tf.constant([4])}
    >>> windows = random_windows(batch, 2, seed=tf.constant([1, 2]))
    >>> ids = windows["token_ids"].numpy()[0].tolist()
    >>> ids in ([0, 1, 2], [1, 2, 3], [2, 3, 4]), int(windows["character_count"][0])
    (True, 2)

    References:
        - [nanoGPT](https://github.com/karpathy/nanoGPT) (`get_batch`)
        - [Merity et al., 2018. Regularizing and Optimizing LSTM Language
          Models](https://arxiv.org/abs/1708.02182) (variable-length
          backpropagation through time)
    """
    token_ids = batch["token_ids"]
    sequence_length = tf.shape(token_ids)[1] - 1
    offsets = tf.random.stateless_uniform(
        [tf.shape(token_ids)[0]], seed, maxval=sequence_length - window_length + 1,
        dtype=tf.int32)
    positions = offsets[:, None] + tf.range(window_length + 1)[None, :]
    share = window_length / tf.cast(sequence_length, tf.float64)
    characters = tf.round(tf.cast(batch["character_count"], tf.float64) * share)
    return {"token_ids": tf.gather(token_ids, positions, batch_dims=1),
            "character_count": tf.cast(characters, batch["character_count"].dtype)}


def consecutive_windows(batch, window_length):
    """Each record's `sequence_length / window_length` consecutive windows
    of `window_length + 1` ids, overlapping by one id as the records do: the
    windows the data job writes with `--sequence_length=window_length`.

    A record's `character_count` goes to its first window (0 to the
    others), so the batch's sum, which the bits per character divide by,
    stays exact.

    Args:
        batch: a parsed batch, `{"token_ids": [batch, sequence_length + 1],
            "character_count": [batch]}`.
        window_length: the ids each window predicts (a divisor of
            `sequence_length`).

    Returns:
        The windows, `token_ids` `[batch * sequence_length / window_length,
        window_length + 1]`, a record's in order.

    Example:

    >>> batch = {"token_ids": tf.constant([[0, 1, 2, 3, 4]]),
    ...          "character_count": tf.constant([4])}
    >>> windows = consecutive_windows(batch, 2)
    >>> windows["token_ids"].numpy().tolist(), windows["character_count"].numpy().tolist()
    ([[0, 1, 2], [2, 3, 4]], [4, 0])
    """
    token_ids = batch["token_ids"]
    pieces = (tf.shape(token_ids)[1] - 1) // window_length
    starts = tf.range(pieces) * window_length
    positions = starts[:, None] + tf.range(window_length + 1)[None, :]
    windows = tf.reshape(tf.gather(token_ids, positions, axis=1), [-1, window_length + 1])
    counts = batch["character_count"]
    first = tf.one_hot(0, pieces, dtype=counts.dtype)
    return {"token_ids": windows,
            "character_count": tf.reshape(counts[:, None] * first[None, :], [-1])}
