"""Two `multi_worker` training processes read a job's shards: every record
once per epoch, split by file or, with fewer files than workers, by data."""

import collections
import json
import subprocess
import sys

import pytest
import tensorflow as tf

from pipelines import pretraining_data
from tests.conftest import REPOSITORY
from tests.trainer import helpers
from tfnlp.data import pretraining_schema

VOCAB = "vocab/bert-base-uncased-vocab.txt"
PER_REPLICA_BATCH = 4
EPOCHS = 3

# Each worker: the pretraining task's training input on the multi_worker
# strategy, for each glob of argv; prints the input_ids of every example
# its replica read at each step, one JSON line per glob.
WORKER = """
import json, sys
from trainer.distribution import get_strategy
from trainer.tasks import bert_pretraining

steps, vocab_file, globs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
strategy = get_strategy("multi_worker")
for glob in globs:
    flags = bert_pretraining.parse_flags([
        f"--train_data={glob}", f"--vocab_file={vocab_file}", "--model_dir=unused",
        "--global_batch_size=%d", "--train_steps=1", "--warmup_steps=0", "--seed=7"])
    bert_pretraining.set_flags_from_inputs(flags)
    dataset = strategy.distribute_datasets_from_function(bert_pretraining.dataset_function(
        flags, flags.global_batch_size, training=True))
    read = []
    for _, batch in zip(range(steps), dataset):
        [ids] = strategy.experimental_local_results(batch["input_ids"])
        read.append(ids.numpy().tolist())
    print(json.dumps(read), flush=True)
""" % (2 * PER_REPLICA_BATCH)


def key(input_ids):
    return tuple(token for token in input_ids if token)


@pytest.fixture(scope="module")
def shards(shared_data_dir, tmp_path_factory):
    """Four shards of the job on the first lines of the Gutenberg books, and
    each record's key (its input ids)."""
    root = tmp_path_factory.mktemp("reading")
    with open(shared_data_dir / "mono/gutenberg-16-books.txt", encoding="utf-8") as file:
        text = "".join(line for _, line in zip(range(1200), file))
    (root / "books.txt").write_text(text, encoding="utf-8")
    output = root / "output"
    pretraining_data.main([f"--input_file={root / 'books.txt'}",
                           f"--vocab_file={shared_data_dir / VOCAB}",
                           f"--output_dir={output}", "--dupe_factor=1", "--num_shards=4"])
    keys = {}
    for path in sorted(output.glob("pretraining-*")):
        records = [record.numpy() for record in tf.data.TFRecordDataset(str(path))]
        parsed = pretraining_schema.parse_examples(tf.constant(records), 128, 20)
        keys[path.name] = [key(row) for row in parsed["input_ids"].numpy().tolist()]
    return output, keys


def read_on_two_workers(globs, steps, vocab_file):
    """What each of two multi_worker processes read, per glob: a list (one
    per worker) of the record keys in the order read."""
    processes = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(steps), str(vocab_file), *globs],
                         cwd=REPOSITORY, env=helpers.environment(TF_CONFIG=tf_config),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tf_config in helpers.multi_worker_configs(2)]
    outputs = [process.communicate(timeout=240) for process in processes]
    for process, (_, errors) in zip(processes, outputs):
        assert process.returncode == 0, errors[-4000:]
    per_worker = [[json.loads(line) for line in out.splitlines() if line.startswith("[")]
                  for out, _ in outputs]
    return [[[key(row) for batch in steps_read for row in batch] for steps_read in (a, b)]
            for a, b in zip(*per_worker)]


def epochs_of(stream, size):
    """`stream` cut into its whole epochs of `size` records."""
    return [stream[start:start + size] for start in range(0, len(stream) - size + 1, size)]


def test_each_record_is_read_once_per_epoch_by_file_or_by_data(shards, shared_data_dir):
    output, keys = shards
    everything = [record for shard in keys.values() for record in shard]
    assert len(set(everything)) == len(everything) > 40, "records must be told apart"
    # Enough for EPOCHS of a worker that reads everything.
    steps = -(-EPOCHS * len(everything) // PER_REPLICA_BATCH)
    by_file, by_data = read_on_two_workers(
        [str(output / "pretraining-*"), str(output / sorted(keys)[0])], steps,
        shared_data_dir / VOCAB)

    # Four files: each worker reads its own files, each record once an epoch.
    seen = [set(stream) for stream in by_file]
    assert not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(everything)
    for stream, records in zip(by_file, seen):
        epochs = epochs_of(stream, len(records))
        assert len(epochs) >= EPOCHS
        assert all(collections.Counter(epoch) == collections.Counter(records)
                   for epoch in epochs)
        assert epochs[0] != epochs[1], "each epoch is shuffled anew"

    # One file: both read it in the same order and keep every other batch,
    # so their batches in turn are one reader's epochs.
    shard = keys[sorted(keys)[0]]
    turns = [record for step in range(steps) for stream in by_data
             for record in stream[step * PER_REPLICA_BATCH:(step + 1) * PER_REPLICA_BATCH]]
    epochs = epochs_of(turns, len(shard))
    assert len(epochs) >= EPOCHS
    assert all(collections.Counter(epoch) == collections.Counter(shard) for epoch in epochs)
    assert not set(by_data[0][:PER_REPLICA_BATCH]) & set(by_data[1][:PER_REPLICA_BATCH])
