"""Reads translation-pair TFRecords into token-budget batches, bucketed by length.

The records follow `tfnlp.data.translation_schema` (int64 `inputs` and
`targets`, each ending with `EOS_ID`). `translation_dataset` reads them into
zero-padded int32 batches `{"inputs", "targets"}` whose padded size stays
within a token budget; `bucket_lengths` and `bucket_batch_sizes` give the
buckets, `count_long_pairs` counts the pairs too long for them.
"""

import tensorflow as tf

from tfnlp.data import tfrecord_files, translation_schema

DEFAULT_MAX_LENGTH = 128  # the Beam job's --max_length default
MIN_BUCKET_LENGTH = 8
BUCKET_LENGTH_STEP = 1.1
LONG_PAIR_ACTIONS = ("drop", "raise")
# Files read at once; fixed (not AUTOTUNE, which follows the machine's CPU
# count) so that the record order does not depend on the machine.
MAX_PARALLEL_FILES = 8


def bucket_lengths(max_length, min_length=MIN_BUCKET_LENGTH, length_step=BUCKET_LENGTH_STEP):
    """The padded lengths of the buckets: geometric, then `max_length`.

    Starting from `min_length`, each length is the previous one times
    `length_step`, rounded down, and at least one more; the lengths stop
    below `max_length`, which is the last one (tensor2tensor's boundaries,
    as lengths a bucket holds rather than exclusive limits).

    Args:
        max_length: the longest pair (either side) a bucket holds.
        min_length: the shortest bucket length.
        length_step: the ratio of consecutive bucket lengths, above 1.

    Returns:
        An ascending list of ints ending with `max_length`.

    Example:

    >>> bucket_lengths(32)
    [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 26, 28, 30, 32]
    >>> bucket_lengths(64, min_length=16, length_step=2)
    [16, 32, 64]
    """
    max_length, min_length = int(max_length), int(min_length)
    if max_length < 1 or min_length < 1:
        raise ValueError(
            f"max_length and min_length must be at least 1, got max_length="
            f"{max_length} and min_length={min_length}."
        )
    if not length_step > 1.0:
        raise ValueError(
            f"length_step must be above 1 (each bucket longer than the last), got "
            f"{length_step}; tensor2tensor uses 1.1."
        )
    lengths = []
    length = min_length
    while length < max_length:
        lengths.append(length)
        length = max(length + 1, int(length * length_step))
    lengths.append(max_length)
    return lengths


def bucket_batch_sizes(lengths, max_tokens_per_batch, batch_size_multiple=1,
                       max_batch_size=None):
    """The pairs per batch of each bucket: as many as fit the token budget.

    Args:
        lengths: the buckets' padded lengths (`bucket_lengths`).
        max_tokens_per_batch: the most padded positions per side of a batch,
            `batch_size * bucket_length`.
        batch_size_multiple: each batch size is rounded down to a multiple
            of this (8 for tensor cores; times the replicas when one batch
            is split across them).
        max_batch_size: None, or the most pairs per batch.

    Returns:
        A list of ints, one per bucket.

    Raises:
        ValueError: a bucket cannot hold `batch_size_multiple` pairs.

    Example:

    >>> bucket_batch_sizes([8, 16, 40], max_tokens_per_batch=256)
    [32, 16, 6]
    >>> bucket_batch_sizes([8, 16, 40], 256, batch_size_multiple=4, max_batch_size=20)
    [20, 16, 4]
    """
    max_tokens_per_batch = int(max_tokens_per_batch)
    batch_size_multiple = int(batch_size_multiple)
    if batch_size_multiple < 1:
        raise ValueError(f"batch_size_multiple must be at least 1, got {batch_size_multiple}.")
    if max_batch_size is not None and int(max_batch_size) < batch_size_multiple:
        raise ValueError(
            f"max_batch_size={max_batch_size} is below batch_size_multiple="
            f"{batch_size_multiple}; pass None or a larger max_batch_size."
        )
    sizes = []
    for length in lengths:
        size = max_tokens_per_batch // int(length)
        if max_batch_size is not None:
            size = min(size, int(max_batch_size))
        size -= size % batch_size_multiple
        if size < 1:
            raise ValueError(
                f"max_tokens_per_batch={max_tokens_per_batch} holds "
                f"{max_tokens_per_batch // int(length)} pairs of the bucket length "
                f"{length}, fewer than batch_size_multiple={batch_size_multiple}. "
                f"Raise max_tokens_per_batch to at least "
                f"{batch_size_multiple * int(length)}, or lower max_length or "
                "batch_size_multiple."
            )
        sizes.append(size)
    return sizes


def _check_first_record(first):
    """Checks that `first_record`'s record, if any, is a translation pair."""
    if first is None:
        return
    path, record = first
    feature = tf.train.Example.FromString(record).features.feature
    missing = [name for name in translation_schema.FEATURE_NAMES
               if not feature[name].int64_list.value]
    if missing:
        raise ValueError(
            f"{path} does not hold translation pairs: its first record has "
            f"no int64 {missing} (see tfnlp.data.translation_schema; "
            "features found: "
            f"{sorted(feature)})."
        )


def _pipelines(input_context, num_input_pipelines, input_pipeline_id):
    if input_context is not None:
        if (num_input_pipelines, input_pipeline_id) not in (
            (1, 0),
            (input_context.num_input_pipelines, input_context.input_pipeline_id),
        ):
            raise ValueError(
                f"input_context says pipeline {input_context.input_pipeline_id} of "
                f"{input_context.num_input_pipelines}, but num_input_pipelines="
                f"{num_input_pipelines} and input_pipeline_id={input_pipeline_id} "
                "were passed too; pass one or the other."
            )
        num_input_pipelines = input_context.num_input_pipelines
        input_pipeline_id = input_context.input_pipeline_id
    num_input_pipelines, input_pipeline_id = int(num_input_pipelines), int(input_pipeline_id)
    if num_input_pipelines < 1 or not 0 <= input_pipeline_id < num_input_pipelines:
        raise ValueError(
            f"input_pipeline_id must be in [0, num_input_pipelines), with "
            f"num_input_pipelines at least 1; got input_pipeline_id="
            f"{input_pipeline_id} and num_input_pipelines={num_input_pipelines}."
        )
    return num_input_pipelines, input_pipeline_id


def _pair_length(pair):
    """The longer side of a pair, the length its bucket is chosen by."""
    return tf.maximum(
        tf.shape(pair[translation_schema.INPUTS])[0],
        tf.shape(pair[translation_schema.TARGETS])[0],
    )


def _match_files(files, compression):
    """The translation shards that `files` names, and each one's compression."""
    compression = tfrecord_files.normalize_compression(compression)
    _, files = tfrecord_files.match_files(
        files, "files", "translation", "DIR/translation-*-of-*.tfrecord*",
        "pipelines.translation_data",
    )
    return files, tfrecord_files.file_compressions(files, compression)


def count_long_pairs(files, max_length, compression=None):
    """`(long_pairs, pairs)`: how many pairs of `files` are longer than
    `max_length` ids (the longer side, EOS included), which training skips,
    and how many pairs there are. One pass over the files.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "translation-00000-of-00001.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     for inputs, targets in [([5, 6, 3], [7, 3]), ([8, 3], [9, 10, 11, 12, 3])]:
    ...         writer.write(translation_schema.serialize_pair(inputs, targets))
    >>> count_long_pairs(path, max_length=4)
    (1, 2)
    >>> count_long_pairs(path, max_length=5)  # a pair of exactly max_length fits
    (0, 2)
    """
    files, compressions = _match_files(files, compression)
    read_file = tfrecord_files.record_reader(files, compressions)
    pairs = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string)).interleave(
        read_file, cycle_length=min(len(files), MAX_PARALLEL_FILES),
        num_parallel_calls=tf.data.AUTOTUNE,
    ).map(translation_schema.parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    long_pairs, total = pairs.reduce(
        (tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
        lambda counts, pair: (
            counts[0] + tf.cast(_pair_length(pair) > int(max_length), tf.int64),
            counts[1] + 1,
        ),
    )
    return int(long_pairs), int(total)


def translation_dataset(
    files,
    max_tokens_per_batch,
    max_length=DEFAULT_MAX_LENGTH,
    evaluation=False,
    pad_to_bucket_boundary=True,
    min_bucket_length=MIN_BUCKET_LENGTH,
    bucket_length_step=BUCKET_LENGTH_STEP,
    batch_size_multiple=1,
    max_batch_size=None,
    long_pairs="drop",
    shuffle=None,
    shuffle_buffer=10000,
    seed=None,
    repeat=False,
    drop_remainder=False,
    input_context=None,
    num_input_pipelines=1,
    input_pipeline_id=0,
    compression="auto",
    deterministic=None,
):
    """A `tf.data.Dataset` of translation batches bucketed by length, by tokens.

    The files are sorted, optionally shuffled (with `seed`, anew each epoch),
    read `MAX_PARALLEL_FILES` at a time with `interleave` over
    `TFRecordDataset`s, shuffled pair by pair, repeated, parsed with
    `translation_schema.parse_example`, bucketed and batched with
    `tf.data.Dataset.bucket_by_sequence_length` and prefetched, batched by
    token count as fairseq's `--max-tokens` and tensor2tensor's length
    bucketing do. Each element is `{"inputs": int32 [batch, source_length],
    "targets": int32 [batch, target_length]}`, padded with `PAD_ID` 0.

    Buckets. A pair's length is the longer of its two sides (EOS included).
    The bucket lengths are geometric, as tensor2tensor's: 8, 9, 10, ...,
    each the previous times `bucket_length_step` (1.1), rounded down, at
    least one more, and the last one is `max_length` (`bucket_lengths`). A
    pair goes to the shortest bucket at least as long as it. Each bucket has
    its own batch size, `max_tokens_per_batch // bucket_length`, rounded
    down to a multiple of `batch_size_multiple` and capped by
    `max_batch_size` (`bucket_batch_sizes`).

    Padding. With `pad_to_bucket_boundary=True` (the default) both sides of
    a batch are padded to the bucket length, so there are at most as many
    shapes per side as buckets (and their batch sizes), which XLA compiles
    once each; with False each side is padded to its longest pair in the
    batch (less padding, shapes of every length). The padding share on
    Multi30k En-De (the 29,000 training pairs), as measured by `python -m
    benchmarks.translation_batching` (padded positions / all positions,
    source and target together; one shuffled epoch,
    max_tokens_per_batch=4096, max_length=128; lengths are the ids of a
    shared 8,000-piece SentencePiece model learned from the training text
    as the Beam job learns it; in brackets: words x 1.3 + EOS as the
    length):

        token batches, padded to the bucket length          7.4%   (6.8%)
        token batches, padded to the longest in the batch   7.4%   (6.8%)
        plain batches of as many pairs (212; 218), padded
          to the longest in the batch (the reference)       57.8%  (55.1%)
        every pair padded to max_length                     87.5%  (87.5%)

    so a step computes 1.08 positions per real token against the
    reference's 2.37 (0.46x). Padding to the bucket length costs almost
    nothing here (41 more positions in a million): with about 200 pairs a
    batch and buckets one to three ids wide below 40, each side's longest
    pair nearly always reaches the bucket length.

    Pairs longer than `max_length`. The Beam job drops them already; a
    reader with a smaller `max_length` than the writer's would meet some. In
    training they are dropped (`long_pairs="drop"`, as tensor2tensor does;
    `count_long_pairs` counts them, and `trainer.translate` reports the
    count unless the shards' stats.json shows there can be none). In
    evaluation they are kept.

    Evaluation (`evaluation=True`): no shuffle, no repeat, no remainder
    dropped, a fixed read order; every pair of the files appears exactly
    once, in the same order every time, so that a validation set can be
    decoded and scored completely. Pairs up to `max_length` are bucketed as
    in training; the longer ones come after them, one pair per batch,
    padded to their own lengths. The files are read twice for that (once
    for each kind), which evaluation sets afford.

    A batch's `batch * max(source_length, target_length)` is at most
    `max_tokens_per_batch`, except for evaluation's pairs longer than
    `max_length` (one per batch). The last batch of each bucket is smaller
    (not a multiple of `batch_size_multiple`) unless `drop_remainder` or
    the data repeats forever.

    Input pipelines (`tf.distribute`): with `input_context` (or
    `num_input_pipelines` > 1 and `input_pipeline_id`) each pipeline reads
    its share of the data: every `num_input_pipelines`-th file of the
    sorted list when there are at least as many files as pipelines,
    otherwise every `num_input_pipelines`-th pair of all files read in a
    fixed order (the files are then not shuffled; the pairs are). The
    pipelines' shares partition the data. With
    `strategy.distribute_datasets_from_function` each replica takes one
    batch per step, so `max_tokens_per_batch` is per replica, as fairseq's
    `--max-tokens` is per GPU (a trainer holding a global budget passes
    `input_context.get_per_replica_batch_size(global_max_tokens)`, as
    `trainer.tasks.bert_pretraining.dataset_function` does with its batch
    size); with `experimental_distribute_dataset`,
    which splits each batch across the replicas, pass a
    `batch_size_multiple` that the replica count divides.

    Args:
        files: a path or glob, or a list of them, of TFRecord shards
            (`translation-SSSSS-of-NNNNN.tfrecord`).
        max_tokens_per_batch: the most padded positions of either side of a
            batch, `batch_size * bucket_length` (fairseq's `--max-tokens`).
        max_length: the longest pair bucketed (either side, EOS included);
            the last bucket's length.
        evaluation: every pair exactly once, in a fixed order: no shuffle,
            no repeat, nothing dropped (pairs longer than `max_length` get
            their own batches, after the others).
        pad_to_bucket_boundary: pad both sides of a batch to its bucket's
            length (few shapes, for XLA); False: each side to its longest
            pair in the batch.
        min_bucket_length: the shortest bucket length.
        bucket_length_step: the ratio of consecutive bucket lengths.
        batch_size_multiple: round each bucket's batch size down to a
            multiple of this (e.g. 8, or 8 times the replicas).
        max_batch_size: None, or the most pairs per batch (short buckets
            would otherwise take `max_tokens_per_batch // min_bucket_length`).
        long_pairs: for training, what to do with a pair longer than
            `max_length`: "drop" it, or "raise" (the iterator fails with
            `tf.errors.InvalidArgumentError` naming its length).
        shuffle: shuffle the files and the pairs. None: unless `evaluation`.
        shuffle_buffer: pairs in the shuffle buffer.
        seed: seeds the file and pair shuffles; the same seed gives the same
            batches (each epoch still differing from the last). None: random
            (or from `tf.random.set_seed`).
        repeat: True to repeat forever, an int to repeat that many times,
            False for one pass.
        drop_remainder: drop the last, smaller batch of each bucket.
        input_context: a `tf.distribute.InputContext`, for its
            `num_input_pipelines` and `input_pipeline_id`.
        num_input_pipelines: how many pipelines share the data (without
            `input_context`).
        input_pipeline_id: this pipeline's index (without `input_context`).
        compression: "auto" (gzip for names ending .gz, otherwise detected
            from each file's first bytes), "GZIP", "ZLIB" or "" (none).
        deterministic: keep the parallel reads and maps in order. None: in
            order when the order is asked to be reproducible (a `seed` is
            given, or `shuffle` is off), always in evaluation and when the
            pairs are sharded across pipelines.

    Returns:
        A `tf.data.Dataset` of `{"inputs", "targets"}` int32 batches.

    References:
        Vaswani et al. 2017, "Attention Is All You Need", §5.1: "Sentence
        pairs were batched together by approximate sequence length. Each
        training batch contained a set of sentence pairs containing
        approximately 25000 source tokens and 25000 target tokens."
        Ott et al. 2019, "fairseq: A Fast, Extensible Toolkit for Sequence
        Modeling" (NAACL demonstrations): batches by `--max-tokens`.
        Vaswani et al. 2018, "Tensor2Tensor for Neural Machine Translation":
        the library's length buckets (geometric, step 1.1, from 8).

    Raises:
        FileNotFoundError: no file matches `files`.
        ValueError: bad arguments (a budget smaller than one pair of
            `max_length`, evaluation with shuffle, repeat or
            drop_remainder, ...), or files that do not hold translation
            pairs.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "translation-00000-of-00001.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     for inputs, targets in [([5, 6, 3], [7, 3]), ([8, 3], [9, 10, 11, 12, 3])]:
    ...         writer.write(translation_schema.serialize_pair(inputs, targets))
    >>> dataset = translation_dataset(path, max_tokens_per_batch=64, max_length=32,
    ...                               evaluation=True)
    >>> batch = next(iter(dataset))
    >>> batch["inputs"].numpy().tolist()
    [[5, 6, 3, 0, 0, 0, 0, 0], [8, 3, 0, 0, 0, 0, 0, 0]]
    >>> batch["targets"].shape
    TensorShape([2, 8])

    References:
        Vaswani et al. 2017, "Attention Is All You Need", §5.1 (batching
        by approximate sequence length).
        Ott et al. 2019, "fairseq: A Fast, Extensible Toolkit for Sequence
        Modeling" (`--max-tokens`).
    """
    if long_pairs not in LONG_PAIR_ACTIONS:
        raise ValueError(f"long_pairs must be 'drop' or 'raise', got {long_pairs!r}.")
    if shuffle is None:
        shuffle = not evaluation
    if evaluation and (shuffle or repeat or drop_remainder):
        raise ValueError(
            f"evaluation=True reads every pair exactly once in a fixed order, but "
            f"shuffle={shuffle}, repeat={repeat}, drop_remainder={drop_remainder} "
            "were passed; leave them at their defaults, or use evaluation=False."
        )
    if shuffle and int(shuffle_buffer) < 1:
        raise ValueError(f"shuffle_buffer must be at least 1, got {shuffle_buffer}.")
    if int(max_tokens_per_batch) < 1:
        raise ValueError(
            f"max_tokens_per_batch must be at least 1, got {max_tokens_per_batch}."
        )
    max_length = int(max_length)
    lengths = bucket_lengths(max_length, min_bucket_length, bucket_length_step)
    batch_sizes = bucket_batch_sizes(
        lengths, max_tokens_per_batch, batch_size_multiple, max_batch_size
    )
    pipelines, pipeline = _pipelines(input_context, num_input_pipelines, input_pipeline_id)
    files, compressions = _match_files(files, compression)
    _check_first_record(tfrecord_files.first_record(files, compressions))

    shard_pairs = pipelines > 1 and len(files) < pipelines
    if pipelines > 1 and not shard_pairs:
        files = files[pipeline::pipelines]
    if deterministic is None:
        deterministic = seed is not None or not shuffle
    deterministic = bool(deterministic or evaluation or shard_pairs)

    read_file = tfrecord_files.record_reader(files, compressions)

    def pairs():
        """The parsed pairs of this pipeline, shuffled and repeated as asked."""
        dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string))
        if shuffle and not shard_pairs:
            dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.interleave(
            read_file,
            cycle_length=min(len(files), MAX_PARALLEL_FILES),
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
        if shard_pairs:
            dataset = dataset.shard(pipelines, pipeline)
        dataset = tfrecord_files.shuffle_and_repeat(
            dataset, shuffle, shuffle_buffer, seed, repeat
        )
        return dataset.map(
            translation_schema.parse_example,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )

    def fits(pair):
        return _pair_length(pair) <= max_length

    dataset = pairs()
    if long_pairs == "raise" and not evaluation:

        def check_length(pair):
            length = _pair_length(pair)
            with tf.control_dependencies([tf.debugging.assert_less_equal(
                length, max_length,
                message=(
                    f"A translation pair is longer than max_length={max_length} "
                    "(x below is its longer side's length, EOS included). Pass a "
                    "larger max_length, write the shards with the same maximum "
                    "length, or pass long_pairs='drop' to skip such pairs."
                ),
            )]):
                return {name: tf.identity(value) for name, value in pair.items()}

        dataset = dataset.map(check_length)
    else:
        dataset = dataset.filter(fits)

    # Bucket i holds the pairs of length in (lengths[i - 1], lengths[i]]: the
    # boundaries are exclusive upper limits; the bucket past the last (pairs
    # longer than max_length) stays empty, the pairs having been filtered.
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=_pair_length,
        bucket_boundaries=[length + 1 for length in lengths],
        bucket_batch_sizes=batch_sizes + [1],
        padding_values=translation_schema.PAD_ID,
        pad_to_bucket_boundary=bool(pad_to_bucket_boundary),
        drop_remainder=bool(drop_remainder),
    )
    if evaluation:
        long_ones = pairs().filter(lambda pair: tf.logical_not(fits(pair)))
        dataset = dataset.concatenate(
            long_ones.padded_batch(1, padding_values=translation_schema.PAD_ID)
        )
    return dataset.prefetch(tf.data.AUTOTUNE)
