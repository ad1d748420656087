"""The inputs of `trainer.distill`: the label list, the BiLSTM student's
word vocabulary, and the training and dev batches tokenized for a student.

The records of the transfer set (`tfnlp.data.distillation_dataset`) carry
raw text; `StudentInputs` turns them into the student's batches of
features in `tf.data`, with the tokenizer its export uses, so the training
input and the served model read text the same way:

- BiLSTM: `token_ids` (word ids, `tfnlp.text.WordTokenizer`) and
  `input_mask`;
- BERT: `input_ids`, `input_mask`, `segment_ids` (`[CLS] text [SEP]`,
  the teacher's WordPiece vocabulary);

training batches of texts of one length bucket, each batch padded to
the narrowest bucket width that holds its longest text
(`trainer.length_buckets`), plus `label` and, for the distillation
objective and for a dev set the teacher labelled, `teacher_logits`. The
strings are left out: XLA and TPUs take numbers only.
"""

import dataclasses
import logging
import os

import numpy as np
import tensorflow as tf

from tfnlp.data import distillation_dataset, labelled_files
from tfnlp.data.distillation_schema import LABEL, TEACHER_LOGITS, TEXT
from tfnlp.text import (build_word_vocabulary, pack_inputs, read_word_list, word_counts,
                        write_word_vocabulary)
from trainer import finetune_data, length_buckets, run_files

LOGGER = logging.getLogger(__name__)

INPUT_MASK = "input_mask"
# The BiLSTM student's word vocabulary, in the run's model_dir.
VOCABULARY_FILE = "vocabulary.txt"
# Texts per batch when the vocabulary is counted.
COUNTING_BATCH = 1024


def read_labels(path):
    """The label list of a `labels.json` file (a JSON list), or None when
    there is no such file.

    Raises:
        ValueError: the file is not a JSON list.
    """
    labels = run_files.read_json(path)
    if labels is None:
        return None
    if not isinstance(labels, list) or not labels:
        raise ValueError(
            f"{path} is not a JSON list of labels (class id = index); write it as "
            '["negative", "positive"], or remove it to use the class ids as labels.'
        )
    return [str(label) for label in labels]


def label_list(labels_file, train_files, num_classes):
    """The label of each class id: `labels_file`, else the `labels.json`
    beside the first training shard (the data job writes the teacher's
    labels there), else the class ids "0", "1", ...

    Raises:
        ValueError: the list does not have `num_classes` labels.
    """
    path = labels_file or os.path.join(os.path.dirname(train_files[0]), run_files.LABELS_FILE)
    labels = read_labels(path)
    if labels is None:
        LOGGER.info("No %s: the labels are the class ids 0 to %d.", path, num_classes - 1)
        return [str(index) for index in range(num_classes)]
    if len(labels) != num_classes:
        raise ValueError(
            f"{path} names {len(labels)} labels but the teacher's logits have "
            f"{num_classes} classes. Give the label list of this transfer set "
            "(--labels_file)."
        )
    return labels


def word_vocabulary(run, train_files, num_classes, origins, max_size, min_count,
                    extra_words_file=""):
    """The path of the BiLSTM student's word vocabulary.

    A run's `vocabulary.txt` is made once, from the words of the training
    records it reads (`origins`), and read back when the run resumes. The
    words of `extra_words_file` (`tfnlp.text.read_word_list`) that the
    training texts lack follow, in the file's order, up to `max_size`
    words in all: words that serving texts hold and the training texts do
    not then have vectors of their own (from the word vectors) instead of
    `[UNK]`. The chief writes it into the model_dir; the other workers of
    a cluster count the same words and write their copy to a scratch
    directory.

    Returns:
        `(path, words)`: the file, and its words when they were counted now
        (None when the file was there).
    """
    path = os.path.join(run.model_dir, VOCABULARY_FILE)
    if tf.io.gfile.exists(path):
        LOGGER.info("Reading the word vocabulary of the run: %s.", path)
        return path, None
    records = distillation_dataset(train_files, COUNTING_BATCH, num_classes, origins=origins,
                                   shuffle=False, drop_remainder=False)
    counts = word_counts(batch[TEXT] for batch in records)
    words = build_word_vocabulary(counts, max_size, min_count)
    LOGGER.info("Word vocabulary: %d of the %d distinct words of the training texts "
                "(min count %d).", len(words), len(counts), min_count)
    if extra_words_file:
        known = set(words)
        extra = [word for word in read_word_list(extra_words_file) if word not in known]
        added = extra[:max(0, max_size - len(words))]
        words = words + added
        LOGGER.info("Word vocabulary: %d words of %s added (%d more left out by the size "
                    "limit).", len(added), extra_words_file, len(extra) - len(added))
    if not run.chief:
        directory = run_files.worker_directory(run.model_dir, run_files.WORKER_EXPORT,
                                               run.task_id)
        tf.io.gfile.makedirs(directory)
        path = os.path.join(directory, VOCABULARY_FILE)
    write_word_vocabulary(words, path)
    return path, words


@dataclasses.dataclass
class DevSet:
    """The labelled dev examples of `--eval_data`.

    Attributes:
        texts: the texts.
        labels: int32 class ids.
        teacher_logits: float32 `(examples, classes)` of the teacher, or
            None.
    """

    texts: list
    labels: np.ndarray
    teacher_logits: np.ndarray = None

    def tensors(self):
        """The examples as a dict of arrays (the records' keys)."""
        tensors = {TEXT: np.array(self.texts, dtype=object), LABEL: self.labels}
        if self.teacher_logits is not None:
            tensors[TEACHER_LOGITS] = self.teacher_logits
        return tensors


def read_dev_set(path, text_column, label_column, labels):
    """The `DevSet` of a labelled CSV, TSV or JSONL file
    (`tfnlp.data.labelled_files.read_classification`); rows without text, or
    with a label not in `labels`, are skipped and reported.

    Raises:
        ValueError: no row is usable.
    """
    examples, report = labelled_files.read_classification(
        path, labelled_files.TextColumns(text_column, "", label_column), labels)
    LOGGER.info("%s", report.summary())
    if not examples:
        raise ValueError(
            f"{path} has no usable dev example ({report.summary()}). Its labels must be "
            f"among {labels}; check --label_column and --labels_file."
        )
    index = {label: position for position, label in enumerate(labels)}
    return DevSet([text for text, _, _ in examples],
                  np.array([index[label] for _, _, label in examples], np.int32))


class StudentInputs:
    """A student's features of the transfer set's records, in `tf.data`.

    Args:
        tokenizer: a `tfnlp.text.WordTokenizer` (BiLSTM student) or a
            `tfnlp.text.BertTokenizer` (BERT student).
        sequence_length: the most tokens of a text (with [CLS] and [SEP]
            for BERT).
        bucket_widths: `trainer.length_buckets.bucket_widths(...)`, or None
            to pad every batch to `sequence_length`. Training batches hold
            texts of one length bucket (`training_batches`); every batch
            is cut to the narrowest width that holds its longest text.
    """

    def __init__(self, tokenizer, sequence_length, bucket_widths=None):
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.bucket_widths = bucket_widths
        self.bert = hasattr(tokenizer, "cls_id")

    @property
    def feature_names(self):
        """The keys of the features the student reads."""
        if self.bert:
            return ("input_ids", INPUT_MASK, "segment_ids")
        return ("token_ids",)

    def features(self, texts):
        """The padded features of a batch of texts `[batch]`."""
        return self.padded(self.tokenizer.tokenize(texts))

    def padded(self, tokens):
        """The padded features of a batch of token ids, ragged `[batch,
        None]` (`tokenizer.tokenize`)."""
        if self.bert:
            features = pack_inputs([tokens], self.sequence_length, self.tokenizer.cls_id,
                                   self.tokenizer.sep_id)
        else:
            token_ids = tokens.to_tensor(default_value=0, shape=[None, self.sequence_length])
            features = {"token_ids": token_ids,
                        INPUT_MASK: tf.cast(tf.not_equal(token_ids, 0), tf.int32)}
        if self.bucket_widths:
            features, = length_buckets.trim_to_bucket(features, self.bucket_widths)
        return features

    def batch(self, records, with_teacher_logits=True, features=None):
        """The student's batch of a batch of records: the features (of
        `records["text"]` unless given), `label` and (when asked and
        present) `teacher_logits`."""
        features = self.features(records[TEXT]) if features is None else features
        batch = {**features, LABEL: records[LABEL]}
        if with_teacher_logits and TEACHER_LOGITS in records:
            batch[TEACHER_LOGITS] = records[TEACHER_LOGITS]
        return batch

    def map(self, dataset, with_teacher_logits=True):
        """`dataset` of record batches mapped to student batches, in
        parallel."""
        return finetune_data.parallel_map(
            dataset, lambda records: self.batch(records, with_teacher_logits))

    def training_batches(self, records, batch_size, with_teacher_logits=True):
        """The full student batches of `records`, a dataset of single
        records: with `bucket_widths`, each batch holds texts of one length
        bucket (`trainer.length_buckets.bucket_batches`), so that short
        texts are not padded to the width of a long one; else records in
        their order."""
        if not self.bucket_widths:
            return self.map(records.batch(batch_size, drop_remainder=True),
                            with_teacher_logits)
        tokens_key = "tokens"
        added = 2 if self.bert else 0  # [CLS] and [SEP]

        def with_tokens(record):
            return {**record, tokens_key: self.tokenizer.tokenize(record[TEXT][None])[0]}

        def length_of(record):
            return tf.minimum(tf.size(record[tokens_key]) + added, self.sequence_length)

        batches = length_buckets.bucket_batches(
            finetune_data.parallel_map(records, with_tokens), length_of, self.bucket_widths,
            batch_size, drop_remainder=True)
        return finetune_data.parallel_map(batches, lambda records: self.batch(
            records, with_teacher_logits, features=self.padded(records[tokens_key])))


def dev_dataset_function(dev_set, inputs, global_batch_size):
    """The `distribute_datasets_from_function` input function of the dev
    set: every example once, in order (each pipeline its share); with
    several replicas only whole batches (see `dev_steps`)."""

    def dataset_fn(input_context):
        dataset = tf.data.Dataset.from_tensor_slices(dev_set.tensors())
        if input_context.num_input_pipelines > 1:
            dataset = dataset.shard(input_context.num_input_pipelines,
                                    input_context.input_pipeline_id)
        dataset = dataset.batch(input_context.get_per_replica_batch_size(global_batch_size),
                                drop_remainder=input_context.num_replicas_in_sync > 1)
        return inputs.map(dataset)

    return dataset_fn


def dev_steps(examples, global_batch_size, replicas):
    """The global batches of one pass over the dev set (whole batches only
    on several replicas)."""
    if replicas > 1:
        if examples % global_batch_size:
            LOGGER.warning("Evaluation on %d replicas reads whole global batches: %d of the "
                           "%d dev examples are left out.", replicas,
                           examples % global_batch_size, examples)
        return max(examples // global_batch_size, 1)
    return -(-examples // global_batch_size)
