"""Reads BERT pretraining TFRecords into a batched `tf.data.Dataset`.

The records follow `tfnlp.data.pretraining_schema` (google-research/bert's
features). `pretraining_dataset` lists the shards, reads them in parallel
(interleaved, plain or gzip), shuffles, batches, parses whole batches at once
and yields one dict of seven features per batch, the shape that Keras
training takes:

    input_ids, input_mask, segment_ids          int32   [batch, max_seq_length]
    masked_lm_positions, masked_lm_ids          int32   [batch, max_predictions_per_seq]
    masked_lm_weights                           float32 [batch, max_predictions_per_seq]
    next_sentence_labels                        int32   [batch, 1]

Dynamic masking (RoBERTa-style): the writer's `--dynamic_masking` stores
unmasked sequences with empty masked-LM fields, and the reader masks each
batch anew, every epoch, in the graph with tensorflow-text
(`RandomItemSelector`, `MaskValuesChooser`, `mask_language_model`). Per
sequence it picks `min(max_predictions_per_seq, max(1, round(masked_lm_prob
* n)))` of the `n` real tokens that are neither [CLS] nor [SEP] (the
original's rule, over the non-special tokens), replaces 80% of them by
[MASK], 10% by a random id in `[0, vocab_size)` and leaves 10% unchanged.
Positions are ascending and the labels are the original ids. The random
numbers are stateless, drawn from one seed per batch taken from
`tf.data.Dataset.random(seed, rerandomize_each_iteration=True)`: each epoch
(each new iterator, or each pass of `repeat`) masks differently, and two
datasets built with the same `seed` give the same masks.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from tfnlp.data import pretraining_schema, tfrecord_files

# The original's 80/10/10 split of the selected tokens.
MASK_TOKEN_RATE = 0.8
RANDOM_TOKEN_RATE = 0.1

def _check_first_record(path, record, max_seq_length, max_predictions_per_seq):
    """Checks the record's lengths; returns whether it is stored unmasked."""
    try:
        sizes = pretraining_schema.record_sizes(record)
    except ValueError as error:
        raise ValueError(f"{path} does not hold BERT pretraining records: its first "
                         f"record {error}.") from None
    sequence_length, predictions = sizes.max_seq_length, sizes.max_predictions_per_seq
    if (sequence_length, predictions) != (max_seq_length, max_predictions_per_seq):
        raise ValueError(
            f"The records in {path} were written with max_seq_length="
            f"{sequence_length} and max_predictions_per_seq={predictions}, but "
            f"max_seq_length={max_seq_length} and max_predictions_per_seq="
            f"{max_predictions_per_seq} were asked for; pass the values the "
            "data was written with (its stats.json records them)."
        )
    return sizes.stored_unmasked


class _StatelessMaskValuesChooser(tf_text.MaskValuesChooser):
    """`MaskValuesChooser` with stateless random numbers from `seed`.

    Same rule as tensorflow-text's: a uniform draw below `mask_token_rate`
    gives [MASK], one below `mask_token_rate + random_token_rate` a random id
    in `[0, vocab_size)`, any other keeps the id.
    """

    def __init__(self, vocab_size, mask_token, mask_token_rate, random_token_rate, seed):
        super().__init__(vocab_size, mask_token, mask_token_rate, random_token_rate)
        self._rate_of_mask_token = mask_token_rate
        self._seed = seed

    def get_mask_values(self, masked_lm_ids):
        ids = masked_lm_ids.flat_values
        decision_seed, random_id_seed = tf.unstack(
            tf.random.experimental.stateless_split(self._seed, 2)
        )
        draws = tf.random.stateless_uniform(tf.shape(ids), decision_seed)
        random_ids = tf.random.stateless_uniform(
            tf.shape(ids), random_id_seed, minval=0, maxval=self.vocab_size,
            dtype=ids.dtype,
        )
        values = tf.where(
            draws < self._rate_of_mask_token,
            tf.cast(self.mask_token, ids.dtype),
            tf.where(
                draws < self._rate_of_mask_token + self.random_token_rate,
                random_ids,
                ids,
            ),
        )
        return masked_lm_ids.with_flat_values(values)


def _restore_original_ids(features):
    """Puts the stored labels back at their positions (no-op when unmasked),
    so statically masked records can be masked again."""
    positions = features[pretraining_schema.MASKED_LM_POSITIONS]
    real = features[pretraining_schema.MASKED_LM_WEIGHTS] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
    indices = tf.boolean_mask(tf.stack([rows, positions], axis=-1), real)
    labels = tf.boolean_mask(features[pretraining_schema.MASKED_LM_IDS], real)
    return tf.tensor_scatter_nd_update(
        features[pretraining_schema.INPUT_IDS], indices, labels
    )


# Plain TensorFlow ops with no Python control flow on tensors: skipping
# AutoGraph's conversion of tensorflow-text's masking code saves seconds of
# tracing per dataset.
@tf.autograph.experimental.do_not_convert
def mask_dynamically(
    features,
    seed,
    vocab_size,
    cls_id,
    sep_id,
    mask_id,
    max_predictions_per_seq,
    masked_lm_prob=0.15,
):
    """Masks a parsed batch anew, replacing its masked-LM features.

    Any stored masked-LM fields are ignored (their labels are first put back
    into `input_ids`). Of the `n` real tokens of each sequence that are
    neither [CLS] nor [SEP], `min(max_predictions_per_seq, max(1,
    round(masked_lm_prob * n)))` are chosen; 80% become [MASK], 10% a random
    id in `[0, vocab_size)`, 10% stay. Padding is never chosen.

    Args:
        features: a batch from `pretraining_schema.parse_examples` (int32).
        seed: a `[2]` integer tensor; the same seed gives the same masks.
        vocab_size: random replacement ids are drawn from `[0, vocab_size)`.
        cls_id: the [CLS] id (never masked).
        sep_id: the [SEP] id (never masked).
        mask_id: the [MASK] id.
        max_predictions_per_seq: the most predictions per sequence, and the
            padded length of the masked-LM features.
        masked_lm_prob: the share of tokens to predict.

    Returns:
        A new features dict: masked `input_ids`, ascending
        `masked_lm_positions`, the original ids as `masked_lm_ids`, and
        `masked_lm_weights` 1.0 per prediction, zero-padded; the other
        features unchanged.

    Example:

    >>> features = pretraining_schema.parse_examples(tf.constant([
    ...     pretraining_schema.serialize_instance(
    ...         [2, 10, 11, 12, 3], [0] * 5, [], [], False, 8, 2)]), 8, 2)
    >>> masked = mask_dynamically(features, tf.constant([1, 2]), vocab_size=20,
    ...     cls_id=2, sep_id=3, mask_id=4, max_predictions_per_seq=2)
    >>> int(masked["masked_lm_weights"].numpy().sum())
    1
    """
    input_ids = _restore_original_ids(features)
    max_seq_length = input_ids.shape[1]
    lengths = tf.reduce_sum(features[pretraining_schema.INPUT_MASK], axis=1)
    real = tf.sequence_mask(lengths, tf.shape(input_ids)[1])
    selectable = real & tf.not_equal(input_ids, cls_id) & tf.not_equal(input_ids, sep_id)
    selectable_count = tf.reduce_sum(tf.cast(selectable, tf.int32), axis=1)
    # The original's count, max(1, round(share * n)) (round half to even in
    # doubles, as Python's round), capped at max_predictions_per_seq.
    count = tf.round(tf.cast(selectable_count, tf.float64) * masked_lm_prob)
    count = tf.clip_by_value(count, 1.0, float(max_predictions_per_seq))

    tokens = tf.RaggedTensor.from_tensor(input_ids, lengths=lengths)
    selection_seed, values_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    # One random key per token of the batch: RandomItemSelector shuffles the
    # selectable positions of each row (indices into tokens.flat_values) by
    # their keys and keeps the first ones.
    keys = tf.random.stateless_uniform(tf.shape(tokens.flat_values), selection_seed)

    def shuffle_by_keys(positions):
        return tf.gather(positions, tf.argsort(tf.gather(keys, positions)))

    selector = tf_text.RandomItemSelector(
        # RandomItemSelector keeps min(ceil(rate * n), this) per row; ceil is
        # never below the original's round, so this per-row cap gives it.
        max_selections_per_batch=tf.cast(count, tf.float32),
        selection_rate=masked_lm_prob,
        unselectable_ids=[cls_id, sep_id],
        shuffle_fn=shuffle_by_keys,
    )
    chooser = _StatelessMaskValuesChooser(
        vocab_size, mask_id, MASK_TOKEN_RATE, RANDOM_TOKEN_RATE, values_seed
    )
    masked_ids, positions, labels = tf_text.mask_language_model(
        tokens, selector, chooser, axis=1
    )

    predictions_shape = [None, max_predictions_per_seq]
    features = dict(features)
    features[pretraining_schema.INPUT_IDS] = masked_ids.to_tensor(
        0, shape=[None, max_seq_length]
    )
    features[pretraining_schema.MASKED_LM_POSITIONS] = tf.cast(
        positions, tf.int32
    ).to_tensor(0, shape=predictions_shape)
    features[pretraining_schema.MASKED_LM_IDS] = tf.cast(labels, tf.int32).to_tensor(
        0, shape=predictions_shape
    )
    features[pretraining_schema.MASKED_LM_WEIGHTS] = tf.ones_like(
        positions, dtype=tf.float32
    ).to_tensor(0.0, shape=predictions_shape)
    return features


def _masking_ids(tokenizer, vocab_size, cls_id, sep_id, mask_id):
    if tokenizer is not None:
        vocab_size = tokenizer.vocab_size if vocab_size is None else vocab_size
        cls_id = tokenizer.cls_id if cls_id is None else cls_id
        sep_id = tokenizer.sep_id if sep_id is None else sep_id
        mask_id = tokenizer.mask_id if mask_id is None else mask_id
    values = {"vocab_size": vocab_size, "cls_id": cls_id, "sep_id": sep_id, "mask_id": mask_id}
    missing = [name for name, value in values.items() if value is None]
    if missing:
        raise ValueError(
            f"Dynamic masking needs vocab_size, cls_id, sep_id and mask_id; "
            f"{', '.join(missing)} not given. Pass them, or pass "
            "tokenizer=tfnlp.text.BertTokenizer(vocab_file) to take them from "
            "its vocabulary."
        )
    values = {name: int(value) for name, value in values.items()}
    for name in ("cls_id", "sep_id", "mask_id"):
        if not 0 <= values[name] < values["vocab_size"]:
            raise ValueError(
                f"{name}={values[name]} is outside [0, vocab_size={values['vocab_size']})."
            )
    return values


def pretraining_dataset(
    file_pattern,
    batch_size,
    max_seq_length=128,
    max_predictions_per_seq=20,
    dynamic_masking=None,
    vocab_size=None,
    cls_id=None,
    sep_id=None,
    mask_id=None,
    tokenizer=None,
    masked_lm_prob=0.15,
    shuffle=True,
    shuffle_buffer=10000,
    seed=None,
    repeat=False,
    drop_remainder=True,
    compression="auto",
    deterministic=None,
):
    """A batched `tf.data.Dataset` of BERT pretraining features.

    Files are listed with `tf.data.Dataset.list_files` (shuffled with `seed`
    when `shuffle`), read in parallel with `interleave` over
    `TFRecordDataset`s, shuffled record by record, batched, parsed a batch at
    a time, optionally masked anew, and prefetched. Each element is a dict of
    the seven features (see the module docstring), int32 except float32
    `masked_lm_weights`.

    The first record is read up front to check that it is a pretraining
    record of the asked lengths and, with `dynamic_masking=None`, whether it
    is stored unmasked.

    Args:
        file_pattern: a glob, or a list of globs, of TFRecord shards.
        batch_size: examples per batch.
        max_seq_length: the records' sequence length.
        max_predictions_per_seq: the records' (and the dynamic masks')
            number of predictions.
        dynamic_masking: mask each batch anew every epoch, ignoring the
            stored masked-LM fields. None: do it when the data is stored
            unmasked (its first record holds no prediction), as the writer's
            `--dynamic_masking` stores it.
        vocab_size: for dynamic masking, random ids come from
            `[0, vocab_size)`.
        cls_id: for dynamic masking, the [CLS] id (never masked).
        sep_id: for dynamic masking, the [SEP] id (never masked).
        mask_id: for dynamic masking, the [MASK] id.
        tokenizer: a `tfnlp.text.BertTokenizer` whose `vocab_size`, `cls_id`,
            `sep_id` and `mask_id` fill in those not given.
        masked_lm_prob: for dynamic masking, the share of tokens predicted.
        shuffle: shuffle the files and the records.
        shuffle_buffer: records in the shuffle buffer.
        seed: seeds the file and record shuffles and the dynamic masks; the
            same seed gives the same batches (with `deterministic`), each
            epoch still differing from the last. None: random (or from
            `tf.random.set_seed`).
        repeat: True to repeat forever, an int to repeat that many times,
            False for one pass.
        drop_remainder: drop the last, smaller batch (fixed batch shapes, as
            TPUs and XLA want).
        compression: "auto" (gzip for names ending .gz, otherwise detected
            from each file's first bytes), "GZIP", "ZLIB" or "" (none).
        deterministic: keep the parallel reads and maps in order. None: in
            order when the order is asked to be reproducible (a `seed` is
            given, or `shuffle` is off), otherwise the faster any-order.

    Returns:
        A `tf.data.Dataset` of feature dicts.

    Raises:
        FileNotFoundError: no file matches `file_pattern`.
        ValueError: bad arguments, records of other lengths, or dynamic
            masking without the ids it needs.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "shard-0.tfrecord")
    >>> with tf.io.TFRecordWriter(path) as writer:
    ...     writer.write(pretraining_schema.serialize_instance(
    ...         [2, 10, 4, 12, 3], [0, 0, 0, 1, 1], [2], [11], False, 8, 2))
    >>> dataset = pretraining_dataset(path, batch_size=1, max_seq_length=8,
    ...                               max_predictions_per_seq=2)
    >>> features = next(iter(dataset))
    >>> features["input_ids"].numpy().tolist()
    [[2, 10, 4, 12, 3, 0, 0, 0]]
    >>> features["masked_lm_ids"].numpy().tolist()
    [[11, 0]]
    """
    pretraining_schema._check_sizes(max_seq_length, max_predictions_per_seq)
    max_seq_length = int(max_seq_length)
    max_predictions_per_seq = int(max_predictions_per_seq)
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if not 0.0 < masked_lm_prob <= 1.0:
        raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
    if shuffle and int(shuffle_buffer) < 1:
        raise ValueError(f"shuffle_buffer must be at least 1, got {shuffle_buffer}.")
    compression = tfrecord_files.normalize_compression(compression)
    patterns, files = tfrecord_files.match_files(
        file_pattern, "file_pattern", "pretraining", "DIR/*.tfrecord*",
        "pipelines.pretraining_data",
    )
    compressions = tfrecord_files.file_compressions(files, compression)

    first = tfrecord_files.first_record(files, compressions)
    stored_unmasked = False
    if first is not None:
        stored_unmasked = _check_first_record(
            *first, max_seq_length, max_predictions_per_seq
        )
    if dynamic_masking is None:
        dynamic_masking = stored_unmasked
    if dynamic_masking:
        try:
            masking = _masking_ids(tokenizer, vocab_size, cls_id, sep_id, mask_id)
        except ValueError as error:
            if stored_unmasked:
                raise ValueError(
                    f"The records matching {file_pattern!r} are stored unmasked "
                    f"(written with --dynamic_masking), so they are masked while "
                    f"reading. {error}"
                ) from None
            raise

    if deterministic is None:
        deterministic = seed is not None or not shuffle

    read_file = tfrecord_files.record_reader(files, compressions)

    dataset = tf.data.Dataset.list_files(patterns, shuffle=shuffle, seed=seed)
    dataset = dataset.interleave(
        read_file,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=deterministic,
    )
    dataset = tfrecord_files.shuffle_and_repeat(
        dataset, shuffle, shuffle_buffer, seed, repeat
    )
    dataset = dataset.batch(int(batch_size), drop_remainder=drop_remainder)

    def parse(serialized):
        return pretraining_schema.parse_examples(
            serialized, max_seq_length, max_predictions_per_seq
        )

    if dynamic_masking:
        # One stateless seed per batch; a new iterator draws new seeds.
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
        dataset = tf.data.Dataset.zip((dataset, seeds.batch(2)))

        @tf.autograph.experimental.do_not_convert
        def parse_and_mask(serialized, batch_seed):
            return mask_dynamically(
                parse(serialized),
                batch_seed,
                max_predictions_per_seq=max_predictions_per_seq,
                masked_lm_prob=masked_lm_prob,
                **masking,
            )

        dataset = dataset.map(
            parse_and_mask, num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=deterministic,
        )
    else:
        dataset = dataset.map(
            parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic
        )
    return dataset.prefetch(tf.data.AUTOTUNE)
