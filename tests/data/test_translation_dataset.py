import collections
import gzip
import zlib

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.data import pretraining_schema, translation_schema
from tfnlp.data.translation_reader import (
    bucket_batch_sizes,
    bucket_lengths,
    translation_dataset,
)

EOS = translation_schema.EOS_ID
PAIRS = 300  # the first Multi30k training pairs
MAX_LENGTH = 20  # 14 of those pairs are longer (either side, EOS included)
BUDGET = 128
SHARDS = 4


def word_ids(line):
    """A word-level stand-in for subword ids: each word's CRC32 mapped above
    the special ids, then EOS. Same word, same id; never 0 (padding)."""
    return [4 + zlib.crc32(word.encode()) % 30000 for word in line.split()] + [EOS]


def key(inputs, targets):
    return tuple(int(i) for i in inputs), tuple(int(i) for i in targets)


def write_shard(path, pairs, compression=""):
    options = tf.io.TFRecordOptions(compression_type=compression)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for inputs, targets in pairs:
            writer.write(translation_schema.serialize_pair(inputs, targets))
    return str(path)


def unpadded(row):
    """The ids before the padding; checks that what follows is all zeros.
    (Records hold no 0 and end with EOS, so the content ends at the last
    non-zero id.)"""
    nonzero = np.flatnonzero(row)
    length = int(nonzero[-1]) + 1 if len(nonzero) else 0
    assert not row[length:].any()
    assert row[length - 1] == EOS
    return row[:length]


def batches(dataset):
    return list(dataset.as_numpy_iterator())


def pairs_of(batch_list):
    """The pairs of the batches, in order, unpadded."""
    return [key(unpadded(inputs), unpadded(targets))
            for batch in batch_list
            for inputs, targets in zip(batch["inputs"], batch["targets"])]


def pair_length(pair):
    return max(len(pair[0]), len(pair[1]))


@pytest.fixture(scope="module")
def multi30k(shared_data_dir, tmp_path_factory):
    """The first 300 Multi30k En-De training pairs as word ids, in 4 plain
    shards (pairs i::4): (folder, pairs as tuples)."""
    with open(shared_data_dir / "mt" / "train.en", encoding="utf-8") as file:
        english = [next(file) for _ in range(PAIRS)]
    with open(shared_data_dir / "mt" / "train.de", encoding="utf-8") as file:
        german = [next(file) for _ in range(PAIRS)]
    pairs = [key(word_ids(source), word_ids(target))
             for source, target in zip(english, german)]
    folder = tmp_path_factory.mktemp("translation")
    for shard in range(SHARDS):
        write_shard(folder / f"translation-{shard:05d}-of-{SHARDS:05d}.tfrecord",
                    pairs[shard::SHARDS])
    return folder, pairs


def files_of(folder):
    return str(folder / "translation-*-of-*.tfrecord")


def fitting(pairs):
    return [pair for pair in pairs if pair_length(pair) <= MAX_LENGTH]


def test_bucket_lengths_are_geometric_and_end_at_max_length():
    lengths = bucket_lengths(256)
    assert lengths[:13] == list(range(8, 21))
    assert lengths[-1] == 256 and lengths == sorted(set(lengths))
    for shorter, longer in zip(lengths[:-2], lengths[1:-1]):
        assert longer == max(shorter + 1, int(shorter * 1.1))
    # tensor2tensor's boundaries for max_length 256, then 256.
    assert lengths[13:] == [22, 24, 26, 28, 30, 33, 36, 39, 42, 46, 50, 55, 60, 66, 72,
                            79, 86, 94, 103, 113, 124, 136, 149, 163, 179, 196, 215,
                            236, 256]
    assert bucket_lengths(5) == [5]
    assert bucket_lengths(9, min_length=4, length_step=2) == [4, 8, 9]
    with pytest.raises(ValueError, match="length_step must be above 1"):
        bucket_lengths(64, length_step=1.0)


def test_bucket_batch_sizes_fill_the_budget():
    lengths = bucket_lengths(64)
    sizes = bucket_batch_sizes(lengths, 1000)
    for length, size in zip(lengths, sizes):
        assert size * length <= 1000 < (size + 1) * length
    rounded = bucket_batch_sizes(lengths, 1000, batch_size_multiple=8, max_batch_size=100)
    for size, plain in zip(rounded, sizes):
        assert size % 8 == 0 and size == min(plain, 100) // 8 * 8
    with pytest.raises(ValueError, match=r"Raise max_tokens_per_batch to at least 512"):
        bucket_batch_sizes(lengths, 500, batch_size_multiple=8)
    with pytest.raises(ValueError, match="max_batch_size=4 is below batch_size_multiple=8"):
        bucket_batch_sizes(lengths, 1000, batch_size_multiple=8, max_batch_size=4)


@pytest.mark.parametrize("pad_to_bucket_boundary", [True, False])
def test_one_epoch_keeps_every_fitting_pair_within_the_token_budget(
        multi30k, pad_to_bucket_boundary):
    folder, pairs = multi30k
    dataset = translation_dataset(
        files_of(folder), BUDGET, max_length=MAX_LENGTH, shuffle=False,
        pad_to_bucket_boundary=pad_to_bucket_boundary)
    for name in translation_schema.FEATURE_NAMES:
        assert dataset.element_spec[name].dtype == tf.int32
        assert dataset.element_spec[name].shape.rank == 2
    lengths = bucket_lengths(MAX_LENGTH)
    sizes = dict(zip(lengths, bucket_batch_sizes(lengths, BUDGET)))
    smaller = collections.Counter()
    result = batches(dataset)
    for batch in result:
        rows, source_length = batch["inputs"].shape
        target_length = batch["targets"].shape[1]
        assert rows * max(source_length, target_length) <= BUDGET
        contents = pairs_of([batch])
        longest = max(pair_length(pair) for pair in contents)
        bucket = min(length for length in lengths if length >= longest)
        if pad_to_bucket_boundary:
            assert source_length == target_length == bucket
        else:
            assert source_length == max(len(pair[0]) for pair in contents)
            assert target_length == max(len(pair[1]) for pair in contents)
        # Full batches of the bucket's size; at most one smaller per bucket.
        if rows != sizes[bucket]:
            assert rows < sizes[bucket]
            smaller[bucket] += 1
    assert max(smaller.values(), default=0) <= 1
    dropped = [pair for pair in pairs if pair_length(pair) > MAX_LENGTH]
    assert len(dropped) == 14
    # Both edges are in the data: 8 pairs of exactly MAX_LENGTH (kept), 3 one past.
    assert {MAX_LENGTH, MAX_LENGTH + 1} <= {pair_length(pair) for pair in pairs}
    assert collections.Counter(pairs_of(result)) == collections.Counter(fitting(pairs))


def test_shapes_are_bucket_lengths_and_pairs_share_a_bucket(multi30k):
    folder, pairs = multi30k
    lengths = bucket_lengths(MAX_LENGTH, min_length=10, length_step=1.5)
    assert lengths == [10, 15, 20]
    result = batches(translation_dataset(
        files_of(folder), 200, max_length=MAX_LENGTH, min_bucket_length=10,
        bucket_length_step=1.5, shuffle=True, seed=3))
    shapes = {(batch["inputs"].shape[1], batch["targets"].shape[1]) for batch in result}
    assert shapes == {(10, 10), (15, 15), (20, 20)}
    for batch in result:
        length = batch["inputs"].shape[1]
        shorter = max((bound for bound in [0] + lengths if bound < length))
        for pair in pairs_of([batch]):
            assert shorter < pair_length(pair) <= length
    assert sorted(pairs_of(result)) == sorted(fitting(pairs))


def test_batch_size_multiple_max_batch_size_and_drop_remainder(multi30k):
    folder, pairs = multi30k
    result = batches(translation_dataset(
        files_of(folder), 256, max_length=MAX_LENGTH, batch_size_multiple=4,
        max_batch_size=12, drop_remainder=True, shuffle=False))
    assert result
    for batch in result:
        rows, length = batch["inputs"].shape
        assert rows % 4 == 0 and rows == min(256 // length, 12) // 4 * 4
    kept = collections.Counter(pairs_of(result))
    assert kept <= collections.Counter(fitting(pairs)) and sum(kept.values()) < len(fitting(pairs))


def test_evaluation_returns_every_pair_once_in_a_fixed_order(multi30k):
    folder, pairs = multi30k
    build = lambda: translation_dataset(  # noqa: E731
        files_of(folder), BUDGET, max_length=MAX_LENGTH, evaluation=True)
    dataset = build()
    first, second, rebuilt = (batches(dataset), batches(dataset), batches(build()))
    order = pairs_of(first)
    assert collections.Counter(order) == collections.Counter(pairs)  # long ones too
    assert pairs_of(second) == order and pairs_of(rebuilt) == order
    for batch in first:
        assert batch["inputs"].shape[0] * max(batch["inputs"].shape[1],
                                              batch["targets"].shape[1]) <= BUDGET \
            or batch["inputs"].shape[0] == 1
    # The long pairs come last, one per batch, each side at its own length.
    long_batches = first[-14:]
    for batch, pair in zip(long_batches, pairs_of(long_batches)):
        assert pair_length(pair) > MAX_LENGTH
        assert batch["inputs"].shape == (1, len(pair[0]))
        assert batch["targets"].shape == (1, len(pair[1]))
    assert all(pair_length(pair) <= MAX_LENGTH for pair in pairs_of(first[:-14]))
    with pytest.raises(ValueError, match="evaluation=True reads every pair exactly once"):
        translation_dataset(files_of(folder), BUDGET, evaluation=True, shuffle=True)
    with pytest.raises(ValueError, match="evaluation=True"):
        translation_dataset(files_of(folder), BUDGET, evaluation=True, repeat=True)


def test_same_seed_same_batches_other_seed_other_order(multi30k):
    folder, pairs = multi30k

    def build(seed):
        return translation_dataset(files_of(folder), BUDGET, max_length=MAX_LENGTH,
                                   shuffle_buffer=100, seed=seed)

    dataset = build(7)
    first_epoch, second_epoch = batches(dataset), batches(dataset)
    order = pairs_of(first_epoch)
    assert sorted(order) == sorted(fitting(pairs))
    assert order != pairs_of(second_epoch)  # reshuffled each epoch
    again = build(7)
    for ours, theirs in zip(batches(again), first_epoch, strict=True):
        for name in translation_schema.FEATURE_NAMES:
            np.testing.assert_array_equal(ours[name], theirs[name])
    assert pairs_of(batches(again)) == pairs_of(second_epoch)
    assert pairs_of(batches(build(8))) != order
    # One file: the epochs differ by the pair shuffle alone.
    one_file = translation_dataset(
        str(folder / f"translation-00000-of-{SHARDS:05d}.tfrecord"), BUDGET,
        max_length=MAX_LENGTH, shuffle_buffer=100, seed=7)
    assert pairs_of(batches(one_file)) != pairs_of(batches(one_file))
    unshuffled = pairs_of(batches(translation_dataset(
        files_of(folder), BUDGET, max_length=MAX_LENGTH, shuffle=False)))
    assert order != unshuffled


def test_repeat_reads_the_pairs_that_many_times(multi30k):
    folder, pairs = multi30k
    result = pairs_of(batches(translation_dataset(
        files_of(folder), BUDGET, max_length=MAX_LENGTH, repeat=2, seed=1)))
    assert collections.Counter(result) == collections.Counter(fitting(pairs) * 2)
    endless = translation_dataset(files_of(folder), BUDGET, max_length=MAX_LENGTH,
                                  repeat=True, seed=1)
    assert len(pairs_of(batches(endless.take(80)))) > len(pairs)


@pytest.mark.parametrize("files", ["four", "one"])
def test_two_input_pipelines_partition_the_pairs(multi30k, tmp_path, files):
    folder, pairs = multi30k
    if files == "one":  # Fewer files than pipelines: pairs are sharded.
        pattern = write_shard(tmp_path / "translation-00000-of-00001.tfrecord", pairs)
    else:  # Files are sharded.
        pattern = files_of(folder)
    shares = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=pipeline, num_replicas_in_sync=2)
        shares.append(collections.Counter(pairs_of(batches(translation_dataset(
            pattern, BUDGET, max_length=MAX_LENGTH, seed=None, input_context=context)))))
    assert all(sum(share.values()) > 100 for share in shares)
    assert shares[0] + shares[1] == collections.Counter(fitting(pairs))
    evaluation = [collections.Counter(pairs_of(batches(translation_dataset(
        pattern, BUDGET, max_length=MAX_LENGTH, evaluation=True,
        num_input_pipelines=2, input_pipeline_id=pipeline)))) for pipeline in range(2)]
    assert evaluation[0] + evaluation[1] == collections.Counter(pairs)
    with pytest.raises(ValueError, match="input_pipeline_id must be in"):
        translation_dataset(pattern, BUDGET, max_length=MAX_LENGTH,
                            num_input_pipelines=2, input_pipeline_id=2)


def test_long_pairs_raise_when_asked(multi30k):
    folder, _ = multi30k
    dataset = translation_dataset(files_of(folder), BUDGET, max_length=MAX_LENGTH,
                                  long_pairs="raise", shuffle=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"longer than max_length={MAX_LENGTH}"):
        batches(dataset)
    fine = translation_dataset(files_of(folder), BUDGET, max_length=64,
                               long_pairs="raise", shuffle=False)
    assert len(pairs_of(batches(fine))) == PAIRS


def test_gzip_shards_are_read(multi30k, tmp_path):
    _, pairs = multi30k
    named = write_shard(tmp_path / "a.tfrecord.gz", pairs[:10], "GZIP")
    unnamed = write_shard(tmp_path / "b.tfrecord", pairs[10:20], "GZIP")
    write_shard(tmp_path / "c.tfrecord", pairs[20:30])
    with open(unnamed, "rb") as file:
        assert file.read(2) == b"\x1f\x8b"
    with gzip.open(named, "rb") as file:
        assert file.read(1)

    def read(pattern, **options):
        return collections.Counter(pairs_of(batches(translation_dataset(
            pattern, BUDGET, max_length=64, evaluation=True, **options))))

    assert read(unnamed) == collections.Counter(pairs[10:20])  # from the magic
    assert read(unnamed, compression="GZIP") == collections.Counter(pairs[10:20])
    assert read(str(tmp_path / "*")) == collections.Counter(pairs[:30])
    with pytest.raises(ValueError, match="compression must be"):
        read(named, compression="bz2")


def test_errors_say_what_to_do(multi30k, tmp_path):
    folder, _ = multi30k
    missing = str(tmp_path / "nothing" / "*.tfrecord")
    with pytest.raises(FileNotFoundError, match="python -m pipelines.translation_data"):
        translation_dataset(missing, BUDGET, max_length=MAX_LENGTH)
    other = tmp_path / "pretraining.tfrecord"
    with tf.io.TFRecordWriter(str(other)) as writer:
        writer.write(pretraining_schema.serialize_instance(
            [2, 10, 3], [0, 0, 0], [], [], False, 8, 2))
    with pytest.raises(ValueError, match=r"does not hold translation pairs"):
        translation_dataset(str(other), BUDGET, max_length=MAX_LENGTH)
    with pytest.raises(ValueError, match="Raise max_tokens_per_batch to at least 256"):
        translation_dataset(files_of(folder), 255, max_length=256)
    with pytest.raises(ValueError, match="long_pairs must be"):
        translation_dataset(files_of(folder), BUDGET, MAX_LENGTH, long_pairs="keep")
