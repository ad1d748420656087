"""Padding of tfnlp's token-budget translation batches against plain batching.

    python -m benchmarks.translation_batching [--source_file=../shared/data/mt/train.en
        --target_file=../shared/data/mt/train.de --max_tokens_per_batch=4096
        --max_length=128 --vocab_size=8000 --seed=1]

Tokenizes Multi30k En-De (29,000 training pairs) and writes the pairs as
translation records (`tfnlp.data.translation_schema`, 4 shards in a
temporary directory, pairs longer than `--max_length` dropped as the Beam
job drops them), then reads one shuffled epoch, in the same run, with

- `tfnlp.data.translation_dataset`, batches of at most
  `--max_tokens_per_batch` padded positions per side, padded to the bucket
  length (the default) and to the longest in the batch;
- the reference: plain batches of the same number of pairs (the mean of
  tfnlp's bucket-padded batches, rounded), from the same shuffled stream
  (`shuffle` with the same buffer and seed), `padded_batch` to the longest
  pair of each batch on each side;
- padding every pair to `--max_length` (computed: every batch holds
  `pairs * max_length` positions per side).

The padding share is padded positions / all positions, source and target
together. "Positions per token" is all positions / real tokens (the compute
a step spends per real token, for layers that cost by position); the ratio
is tfnlp's over the reference's.

Two length measures, one after the other:

- "sentencepiece": the ids of a shared 8,000-piece unigram SentencePiece
  model learned from the training text the Beam job's way
  (`pipelines.sentencepiece_model.train_sentencepiece`) and tokenized with
  `tfnlp.text.SentencePieceTokenizer` (what `python -m
  pipelines.translation_data --shared_vocab` writes); skipped, with a
  note, when those modules cannot be imported;
- "words x 1.3": each side's whitespace word count times 1.3, rounded, plus
  EOS: a common proxy for subword lengths.

The seconds of one epoch (reading, parsing, batching; on a shared CPU,
noisy) are reported for information. The whole run takes about 20 s on 2
CPU cores. Prints a table and writes JSON (`--output`, default
benchmarks/results/translation_batching.json) whose headline figures are,
for each length measure, the padding share and the positions per token of
tfnlp's bucket-length batches against the reference's. Relative paths are
resolved from the repository root.
"""

import argparse
import math
import os
import shutil
import tempfile
import time

import numpy as np
import tensorflow as tf

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from benchmarks.translation_inputs import TRAIN_SOURCE, TRAIN_TARGET
from tfnlp.data import translation_schema
from tfnlp.data.translation_reader import bucket_lengths, translation_dataset

SHARDS = 4
SHUFFLE_BUFFER = 10000
WORDS_TO_SUBWORDS = 1.3


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return file.read().splitlines()


def sentencepiece_pairs(sources, targets, vocab_size):
    """The pairs' ids under a shared SentencePiece model learned from them."""
    from pipelines.sentencepiece_model import SentencePieceOptions, train_sentencepiece
    from tfnlp.text import SentencePieceTokenizer

    proto = train_sentencepiece(sources + targets, SentencePieceOptions(vocab_size=vocab_size))
    tokenizer = SentencePieceTokenizer(proto=proto)

    def ids(lines):
        return [row.tolist() for row in
                tokenizer.tokenize(tf.constant(lines), add_eos=True).numpy()]

    return list(zip(ids(sources), ids(targets)))


def word_proxy_pairs(sources, targets):
    """Pairs of stand-in ids (4, 5, ...) of round(words x 1.3) + EOS each."""
    def ids(line):
        length = max(1, round(len(line.split()) * WORDS_TO_SUBWORDS))
        return [4 + index for index in range(length)] + [translation_schema.EOS_ID]

    return [(ids(source), ids(target)) for source, target in zip(sources, targets)]


def write_shards(pairs, directory):
    paths = [os.path.join(directory, f"translation-{shard:05d}-of-{SHARDS:05d}.tfrecord")
             for shard in range(SHARDS)]
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    for index, (inputs, targets) in enumerate(pairs):
        writers[index % SHARDS].write(translation_schema.serialize_pair(inputs, targets))
    for writer in writers:
        writer.close()
    return paths


def measure(dataset):
    """Padding figures of one pass over a dataset of batches."""
    start = time.perf_counter()
    batches = pairs = real = positions = 0
    shapes = set()
    largest = 0
    for batch in dataset.as_numpy_iterator():
        inputs, targets = batch["inputs"], batch["targets"]
        batches += 1
        pairs += inputs.shape[0]
        real += int(np.count_nonzero(inputs)) + int(np.count_nonzero(targets))
        positions += inputs.size + targets.size
        largest = max(largest, inputs.shape[0] * max(inputs.shape[1], targets.shape[1]))
        shapes.add((inputs.shape, targets.shape))
    seconds = time.perf_counter() - start
    return {
        "batches": batches,
        "pairs": pairs,
        "mean_pairs_per_batch": pairs / batches,
        "real_tokens": real,
        "positions": positions,
        "padding_share": 1 - real / positions,
        "positions_per_token": positions / real,
        "largest_batch_positions_per_side": largest,
        "distinct_shapes": len(shapes),
        "seconds": seconds,
    }


def plain_batches(files, batch_size, seed):
    """The reference: the same shuffled pairs, `batch_size` a batch, padded to
    the longest of the batch on each side."""
    dataset = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=seed)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=len(files),
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.shuffle(SHUFFLE_BUFFER, seed=seed)
    dataset = dataset.map(translation_schema.parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.padded_batch(batch_size).prefetch(tf.data.AUTOTUNE)


def run_case(pairs, flags, directory):
    kept = [pair for pair in pairs if max(len(pair[0]), len(pair[1])) <= flags.max_length]
    files = write_shards(kept, directory)
    results = {}
    for name, pad_to_bucket_boundary in (("tfnlp_bucket_length", True),
                                         ("tfnlp_longest", False)):
        results[name] = measure(translation_dataset(
            files, flags.max_tokens_per_batch, max_length=flags.max_length,
            pad_to_bucket_boundary=pad_to_bucket_boundary,
            shuffle_buffer=SHUFFLE_BUFFER, seed=flags.seed))
    batch_size = round(results["tfnlp_bucket_length"]["mean_pairs_per_batch"])
    results["reference_plain_batches"] = measure(plain_batches(files, batch_size, flags.seed))
    real = results["reference_plain_batches"]["real_tokens"]
    positions = 2 * len(kept) * flags.max_length
    results["padded_to_max_length"] = {
        "batches": math.ceil(len(kept) / batch_size), "pairs": len(kept),
        "mean_pairs_per_batch": batch_size, "real_tokens": real, "positions": positions,
        "padding_share": 1 - real / positions, "positions_per_token": positions / real,
        "distinct_shapes": 2,
    }
    lengths = [max(len(pair[0]), len(pair[1])) for pair in kept]
    summary = {
        "pairs": len(pairs), "pairs_kept": len(kept),
        "mean_source_length": float(np.mean([len(pair[0]) for pair in kept])),
        "mean_target_length": float(np.mean([len(pair[1]) for pair in kept])),
        "longest_pair": max(lengths), "reference_batch_size": batch_size,
        "buckets": len(bucket_lengths(flags.max_length)),
    }
    reference = results["reference_plain_batches"]
    ratios = {
        name: {
            "padding_share": results[name]["padding_share"] / reference["padding_share"],
            "positions_per_token": (results[name]["positions_per_token"]
                                    / reference["positions_per_token"]),
        }
        for name in ("tfnlp_bucket_length", "tfnlp_longest", "padded_to_max_length")
    }
    return {"summary": summary, "results": results, "ratios_to_reference": ratios}


def print_case(measure_name, case, flags):
    summary = case["summary"]
    print(f"\n{measure_name}: {summary['pairs_kept']} of {summary['pairs']} pairs "
          f"(longest {summary['longest_pair']}, mean source {summary['mean_source_length']:.1f}, "
          f"target {summary['mean_target_length']:.1f}), max_tokens_per_batch="
          f"{flags.max_tokens_per_batch}, max_length={flags.max_length}, "
          f"{summary['buckets']} buckets")
    names = {
        "tfnlp_bucket_length": "tfnlp, padded to the bucket length",
        "tfnlp_longest": "tfnlp, padded to the longest",
        "reference_plain_batches":
            f"reference: {summary['reference_batch_size']} pairs a batch, longest",
        "padded_to_max_length": f"padded to max_length ({flags.max_length})",
    }
    header = (f"{'batching':<44} {'batches':>7} {'pairs/batch':>11} {'padding':>8} "
              f"{'pos/token':>9} {'vs ref':>7} {'shapes':>6} {'seconds':>7}")
    print(header)
    print("-" * len(header))
    reference = case["results"]["reference_plain_batches"]
    for key, name in names.items():
        result = case["results"][key]
        ratio = result["positions_per_token"] / reference["positions_per_token"]
        seconds = f"{result['seconds']:7.1f}" if "seconds" in result else f"{'-':>7}"
        print(f"{name:<44} {result['batches']:>7d} {result['mean_pairs_per_batch']:>11.1f} "
              f"{100 * result['padding_share']:>7.1f}% {result['positions_per_token']:>9.2f} "
              f"{ratio:>6.2f}x {result['distinct_shapes']:>6d} {seconds}")


def figures(measure_name, case):
    """tfnlp's bucket-length batches against the plain batches of the same
    pairs: padding share (in %) and positions per real token."""
    ours = case["results"]["tfnlp_bucket_length"]
    reference = case["results"]["reference_plain_batches"]
    reference_name = (f"plain padded_batch of {case['summary']['reference_batch_size']} pairs, "
                      f"padded to the longest")
    return [
        figure(f"padding share, token-budget batches ({measure_name} lengths)",
               100 * ours["padding_share"], "%", reference=reference_name,
               reference_value=100 * reference["padding_share"], higher_is_better=False),
        figure(f"positions per real token, token-budget batches ({measure_name} lengths)",
               ours["positions_per_token"], "positions/token", reference=reference_name,
               reference_value=reference["positions_per_token"], higher_is_better=False),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source_file", default=TRAIN_SOURCE)
    parser.add_argument("--target_file", default=TRAIN_TARGET)
    parser.add_argument("--max_tokens_per_batch", type=int, default=4096)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", default="benchmarks/results/translation_batching.json")
    flags = parser.parse_args(argv)
    flags.source_file = from_root(flags.source_file)
    flags.target_file = from_root(flags.target_file)

    sources, targets = read_lines(flags.source_file), read_lines(flags.target_file)
    if len(sources) != len(targets):
        raise ValueError(f"{flags.source_file} has {len(sources)} lines but "
                         f"{flags.target_file} has {len(targets)}; give aligned files.")
    measures, notes = {}, []
    try:
        measures["sentencepiece"] = sentencepiece_pairs(sources, targets, flags.vocab_size)
    except ImportError as error:
        notes.append(f"sentencepiece lengths skipped: {error}")
        print(notes[-1])
    measures["words x 1.3"] = word_proxy_pairs(sources, targets)

    cases = {}
    for name, pairs in measures.items():
        directory = tempfile.mkdtemp(prefix="translation_batching_")
        try:
            cases[name] = run_case(pairs, flags, directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        print_case(name, cases[name], flags)
    print("\npadding = padded positions / all positions (source and target); pos/token = "
          "all positions / real tokens; vs ref = pos/token over the reference's.")

    report = {
        "parameters": {key: value for key, value in vars(flags).items() if key != "output"},
        "length_measures": cases,
        "notes": notes,
        "versions": {"tensorflow": tf.__version__},
        FIGURES_KEY: [row for name, case in cases.items() for row in figures(name, case)],
    }
    write_report(report, flags.output)
    return report


if __name__ == "__main__":
    main()
