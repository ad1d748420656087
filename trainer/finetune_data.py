"""Fine-tuning data: reading CSV/TSV/JSONL files into BERT input batches.

The datasets of the three tasks of `trainer.finetune` ("classification",
"token_classification", "span"), from the examples that
`tfnlp.data.labelled_files` reads. Each yields `(features, labels,
sample_weights)` as `keras.Model.fit` takes them, `features` the dict of
int32 `input_ids`, `input_mask` and `segment_ids` `[batch, length]`
(`trainer.tasks.finetuning.batch_of` makes the loop's batch dicts of them).
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

# The readers of the labelled files, under the names that `trainer.finetune` uses.
from tfnlp.data.labelled_files import (  # noqa: F401
    ReadReport, TextColumns, discover_labels, read_classification, read_spans,
    read_token_classification,
)
from tfnlp.models.bert.bert_encoder import ENCODER_INPUTS
from tfnlp.text.packing import pack_inputs
from trainer import length_buckets


TASKS = ("classification", "token_classification", "span")

# The label of a token that has none ([CLS], [SEP], padding, non-first
# WordPieces): its weight is 0, and it is replaced by class 0 in the batch.
IGNORED_LABEL = -1


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

    Span examples are tokenized here, once and up front (eagerly, in
    batches, with the ops that `tf.data` uses for the other tasks), because
    whether the answer survives the truncation is only known after
    tokenizing, and those examples must be counted and left out before
    batching.

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
