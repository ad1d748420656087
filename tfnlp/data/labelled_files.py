"""Labelled files: reading CSV, TSV and JSON Lines files of texts and labels.

Three kinds of rows: a text (or a text pair) and a label
(`read_classification`), `{"tokens", "tags"}` (`read_token_classification`),
and SQuAD-like `{"context", "question", "answer_start", "answer_text"}`
(`read_spans`). A bad row (missing text or label, a label that is not in the label list, a
malformed JSON line) is skipped and counted in a `ReadReport`, whose
`summary()` says how many of each. Fine-tuning and the distillation data
job read their labelled files with these functions.
"""

import collections
import csv
import dataclasses
import json

import tensorflow as tf

from tfnlp.command_line import UsageError


@dataclasses.dataclass
class ReadReport:
    """What reading one data file gave: rows read, kept, and skipped by reason.

    Attributes:
        path: the file.
        rows: rows (lines or records) read.
        kept: examples kept.
        skipped: reason -> number of rows skipped for it.
    """

    path: str
    rows: int = 0
    kept: int = 0
    skipped: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def skip(self, reason):
        self.skipped[reason] += 1

    @property
    def skipped_total(self):
        return sum(self.skipped.values())

    def summary(self):
        """One line: `PATH: read N rows, kept K, skipped S (2 missing label, ...)`."""
        line = f"{self.path}: read {self.rows} rows, kept {self.kept}, skipped {self.skipped_total}"
        if self.skipped:
            reasons = ", ".join(f"{count} {reason}" for reason, count in self.skipped.most_common())
            line += f" ({reasons})"
        return line

    def to_dict(self):
        return {"path": self.path, "rows": self.rows, "kept": self.kept,
                "skipped": dict(self.skipped)}


def _file_format(path):
    lowered = path.lower()
    for suffix, name in ((".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl"),
                         (".json", "jsonl")):
        if lowered.endswith(suffix):
            return name
    raise UsageError(
        f"Cannot tell the format of {path!r} from its name. Name the file "
        "*.csv (comma-separated, with a header row), *.tsv (tab-separated, "
        "with a header row) or *.jsonl (one JSON object per line)."
    )


def read_records(path, report):
    """Yields the rows of a CSV, TSV or JSONL file as dicts.

    CSV and TSV files need a header row (the column names). A JSONL line
    that is not a JSON object is counted in `report` as "malformed JSON"
    and skipped; blank lines are ignored.

    Args:
        path: the file (`tf.io.gfile` paths work too).
        report: the `ReadReport` that counts the rows.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(
            f"The data file {path!r} does not exist. Pass an existing CSV, "
            "TSV or JSONL file to --train_data / --eval_data."
        )
    file_format = _file_format(path)
    with tf.io.gfile.GFile(path, "r") as file:
        if file_format == "jsonl":
            for line in file:
                if not line.strip():
                    continue
                report.rows += 1
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    report.skip("malformed JSON")
                    continue
                if not isinstance(record, dict):
                    report.skip("malformed JSON")
                    continue
                yield record
        else:
            delimiter = "," if file_format == "csv" else "\t"
            reader = csv.DictReader(file, delimiter=delimiter)
            for row in reader:
                report.rows += 1
                yield row


def _text(value):
    """`value` as a stripped string, or "" when absent."""
    if value is None:
        return ""
    return str(value).strip()


@dataclasses.dataclass
class TextColumns:
    """Which columns hold the text of a classification example.

    Attributes:
        text: the column of the text (or of its first segment).
        text_pair: the column of the second segment; "" for single texts.
        label: the column of the label.
    """

    text: str = "text"
    text_pair: str = ""
    label: str = "label"

    def resolved(self, fields):
        """These columns, or text_a/text_b when the default "text" is absent.

        Args:
            fields: the column names of the file's first row.
        """
        if self.text == "text" and "text" not in fields and "text_a" in fields:
            pair = self.text_pair or ("text_b" if "text_b" in fields else "")
            return TextColumns("text_a", pair, self.label)
        return self


def read_classification(path, columns=TextColumns(), labels=None):
    """Reads classification examples.

    Args:
        path: a CSV, TSV or JSONL file.
        columns: the `TextColumns` (defaults: "text", no pair, "label"; a
            file without "text" but with "text_a" (and "text_b") is read as
            single texts (pairs) from those).
        labels: the label list; a row whose label is not in it is skipped
            ("unknown label"). None: every non-empty label is kept (for
            discovering the label list from the training file).

    Returns:
        `(examples, report)`: a list of `(text, text_pair, label)` string
        tuples (`text_pair` "" without a pair column) and the `ReadReport`.
    """
    report = ReadReport(path)
    examples = []
    known = None if labels is None else set(labels)
    resolved = None
    for record in read_records(path, report):
        if resolved is None:
            resolved = columns.resolved(record.keys())
            missing = [name for name in (resolved.text, resolved.label, resolved.text_pair)
                       if name and name not in record]
            if missing:
                raise UsageError(
                    f"{path}: no column {', '.join(map(repr, missing))} in the first "
                    f"row, whose columns are {sorted(record)}. Name the text and "
                    "label columns with --text_column, --text_pair_column and "
                    "--label_column."
                )
        text = _text(record.get(resolved.text))
        text_pair = _text(record.get(resolved.text_pair)) if resolved.text_pair else ""
        label = _text(record.get(resolved.label))
        if not text:
            report.skip("missing text")
        elif resolved.text_pair and not text_pair:
            report.skip("missing text pair")
        elif not label:
            report.skip("missing label")
        elif known is not None and label not in known:
            report.skip("unknown label")
        else:
            examples.append((text, text_pair, label))
    report.kept = len(examples)
    return examples, report


def read_token_classification(path, labels=None):
    """Reads `{"tokens": [...], "tags": [...]}` JSON lines.

    Args:
        path: a JSONL file.
        labels: the tag list; a row with a tag not in it is skipped
            ("unknown tag"). None: every tag is kept.

    Returns:
        `(examples, report)`: a list of `(words, tags)` pairs of string
        lists, and the `ReadReport`.
    """
    report = ReadReport(path)
    examples = []
    known = None if labels is None else set(labels)
    for record in read_records(path, report):
        words, tags = record.get("tokens"), record.get("tags")
        if not isinstance(words, list) or not words:
            report.skip("missing tokens")
        elif not isinstance(tags, list) or len(tags) != len(words):
            report.skip("tags not one per token")
        else:
            words = [_text(word) for word in words]
            tags = [_text(tag) for tag in tags]
            if not all(words) or not all(tags):
                report.skip("empty token or tag")
            elif known is not None and not known.issuperset(tags):
                report.skip("unknown tag")
            else:
                examples.append((words, tags))
    report.kept = len(examples)
    return examples, report


def read_spans(path):
    """Reads SQuAD-like `{"context", "question", "answer_start", "answer_text"}` lines.

    A row whose `answer_text` is not found at `answer_start` in the context
    is skipped ("answer not at answer_start"). Whether the truncation to
    the model's sequence length keeps the answer is checked after tokenizing.

    Returns:
        `(examples, report)`: a list of `(context, question, answer_start,
        answer_text)` tuples and the `ReadReport`.
    """
    report = ReadReport(path)
    examples = []
    for record in read_records(path, report):
        context, question = record.get("context"), record.get("question")
        answer, start = record.get("answer_text"), record.get("answer_start")
        if not isinstance(context, str) or not context.strip():
            report.skip("missing context")
        elif not isinstance(question, str) or not question.strip():
            report.skip("missing question")
        elif not isinstance(answer, str) or not answer.strip():
            report.skip("missing answer")
        elif isinstance(start, bool) or not isinstance(start, int):
            report.skip("missing answer_start")
        elif context[start:start + len(answer)] != answer:
            report.skip("answer not at answer_start")
        else:
            examples.append((context, question, start, answer))
    report.kept = len(examples)
    return examples, report


def discover_labels(values):
    """The sorted distinct labels of `values`."""
    return sorted(set(values))


def split_labels(text):
    """The labels of a comma-separated `--labels` value."""
    labels = [label.strip() for label in text.split(",") if label.strip()]
    if len(set(labels)) != len(labels):
        raise UsageError(f"--labels={text!r} names a label twice.")
    return labels
