"""Which book is a sentence from? Fine-tuning with and without pretraining.

    python -m benchmarks.book_classification [--pretrained_model_dir=PRETRAINING_RUN \\
        --pretrain_steps=1000 --work_dir=WORK_DIR --epochs=3 \\
        --learning_rate=2e-4 --max_seq_length=64 --global_batch_size=32]

The acceptance experiment of fine-tuning: a small real classification task
assembled from the shared data. `../shared/data/mono/gutenberg-16-books.txt`
holds 17 public-domain books (blank line between books, one pre-tokenized
sentence per line, the first line of each the title). Eight books by eight
different authors are picked (`--books`, indices in the file); their
sentences of at least `--min_words` words (title lines and sentences found in
two books left out) are ordered by the MD5 of their text, a deterministic
shuffle, and the first `--test_per_book` of each book go to the test set,
the next `--train_per_book` to the training set. The CSVs (`text`, `label`)
are written to `--work_dir`.

Methods, all on the same split, reporting test accuracy:

- bag-of-words baselines, in numpy (scikit-learn is not a dependency of the
  project): multinomial naive Bayes (add-one smoothing) and softmax
  (logistic) regression with L2, on lower-cased word counts of the training
  vocabulary;
- `trainer.finetune --task=classification` (in-process) from the
  pretraining run's latest checkpoint, and from scratch with the same
  config, steps, learning rate and seed.

The pretraining run is `--pretrained_model_dir` when given. Without it, one
is made first, in-process, in `--work_dir`: `pipelines.pretraining_data`
writes masked-LM and next-sentence instances of `--max_seq_length` tokens
from the whole `--data_file` (dupe factor 1) to `WORK_DIR/pretraining_data/`,
and `trainer.pretrain` trains the `--config` BERT on them for
`--pretrain_steps` steps of `--global_batch_size` in `WORK_DIR/pretraining/`
(both folders started afresh).

Caveat, also in the output: the pretraining data (of the run made here, as
of the acceptance run) is built from the same Gutenberg file, so
pretraining saw these sentences (test ones included), but never their
labels (which book). The gain of pretraining here is what it learned about
this text, a transductive setting, not transfer to unseen text.

Prints a table and writes JSON (`--output`, default
`benchmarks/results/book_classification.json`) whose "figures" are the test
accuracy fine-tuned from pretraining against the run from scratch and
against the best bag-of-words baseline. With the defaults (the tiny config,
sequences of 64, 1,000 pretraining steps, 3 epochs) it runs in about 10
minutes on two busy cores, 8 of them pretraining; `--pretrain_steps=500` in
about 6; `--pretrain_steps=20 --train_per_book=50 --test_per_book=25
--epochs=1` in about 70 seconds.
"""

import argparse
import collections
import csv
import hashlib
import os
import shutil
import tempfile
import time

import numpy as np

from benchmarks.reporting import FIGURES_KEY, figure, from_root, write_report

# Emma (Austen), Alice (Carroll), The Man Who Was Thursday (Chesterton), The
# Parent's Assistant (Edgeworth), Moby Dick (Melville), Paradise Lost
# (Milton), Hamlet (Shakespeare), Leaves of Grass (Whitman).
DEFAULT_BOOKS = "0,6,9,10,11,12,14,16"
# BERT's share of masked tokens (20 of 128).
MASKED_LM_PROB = 0.15
CAVEAT = (
    "The pretraining data is built from the same Gutenberg file: pretraining saw "
    "these sentences (test ones included) but not their labels (which book)."
)


def read_books(path):
    """The books of the file: a list of `(title, sentences)`."""
    books, lines = [], []
    with open(path, encoding="utf-8") as file:
        for line in list(file) + [""]:
            line = line.strip()
            if line:
                lines.append(line)
            elif lines:
                books.append((lines[0], lines[1:]))
                lines = []
    return books


def _slug(title):
    """"[ The Tragedie of Hamlet by William Shakespeare 1599 ]" -> "tragedie_of_hamlet"."""
    name = title.strip("[] ").split(" by ")[0].lower().replace(" 's", "s")
    words = "".join(ch if ch.isalnum() else " " for ch in name).split()
    return "_".join(words[1:] if words[0] == "the" and len(words) > 1 else words)


def build_split(books, book_indices, min_words, train_per_book, test_per_book):
    """`(train, test, labels)`: lists of `(sentence, label)` and the labels.

    Raises:
        ValueError: if a book has fewer usable sentences than the split needs.
    """
    owners = collections.defaultdict(set)
    for index, (_, sentences) in enumerate(books):
        for sentence in sentences:
            owners[sentence].add(index)
    train, test, labels = [], [], []
    for index in book_indices:
        title, sentences = books[index]
        label = _slug(title)
        labels.append(label)
        usable = sorted(
            {s for s in sentences if len(s.split()) >= min_words and len(owners[s]) == 1},
            key=lambda s: hashlib.md5(s.encode("utf-8")).hexdigest(),
        )
        if len(usable) < train_per_book + test_per_book:
            raise ValueError(
                f"Book {index} ({title}) has {len(usable)} sentences of >= {min_words} "
                f"words, fewer than --test_per_book + --train_per_book = "
                f"{test_per_book + train_per_book}. Pick another book or fewer sentences."
            )
        test += [(s, label) for s in usable[:test_per_book]]
        train += [(s, label) for s in usable[test_per_book:test_per_book + train_per_book]]
    return train, test, labels


def write_csv(rows, path):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        writer.writerows(rows)


# ---------------------------------------------------------------------------
# Bag-of-words baselines


def bag_of_words(train, test):
    """Count matrices `(train, test)` over the training vocabulary (lower-cased words)."""
    vocabulary = {}
    for sentence, _ in train:
        for word in sentence.lower().split():
            vocabulary.setdefault(word, len(vocabulary))

    def counts(rows):
        matrix = np.zeros([len(rows), len(vocabulary)], np.float32)
        for row, (sentence, _) in enumerate(rows):
            for word in sentence.lower().split():
                if word in vocabulary:
                    matrix[row, vocabulary[word]] += 1
        return matrix

    return counts(train), counts(test)


def naive_bayes(train_x, train_y, test_x, classes, smoothing=1.0):
    """Test predictions of multinomial naive Bayes with add-`smoothing` counts."""
    log_prior = np.log(np.bincount(train_y, minlength=classes) / len(train_y))
    word_counts = np.stack([train_x[train_y == c].sum(0) for c in range(classes)]) + smoothing
    log_likelihood = np.log(word_counts / word_counts.sum(1, keepdims=True))
    return np.argmax(test_x @ log_likelihood.T + log_prior, axis=1)


def logistic_regression(train_x, train_y, test_x, classes, l2=1e-4, steps=500,
                        learning_rate=1.0):
    """Test predictions of softmax regression on log(1 + counts), by gradient descent."""
    train_x, test_x = np.log1p(train_x), np.log1p(test_x)
    weights = np.zeros([train_x.shape[1], classes], np.float32)
    bias = np.zeros([classes], np.float32)
    targets = np.eye(classes, dtype=np.float32)[train_y]
    for _ in range(steps):
        logits = train_x @ weights + bias
        logits -= logits.max(1, keepdims=True)
        probabilities = np.exp(logits)
        probabilities /= probabilities.sum(1, keepdims=True)
        error = (probabilities - targets) / len(train_y)
        weights -= learning_rate * (train_x.T @ error + l2 * weights)
        bias -= learning_rate * error.sum(0)
    return np.argmax(test_x @ weights + bias, axis=1)


# ---------------------------------------------------------------------------


def pretrain(flags):
    """Pretrains the `--config` BERT on `--data_file`, in WORK_DIR (see the
    module's docstring); returns the pretraining run's model_dir."""
    from pipelines import pretraining_data
    from trainer import pretrain as pretrain_trainer

    data_dir = os.path.join(flags.work_dir, "pretraining_data")
    model_dir = os.path.join(flags.work_dir, "pretraining")
    for directory in (data_dir, model_dir):
        shutil.rmtree(directory, ignore_errors=True)
    vocab_file = from_root(flags.vocab_file)
    steps = flags.pretrain_steps
    max_predictions = max(1, round(flags.max_seq_length * MASKED_LM_PROB))
    stats = pretraining_data.main([
        f"--input_file={from_root(flags.data_file)}", f"--vocab_file={vocab_file}",
        f"--output_dir={data_dir}", f"--do_lower_case={flags.do_lower_case}",
        f"--max_seq_length={flags.max_seq_length}",
        f"--max_predictions_per_seq={max_predictions}", f"--masked_lm_prob={MASKED_LM_PROB}",
        "--dupe_factor=1", f"--random_seed={flags.seed}", "--num_shards=1",
    ])
    print(f"Pretraining on {stats['instances']:,} instances for {steps} steps of "
          f"{flags.global_batch_size} in {model_dir}", flush=True)
    pretrain_trainer.main([
        f"--train_data={os.path.join(data_dir, 'pretraining-*')}", f"--model_dir={model_dir}",
        f"--vocab_file={vocab_file}", f"--do_lower_case={flags.do_lower_case}",
        f"--config={flags.config}", f"--max_seq_length={flags.max_seq_length}",
        f"--max_predictions_per_seq={max_predictions}",
        f"--global_batch_size={flags.global_batch_size}", f"--train_steps={steps}",
        f"--learning_rate={flags.pretrain_learning_rate}", f"--warmup_steps={steps // 10}",
        f"--log_every_steps={max(1, steps // 10)}", f"--checkpoint_every_steps={steps}",
        "--attention_images_every_steps=0", f"--seed={flags.seed}",
    ])
    return model_dir


def pretraining_run(flags):
    """`--pretrained_model_dir`, or one pretrained here with `pretrain`; and
    the seconds that took (None when given)."""
    if flags.pretrained_model_dir:
        return flags.pretrained_model_dir, None
    start = time.perf_counter()
    model_dir = pretrain(flags)
    return model_dir, time.perf_counter() - start


def finetune_accuracy(flags, work_dir, name, init_flags):
    """Runs `trainer.finetune` in-process; returns its results and seconds."""
    from trainer import finetune

    model_dir = os.path.join(work_dir, name)
    arguments = [
        "--task=classification",
        f"--train_data={os.path.join(work_dir, 'train.csv')}",
        f"--eval_data={os.path.join(work_dir, 'test.csv')}",
        f"--model_dir={model_dir}",
        f"--vocab_file={from_root(flags.vocab_file)}",
        f"--do_lower_case={flags.do_lower_case}",
        f"--max_seq_length={flags.max_seq_length}",
        f"--global_batch_size={flags.global_batch_size}",
        f"--epochs={flags.epochs}",
        f"--learning_rate={flags.learning_rate}",
        f"--seed={flags.seed}",
        "--eval_every_epochs=0",
        *init_flags,
    ]
    if flags.train_steps:
        arguments.append(f"--train_steps={flags.train_steps}")
    start = time.perf_counter()
    results = finetune.main(arguments)
    return results, time.perf_counter() - start


def parse_flags(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.book_classification",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data_file", default="../shared/data/mono/gutenberg-16-books.txt")
    parser.add_argument("--vocab_file", default="../shared/data/vocab/bert-base-uncased-vocab.txt")
    parser.add_argument("--do_lower_case", default="true")
    parser.add_argument("--pretrained_model_dir", default="",
                        help="The trainer.pretrain model_dir (latest ckpt-N and config.json); "
                             "empty: pretrain one first, in WORK_DIR/pretraining.")
    parser.add_argument("--config", default="tiny",
                        help="The BertConfig of the pretraining run made without "
                             "--pretrained_model_dir (the run from scratch takes the "
                             "pretraining run's config.json).")
    parser.add_argument("--pretrain_steps", type=int, default=1000,
                        help="Steps of the pretraining run made without --pretrained_model_dir.")
    parser.add_argument("--pretrain_learning_rate", type=float, default=1e-3,
                        help="Its peak learning rate, after a warmup of a tenth of the steps.")
    parser.add_argument("--books", default=DEFAULT_BOOKS,
                        help="Comma-separated indices of the books in --data_file.")
    parser.add_argument("--min_words", type=int, default=6)
    parser.add_argument("--train_per_book", type=int, default=300)
    parser.add_argument("--test_per_book", type=int, default=100)
    parser.add_argument("--work_dir",
                        default=os.path.join(tempfile.gettempdir(), "book_classification"))
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--global_batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train_steps", type=int, default=0,
                        help="Exactly this many steps instead of --epochs.")
    parser.add_argument("--learning_rate", type=float, default=2e-4,
                        help="The peak learning rate of both runs (not tuned).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="benchmarks/results/book_classification.json")
    return parser.parse_args(argv)


def baseline_rows(train, test, labels):
    """The test accuracy and seconds of the bag-of-words baselines."""
    label_ids = {label: index for index, label in enumerate(labels)}
    train_y = np.array([label_ids[label] for _, label in train])
    test_y = np.array([label_ids[label] for _, label in test])
    train_x, test_x = bag_of_words(train, test)
    rows = []
    for name, predict in (("bag of words, naive Bayes", naive_bayes),
                          ("bag of words, logistic regression", logistic_regression)):
        start = time.perf_counter()
        accuracy = float(np.mean(predict(train_x, train_y, test_x, len(labels)) == test_y))
        rows.append({"method": name, "test_accuracy": accuracy,
                     "seconds": time.perf_counter() - start})
    return rows


def bert_rows(flags, pretrained_model_dir):
    """The test accuracy of BERT fine-tuned from the pretraining run's
    latest checkpoint and from scratch with its config.json."""
    import tensorflow as tf

    checkpoint = tf.train.latest_checkpoint(pretrained_model_dir)
    if checkpoint is None:
        raise FileNotFoundError(
            f"No checkpoint in --pretrained_model_dir={pretrained_model_dir}; "
            "pass the model_dir of a trainer.pretrain run that has saved one.")
    scratch_config = os.path.join(pretrained_model_dir, "config.json")
    runs = [(f"BERT fine-tuned from pretraining ({os.path.basename(checkpoint)})",
             "pretrained", [f"--init_checkpoint={pretrained_model_dir}"]),
            ("BERT fine-tuned from scratch", "scratch", [f"--config={scratch_config}"])]
    rows = []
    for name, directory, init_flags in runs:
        results, seconds = finetune_accuracy(flags, flags.work_dir, directory, init_flags)
        rows.append({"method": name, "test_accuracy": results["accuracy"], "seconds": seconds,
                     "steps": results["step"], "init": results["init"]})
    return rows


def headline_figures(baselines, pretrained, scratch):
    """The test accuracy fine-tuned from pretraining (in %) against the run
    from scratch and the best bag-of-words baseline."""
    best_baseline = max(baselines, key=lambda row: row["test_accuracy"])
    return [
        figure("test accuracy, fine-tuned from pretraining",
               100 * pretrained["test_accuracy"], "%",
               reference="BERT fine-tuned from scratch (same config, steps and learning rate)",
               reference_value=100 * scratch["test_accuracy"]),
        figure("test accuracy, fine-tuned from pretraining",
               100 * pretrained["test_accuracy"], "%", reference=best_baseline["method"],
               reference_value=100 * best_baseline["test_accuracy"]),
    ]


def main(argv=None):
    flags = parse_flags(argv)
    books = read_books(from_root(flags.data_file))
    indices = [int(index) for index in flags.books.split(",")]
    train, test, labels = build_split(
        books, indices, flags.min_words, flags.train_per_book, flags.test_per_book)
    os.makedirs(flags.work_dir, exist_ok=True)
    write_csv(train, os.path.join(flags.work_dir, "train.csv"))
    write_csv(test, os.path.join(flags.work_dir, "test.csv"))
    print(f"{len(labels)} books, {len(train)} training and {len(test)} test sentences "
          f"in {flags.work_dir}: {', '.join(labels)}")
    baselines = baseline_rows(train, test, labels)

    model_dir, pretraining_seconds = pretraining_run(flags)
    pretrained, scratch = bert_rows(flags, model_dir)
    rows = [*baselines, pretrained, scratch]

    width = max(len(row["method"]) for row in rows)
    print(f"\n{'method':<{width}}  test accuracy")
    for row in rows:
        print(f"{row['method']:<{width}}  {row['test_accuracy']:.3f}")
    print(f"(chance: {1 / len(labels):.3f})")
    print(f"Note: {CAVEAT}")

    output = {
        "task": "which of the books a sentence comes from",
        "books": labels,
        "train_examples": len(train),
        "test_examples": len(test),
        "pretraining": {"model_dir": model_dir, "seconds": pretraining_seconds},
        "results": rows,
        FIGURES_KEY: headline_figures(baselines, pretrained, scratch),
        "note": CAVEAT,
        "flags": vars(flags),
    }
    write_report(output, flags.output)
    return output


if __name__ == "__main__":
    main()
