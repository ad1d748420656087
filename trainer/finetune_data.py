"""Fine-tuning data: reading CSV/TSV/JSONL files into BERT input batches.

Three tasks (see `trainer.finetune`):

- "classification": rows with a text (or a text pair) and a label, in CSV,
  TSV or JSON Lines. Labels are strings, mapped to class ids through a
  label list (`--labels`, or the sorted labels of the training file).
- "token_classification": JSON Lines of `{"tokens": [words], "tags":
  [tags]}`, one tag per word. The tag of a word goes to its first WordPiece;
  the other pieces, [CLS], [SEP] and padding get weight 0.
- "span": JSON Lines of SQuAD-like `{"context", "question", "answer_start",
  "answer_text"}`, `answer_start` being the character offset of the answer
  in the context. The answer is mapped to the token positions of its first
  and last WordPiece in `[CLS] question [SEP] context [SEP]`.

The files are read in Python (they are small next to pretraining data), row
by row: a bad row (missing text or label, a label that is not in the label
list, a malformed JSON line, an answer that is not at its offset or that
the truncation to `max_seq_length` cuts away) is skipped and counted in a
`ReadReport`, whose `summary()` says how many of each. The tokenization is
then done by `tfnlp.text.BertTokenizer` and `tfnlp.text.pack_inputs`, in
`tf.data` for classification and token classification. Span examples are
tokenized once up front with the same ops (eagerly, in batches), because
whether the answer survives the truncation is only known after tokenizing,
and those examples must be counted and left out before batching.

Every dataset yields `(features, labels, sample_weights)` as
`keras.Model.fit` takes them: `features` the dict of int32 `input_ids`,
`input_mask` and `segment_ids` of shape `[batch, max_seq_length]`;
classification labels `[batch]`; token labels and weights `[batch,
max_seq_length]`; span labels a dict of `start_logits` and `end_logits`
positions `[batch]` (the output names of `BertSpanExtractor`).
"""

import collections
import csv
import dataclasses
import json

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from tfnlp.command_line import UsageError
from tfnlp.models.bert.bert_encoder import ENCODER_INPUTS
from tfnlp.text.packing import pack_inputs
from trainer import length_buckets


TASKS = ("classification", "token_classification", "span")

# The label of a token that has none ([CLS], [SEP], padding, non-first
# WordPieces): its weight is 0, and it is replaced by class 0 in the batch.
IGNORED_LABEL = -1


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


# ---------------------------------------------------------------------------
# Reading files


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
    is skipped ("answer not at answer_start"). The truncation is checked
    later, by `span_dataset`.

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


# ---------------------------------------------------------------------------
# Datasets


def _batches(components, batch_size, training, seed, drop_remainder, lengths=None,
             bucket_widths=None):
    """The examples `components` (a tuple of arrays) shuffled and repeated
    (training), then batched ragged: in input order, or with
    `bucket_widths`, with examples of the same length bucket (`lengths`
    their token counts; see `trainer.length_buckets`)."""
    if bucket_widths:
        components = (*components, lengths)
    dataset = tf.data.Dataset.from_tensor_slices(components)
    if training:
        dataset = dataset.shuffle(10_000, seed=seed, reshuffle_each_iteration=True).repeat()
    if not bucket_widths:
        return dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
    dataset = length_buckets.bucket_batches(
        dataset, lambda *element: element[-1], bucket_widths, batch_size, drop_remainder)
    if not training:  # one pass: its number of batches is known
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(
            length_buckets.bucket_batch_count(lengths, bucket_widths, batch_size,
                                              drop_remainder)))
    return dataset.map(lambda *batch: batch[:-1])


def parallel_map(dataset, encode):
    """`dataset.map(encode)`, in parallel and without AutoGraph.

    `encode` has no Python control flow on tensors; AutoGraph would only
    convert the tokenizer's and tensorflow-text's code, which takes seconds.
    """
    encode = tf.autograph.experimental.do_not_convert(encode)
    return dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def classification_dataset(examples, label_list, tokenizer, max_seq_length, batch_size,
                           training=False, seed=0, drop_remainder=None, bucket_widths=None):
    """The batches of classification examples, tokenized in `tf.data`.

    Args:
        examples: `(text, text_pair, label)` tuples (`read_classification`);
            every label must be in `label_list`.
        label_list: the labels; a label's class id is its index.
        tokenizer: a `tfnlp.text.BertTokenizer`.
        max_seq_length: the length of every packed row.
        batch_size: examples per batch.
        training: shuffle (with `seed`) and repeat forever.
        drop_remainder: drop a last smaller batch; defaults to `training`.
        bucket_widths: `trainer.length_buckets.bucket_widths(...)` to batch
            examples of similar length, each batch `[batch, width]`; None:
            every batch `[batch, max_seq_length]`.

    Returns:
        A `tf.data.Dataset` of `(features, labels)`, labels int32 `[batch]`.
    """
    index = {label: position for position, label in enumerate(label_list)}
    texts = [text for text, _, _ in examples]
    pairs = [pair for _, pair, _ in examples]
    label_ids = np.array([index[label] for _, _, label in examples], np.int32)
    has_pair = any(pairs)
    lengths = (length_buckets.token_counts(tokenizer, texts, pairs, max_seq_length)
               if bucket_widths else None)
    dataset = _batches((texts, pairs, label_ids), batch_size, training, seed,
                       training if drop_remainder is None else drop_remainder,
                       lengths, bucket_widths)

    def encode(text, pair, label):
        segments = [tokenizer.tokenize(text)]
        if has_pair:
            segments.append(tokenizer.tokenize(pair))
        features = pack_inputs(segments, max_seq_length, tokenizer.cls_id, tokenizer.sep_id)
        if bucket_widths:
            return length_buckets.trim_to_bucket(features, bucket_widths, label)
        return features, label

    return parallel_map(dataset, encode)


def token_classification_dataset(examples, label_list, tokenizer, max_seq_length,
                                 batch_size, training=False, seed=0, drop_remainder=None,
                                 bucket_widths=None):
    """The batches of word-tagged examples, tokenized in `tf.data`.

    Each word is tokenized on its own; its tag labels its first WordPiece
    (weight 1) and its other pieces get weight 0, as do [CLS], [SEP] and
    padding. Pieces past `max_seq_length - 2` are cut (with their tags). A
    word that gives no WordPiece at all (only control characters) loses
    its tag.

    Returns:
        A `tf.data.Dataset` of `(features, labels, weights)`: int32 labels
        and float32 weights, both `[batch, max_seq_length]` (`[batch,
        width]` with `bucket_widths`, as in `classification_dataset`).
    """
    index = {label: position for position, label in enumerate(label_list)}
    words = tf.ragged.constant([example_words for example_words, _ in examples], tf.string)
    tags = tf.ragged.constant(
        [[index[tag] for tag in example_tags] for _, example_tags in examples], tf.int32
    )
    lengths = None
    if bucket_widths:
        pieces = tokenizer.tokenize(words.flat_values).row_lengths()
        lengths = tf.math.unsorted_segment_sum(
            pieces, words.value_rowids(), num_segments=words.nrows()).numpy() + 2
        lengths = np.minimum(lengths, max_seq_length).astype(np.int32)
    dataset = _batches((words, tags), batch_size, training, seed,
                       training if drop_remainder is None else drop_remainder,
                       lengths, bucket_widths)
    budget = max_seq_length - 2

    def encode(batch_words, batch_tags):
        word_pieces = tokenizer.tokenize(batch_words.flat_values)  # [all words, pieces]
        first = tf.equal(tf.ragged.range(word_pieces.row_lengths()), 0)
        word_tags = tf.gather(batch_tags.flat_values, word_pieces.value_rowids())
        piece_labels = tf.where(first.flat_values, word_tags, IGNORED_LABEL)
        # [batch, words, pieces] -> [batch, pieces] rows, and their labels.
        ids = tf.RaggedTensor.from_row_splits(word_pieces, batch_words.row_splits)
        ids = ids.merge_dims(1, 2)
        labels = ids.with_flat_values(piece_labels)
        features = pack_inputs([ids], max_seq_length, tokenizer.cls_id, tokenizer.sep_id)
        labels = labels[:, :budget]
        cls_label = tf.fill([labels.nrows(), 1], tf.constant(IGNORED_LABEL, tf.int32))
        labels = tf.concat([cls_label, labels], axis=1)
        labels = labels.to_tensor(default_value=IGNORED_LABEL, shape=[None, max_seq_length])
        weights = tf.cast(tf.not_equal(labels, IGNORED_LABEL), tf.float32)
        if bucket_widths:
            return length_buckets.trim_to_bucket(
                features, bucket_widths, tf.maximum(labels, 0), weights)
        return features, tf.maximum(labels, 0), weights

    return parallel_map(dataset, encode)


def encode_spans(examples, tokenizer, max_seq_length, report, chunk=1024):
    """Packs span examples and finds their answer's token positions.

    The context is tokenized in three parts, the text before the answer,
    the answer and the text after it, so the answer's first and last
    WordPieces are known without character offsets (when the answer starts
    or ends inside a word, its pieces are those of the answer alone). The
    example is `[CLS] question [SEP] context [SEP]`, truncated as
    `pack_inputs` does; an example whose answer's last piece is cut off, or
    whose answer gives no piece, is skipped and counted in `report`.

    Args:
        examples: `(context, question, answer_start, answer_text)` tuples.
        tokenizer: a `tfnlp.text.BertTokenizer`.
        max_seq_length: the length of every packed row.
        report: the file's `ReadReport` (its `kept` is updated).
        chunk: examples tokenized at a time.

    Returns:
        A dict of numpy arrays: the int32 features `[examples,
        max_seq_length]` and int32 `start_positions`, `end_positions`
        `[examples]`.
    """
    budget = max_seq_length - 3
    outputs = collections.defaultdict(list)
    kept = 0
    for begin in range(0, len(examples), chunk):
        part = examples[begin:begin + chunk]
        questions = tokenizer.tokenize([question for _, question, _, _ in part])
        before = tokenizer.tokenize([context[:start] for context, _, start, _ in part])
        answers = tokenizer.tokenize([answer for _, _, _, answer in part])
        after = tokenizer.tokenize(
            [context[start + len(answer):] for context, _, start, answer in part]
        )
        contexts = tf.concat([before, answers, after], axis=1)
        features = pack_inputs([questions, contexts], max_seq_length,
                               tokenizer.cls_id, tokenizer.sep_id)
        kept_question, kept_context = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(
            [tf.cast(questions, tf.int64), tf.cast(contexts, tf.int64)]
        )
        context_offset = kept_question.row_lengths().numpy() + 2
        start = context_offset + before.row_lengths().numpy()
        answer_length = answers.row_lengths().numpy()
        end = start + answer_length - 1
        context_end = context_offset + kept_context.row_lengths().numpy()
        no_answer = answer_length == 0
        truncated = ~no_answer & (end >= context_end)
        for _ in range(int(no_answer.sum())):
            report.skip("answer gives no tokens")
        for _ in range(int(truncated.sum())):
            report.skip("answer truncated away")
        keep = ~(no_answer | truncated)
        kept += int(keep.sum())
        for name in ENCODER_INPUTS:
            outputs[name].append(features[name].numpy()[keep])
        outputs["start_positions"].append(start[keep].astype(np.int32))
        outputs["end_positions"].append(end[keep].astype(np.int32))
    report.kept = kept
    if not outputs:
        empty = {name: np.zeros([0, max_seq_length], np.int32) for name in ENCODER_INPUTS}
        return {**empty, "start_positions": np.zeros([0], np.int32),
                "end_positions": np.zeros([0], np.int32)}
    return {name: np.concatenate(values) for name, values in outputs.items()}


def span_dataset(encoded, batch_size, training=False, seed=0, drop_remainder=None,
                 bucket_widths=None):
    """The batches of `encode_spans`' arrays (with `bucket_widths`, of
    similar lengths and cut to their bucket's width, as in
    `classification_dataset`).

    Returns:
        A `tf.data.Dataset` of `(features, {"start_logits": starts,
        "end_logits": ends})`.
    """
    features = {name: encoded[name] for name in ENCODER_INPUTS}
    labels = {"start_logits": encoded["start_positions"], "end_logits": encoded["end_positions"]}
    lengths = encoded["input_mask"].sum(axis=1).astype(np.int32) if bucket_widths else None
    dataset = _batches((features, labels), batch_size, training, seed,
                       training if drop_remainder is None else drop_remainder,
                       lengths, bucket_widths)
    if bucket_widths:
        dataset = dataset.map(lambda batch_features, batch_labels: length_buckets.trim_to_bucket(
            batch_features, bucket_widths, batch_labels))
    return dataset.prefetch(tf.data.AUTOTUNE)
