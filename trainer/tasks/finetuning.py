"""Fine-tuning BERT for classification, token classification or spans
("classification", "token_classification", "span": `python -m
trainer.finetune --task=NAME`): its flags, how it reads its data and builds
its model, the loop's `FineTuningTask` (loss and metrics), and the run.
`trainer.finetune_data` reads the labelled files.
"""

import argparse
import dataclasses
import json
import logging
import os

import tensorflow as tf

from tfnlp.command_line import (
    ArgumentParser,
    UsageError,
    add_label_column_flag,
    add_labels_flag,
    add_lower_case_flag,
    add_text_column_flag,
    check_input_file,
)
from tfnlp.data.labelled_files import split_labels
from tfnlp.text import load_vocabulary
from tfnlp.text.bert_tokenizer import BertTokenizer
from trainer import finetune_data, length_buckets, optimization, run_files, runtime
from trainer.bert_models import (
    build_model,
    check_bert_config_flag,
    check_inputs_fit,
    checkpoint_config,
    config_from_name,
    encoder_from_source,
    export_bert_run,
    export_trained_model,
    sentence_transformers_options,
)
from trainer.checkpoints import BestCheckpoint
from trainer.run_flags import (
    add_bert_config_flag,
    add_bert_override_flags,
    add_bucket_boundaries_flag,
    add_clip_norm_flag,
    add_distribution_flags,
    add_ema_flag,
    add_export_dir_flag,
    add_global_batch_size_flag,
    add_keep_checkpoints_flag,
    add_learning_rate_flag,
    add_model_dir_flag,
    add_optimizer_flags,
    add_progress_flag,
    add_seed_flag,
    add_stop_time_flag,
    add_train_steps_flag,
    check_output_flags,
    value_from_inputs,
)
from trainer.tasks.registry import TaskEntry, register_task
from trainer.training_loop import evaluate

LOGGER = logging.getLogger("trainer.finetune")

KINDS = ("classification", "token_classification", "span")
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")

# The encoder's sizes that the flags set from scratch and a checkpoint
# records otherwise.
SIZE_FLAGS = ("vocab_size", "num_layers")

# The fraction of the steps used for the warmup when --warmup_steps is not given.
DEFAULT_WARMUP_FRACTION = 0.1

# The training and validation figures of each task in the HParams tab.
TASK_METRICS = {
    "classification": ("loss", "accuracy"),
    "token_classification": ("loss", "token_accuracy"),
    "span": ("loss", "start_accuracy", "end_accuracy"),
}

# The validation figure each task's best checkpoint is chosen by, and
# whether higher is better.
BEST_METRICS = {
    "classification": ("accuracy", True),
    "token_classification": ("token_accuracy", True),
    "span": ("loss", False),
}

# The summed figures and the metrics of each kind.
SUM_NAMES = {
    "classification": ("loss_sum", "correct", "examples", "tokens"),
    "token_classification": ("loss_sum", "correct", "labelled", "examples", "tokens"),
    "span": ("loss_sum", "start_correct", "end_correct", "both_correct", "examples",
             "tokens"),
}
METRICS = {
    "classification": ("loss", "accuracy"),
    "token_classification": ("loss", "token_accuracy"),
    "span": ("loss", "start_accuracy", "end_accuracy", "exact_match"),
}


# ---------------------------------------------------------------------------
# The flags


def finetuning_parser():
    """The `argparse` parser of the fine-tuning flags."""
    parser = ArgumentParser(
        prog="python -m trainer.finetune",
        description="Fine-tunes BERT for classification, token classification or spans.",
        allow_abbrev=False,
        conflict_handler="resolve",  # Its --verbose also takes the old 0-2.
    )
    parser.add_argument("--task", choices=finetune_data.TASKS, required=True,
                        help="classification (a label per text or text pair), "
                             "token_classification (a tag per word) or span (an answer "
                             "span in a context, as SQuAD).")

    data = parser.add_argument_group("data")
    data.add_argument("--train_data", required=True, help="The training CSV, TSV or JSONL file.")
    data.add_argument("--eval_data", default="", help="The evaluation file (same format).")
    add_text_column_flag(data, "--train_data and --eval_data", mode="classification",
                         segment=" (or first segment)")
    data.add_argument("--text_pair_column", default="",
                      help="classification: the column of the second segment, if any.")
    add_label_column_flag(data, "--train_data and --eval_data", mode="classification")
    add_labels_flag(data, "the sorted labels of the training file")
    data.add_argument("--num_classes", type=int, default=0,
                      help="Without --labels: the labels are the integers 0..N-1.")
    data.add_argument("--vocab_file", required=True, help="The WordPiece vocabulary.")
    add_lower_case_flag(data, True, "uncased vocabularies")
    data.add_argument("--max_seq_length", type=int, default=128,
                      help="The most WordPieces of an example, [CLS] and [SEP] included; "
                           "longer text is truncated.")
    add_bucket_boundaries_flag(data, "a batch holds examples",
                               "every batch padded to --max_seq_length (always so with "
                               "--strategy=tpu)")
    add_seed_flag(data, "the head's initial weights")

    model = parser.add_argument_group("model")
    add_model_dir_flag(model, "Checkpoints, TensorBoard logs, labels.json, eval_results.json.")
    model.add_argument("--init_checkpoint", default="",
                       help="A pretraining model_dir or checkpoint prefix, or a Hugging "
                            "Face BERT directory; empty: train from scratch.")
    add_bert_config_flag(model, "", mode="Without --init_checkpoint")
    model.add_argument("--vocab_size", type=int, default=None,
                       help="The encoder's vocabulary size (default: the tokens of "
                            "--vocab_file from scratch, replacing the --config's; the "
                            "checkpoint's with --init_checkpoint); another is refused.")
    add_bert_override_flags(model, "the --config's from scratch; the checkpoint's with "
                                   "--init_checkpoint, where another is refused")
    model.add_argument("--pooling", choices=("auto", "pooled_output", "mean"), default="auto",
                       help="The classifier's sentence vector: BERT's pooled [CLS] output, or "
                            "the mean of the tokens' states; auto: mean for a "
                            "sentence-transformers --init_checkpoint that pools by mean, "
                            "else pooled_output.")
    model.add_argument("--dropout", type=float, default=0.1,
                       help="Dropout before the (token) classification layer.")

    training = parser.add_argument_group("training")
    add_global_batch_size_flag(training, default=32)
    training.add_argument("--epochs", type=int, default=3,
                          help="Passes over the training data (without --train_steps).")
    add_train_steps_flag(training, "Train exactly this many steps (instead of --epochs).",
                         default=0)
    add_learning_rate_flag(training, 2e-5)
    training.add_argument("--warmup_steps", type=int, default=None,
                          help="Linear warmup steps; default: 10%% of the steps.")
    add_optimizer_flags(training)
    add_clip_norm_flag(training)
    add_ema_flag(training)
    add_distribution_flags(training)
    training.set_defaults(jit_compile=True)
    add_stop_time_flag(training)

    outputs = parser.add_argument_group("checkpoints, logs and export")
    outputs.add_argument("--eval_every_epochs", type=int, default=1,
                         help="With --eval_data: epochs between evaluations during "
                              "training (0: only the final evaluation).")
    outputs.add_argument("--eval_every_steps", type=int, default=0,
                         help="With --eval_data: steps between evaluations (and "
                              "checkpoints) instead of --eval_every_epochs.")
    add_keep_checkpoints_flag(outputs, 2, "the best is kept apart, in best/")
    outputs.add_argument("--log_every_steps", type=int, default=100,
                         help="Steps between TensorBoard training scalars.")
    add_progress_flag(outputs)
    add_export_dir_flag(outputs, "the fine-tuned model")
    outputs.add_argument("--verbose", type=int, choices=(0, 1, 2), nargs="?", const=2,
                         default=2,
                         help="Accepted for older command lines, whose 0-2 was Keras "
                              "fit's verbosity: the progress lines "
                              "(--progress_every_seconds) report training now, whatever "
                              "the value. A bare --verbose prints the traceback of an "
                              "error.")
    return parser


def parse_flags(argv=None):
    """Parses and checks the flags; exits with a usage message on errors."""
    parser = finetuning_parser()
    flags = parser.parse_args(argv)
    for name in ("global_batch_size", "max_seq_length", "keep_checkpoints", "log_every_steps"):
        if getattr(flags, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(flags, name)}.")
    for name in ("train_steps", "num_classes", "eval_every_epochs"):
        if getattr(flags, name) < 0:
            parser.error(f"--{name} must not be negative, got {getattr(flags, name)}.")
    if not flags.train_steps and flags.epochs < 1:
        parser.error(f"--epochs must be at least 1 (or give --train_steps), got {flags.epochs}.")
    if flags.warmup_steps is not None and flags.warmup_steps < 0:
        parser.error(f"--warmup_steps must not be negative, got {flags.warmup_steps}.")
    if flags.eval_every_steps < 0:
        parser.error(f"--eval_every_steps must not be negative, got {flags.eval_every_steps}.")
    if flags.learning_rate <= 0:
        parser.error(f"--learning_rate must be positive, got {flags.learning_rate}.")
    if flags.max_seq_length < 4:
        parser.error(f"--max_seq_length={flags.max_seq_length} is too short; use at least 4.")
    if not flags.init_checkpoint and not flags.config:
        parser.error(
            "Give --init_checkpoint (a pretraining model_dir or a Hugging Face "
            "directory) or, to train from scratch, --config (a preset or a JSON file)."
        )
    if flags.labels and flags.num_classes and len(split_labels(flags.labels)) != flags.num_classes:
        parser.error(
            f"--labels names {len(split_labels(flags.labels))} labels but "
            f"--num_classes={flags.num_classes}; give one of the two, or matching ones."
        )
    return flags


def check_paths(flags):
    """Checks the files and directories that the flags name, before training.

    Raises:
        UsageError: an input file cannot be read, `--init_checkpoint` does
            not exist, or an output directory cannot be written.
    """
    data = "a CSV, TSV or JSONL file of the --task"
    check_input_file("--train_data", flags.train_data, data)
    if flags.eval_data:
        check_input_file("--eval_data", flags.eval_data, data)
    check_input_file("--vocab_file", flags.vocab_file,
                     "the WordPiece vocabulary of the encoder, one token a line")
    if flags.config and not flags.init_checkpoint:
        check_bert_config_flag(flags.config)
    checkpoint = flags.init_checkpoint
    if (checkpoint and "://" not in checkpoint and not os.path.exists(checkpoint)
            and not os.path.exists(checkpoint + ".index")):
        raise UsageError(
            f"--init_checkpoint={checkpoint} does not exist; expected a pretraining "
            "model_dir, a checkpoint prefix (DIR/ckpt-N) or a Hugging Face BERT "
            "directory. Check the path.")
    set_flags_from_inputs(flags)
    check_output_flags(flags)


def set_flags_from_inputs(flags):
    """Sets the encoder's sizes that the inputs decide, refusing one given
    with another value, and checks that the encoder takes the vocabulary
    and the sequence length, before anything is written.

    From scratch, `--vocab_size` is the tokens of `--vocab_file` (the
    `--config`'s vocab_size is a default, which the vocabulary replaces).
    With `--init_checkpoint`, `--vocab_size` and `--num_layers` are the
    sizes its config records; the vocabulary must not have more tokens than
    its embeddings, nor `--max_seq_length` more than its positions.

    Args:
        flags: the parsed flags, changed in place.

    Raises:
        UsageError: a flag disagrees with the inputs, or the encoder cannot
            take them.
    """
    tokens = len(load_vocabulary(flags.vocab_file))
    if flags.init_checkpoint:
        config = checkpoint_config(flags.init_checkpoint)
        for name in SIZE_FLAGS:
            setattr(flags, name, value_from_inputs(
                f"--{name}", getattr(flags, name), getattr(config, name),
                f"--init_checkpoint={flags.init_checkpoint} has {name} "
                f"{getattr(config, name)} (its config.json)"))
    else:
        flags.vocab_size = value_from_inputs(
            "--vocab_size", flags.vocab_size, tokens,
            f"--vocab_file={flags.vocab_file} has {tokens} tokens")
        config = config_from_name(flags.config, {
            name: getattr(flags, name) for name in SIZE_FLAGS
            if getattr(flags, name) is not None})
    check_inputs_fit(config, flags.vocab_file, tokens, flags.max_seq_length)


# ---------------------------------------------------------------------------
# The encoder and its initialization


def _config_overrides(flags, from_scratch):
    """The config fields the flags change: the dropouts and, from scratch,
    the sizes (a checkpoint's are its own: `set_flags_from_inputs` checked
    that the flags repeat them)."""
    names = ["hidden_dropout", "attention_dropout"]
    if from_scratch:
        names += ["vocab_size", "num_layers"]
    return {name: getattr(flags, name) for name in names if getattr(flags, name) is not None}


def build_encoder(flags):
    """The encoder: restored from `--init_checkpoint`, or new from `--config`
    (`trainer.bert_models.encoder_from_source`). Call inside the strategy's
    scope.

    `--init_checkpoint` is one of:

    - a pretraining model_dir of `python -m trainer.pretrain` (its latest
      `ckpt-N`) or one checkpoint prefix (`DIR/ckpt-N`): the encoder's
      variables are restored (the object path `model/encoder` of its
      `tf.train.Checkpoint(model=..., optimizer=..., step=...)`), the heads
      and the optimizer state are not; the config is the `config.json`
      beside it. A model_dir of this script works too (its checkpoints hold
      `model/encoder` as well).
    - a Hugging Face BERT directory (`config.json` and `model.safetensors`,
      read by `tfnlp.models.bert.huggingface`, without PyTorch).
    - nothing: the encoder of `--config` (a preset name or a BertConfig
      JSON file) starts from random weights.

    Returns:
        `(encoder, source)`, `source` a short description for the logs.
    """
    if flags.init_checkpoint and flags.config:
        LOGGER.info("--config=%s is ignored: the config comes with --init_checkpoint.",
                    flags.config)
    return encoder_from_source(flags.init_checkpoint, flags.config,
                               _config_overrides(flags, not flags.init_checkpoint))


# ---------------------------------------------------------------------------
# Data


@dataclasses.dataclass
class TaskData:
    """The datasets of a run and what reading them gave: `train(batch_size,
    seed)` makes the training batches (shuffled and repeated), `eval` is
    one pass over the evaluation data in batches of the global batch."""

    train: object
    eval: tf.data.Dataset
    train_examples: int
    eval_examples: int
    label_list: list
    reports: list
    eval_path: str


def _label_list(flags, discovered):
    if flags.labels:
        return split_labels(flags.labels)
    if flags.num_classes:
        return [str(index) for index in range(flags.num_classes)]
    return discovered


def data_bucket_widths(flags):
    """The length buckets of `--bucket_boundaries`, or None (batches padded
    to `--max_seq_length`: without boundaries, and on TPUs, whose steps
    need one shape)."""
    if not flags.bucket_boundaries.strip() or flags.strategy == "tpu":
        return None
    return length_buckets.bucket_widths(flags.bucket_boundaries, flags.max_seq_length)


def load_data(flags, tokenizer, batch_size, drop_eval_remainder=False):
    """Reads the data files and makes the training and evaluation datasets
    (`TaskData`).

    - `classification` (`tfnlp.models.BertClassifier`): CSV, TSV or JSONL
      rows with a text column (`--text_column`, default "text"; an optional
      second segment in `--text_pair_column`; a file with "text_a"/"text_b"
      and no "text" is read as pairs) and a label column (`--label_column`,
      default "label"). The labels are `--labels=a,b,c`, or "0".."N-1" with
      `--num_classes=N`, or else the sorted distinct labels of the training
      file; a label's class id is its index. Metric: `accuracy`.
    - `token_classification` (`tfnlp.models.BertTokenClassifier`): JSONL
      `{"tokens": [...], "tags": [...]}`; the tag of a word labels its
      first WordPiece, the other pieces have weight 0. Tags as labels
      above. Metric: `token_accuracy` over the weighted (first) pieces.
    - `span` (`tfnlp.models.BertSpanExtractor`): SQuAD-like JSONL
      `{"context", "question", "answer_start", "answer_text"}`, packed as
      `[CLS] question [SEP] context [SEP]`. Metrics: `start_accuracy`,
      `end_accuracy` and `exact_match` (both argmax positions right).

    Bad rows (missing text or label, a label outside the label list, an
    answer truncated away, ...) are skipped; each file's report says how
    many, and why.

    Without `--eval_data` the evaluation reads the training file again
    (without shuffling or repeating).
    """
    eval_path = flags.eval_data or flags.train_data
    widths = data_bucket_widths(flags)
    eval_options = dict(training=False, drop_remainder=drop_eval_remainder,
                        bucket_widths=widths)
    train_options = dict(training=True, bucket_widths=widths)
    if flags.task == "span":
        reports, encoded = [], []
        for path in (flags.train_data, eval_path):
            examples, report = finetune_data.read_spans(path)
            encoded.append(finetune_data.encode_spans(
                examples, tokenizer, flags.max_seq_length, report))
            reports.append(report)
        train, evaluation = encoded
        return TaskData(
            train=lambda size, seed: finetune_data.span_dataset(
                train, size, seed=seed, **train_options),
            eval=finetune_data.span_dataset(evaluation, batch_size, **eval_options),
            train_examples=len(train["input_ids"]), eval_examples=len(evaluation["input_ids"]),
            label_list=[], reports=reports, eval_path=eval_path,
        )

    if flags.task == "classification":
        columns = finetune_data.TextColumns(
            flags.text_column, flags.text_pair_column, flags.label_column)

        def read(path, labels):
            return finetune_data.read_classification(path, columns, labels)

        def labels_of(examples):
            return [label for _, _, label in examples]

        make_dataset = finetune_data.classification_dataset
    else:
        def read(path, labels):
            return finetune_data.read_token_classification(path, labels)

        def labels_of(examples):
            return [tag for _, tags in examples for tag in tags]

        make_dataset = finetune_data.token_classification_dataset

    label_list = _label_list(flags, None)
    train, train_report = read(flags.train_data, label_list)
    if label_list is None:
        label_list = finetune_data.discover_labels(labels_of(train))
    if len(label_list) < 2 and flags.task == "classification":
        raise UsageError(
            f"{flags.train_data} has {len(label_list)} distinct label(s) "
            f"({label_list}); classification needs at least 2. Check --label_column."
        )
    evaluation, eval_report = read(eval_path, label_list)
    common = dict(tokenizer=tokenizer, max_seq_length=flags.max_seq_length)
    return TaskData(
        train=lambda size, seed: make_dataset(train, label_list, batch_size=size, seed=seed,
                                              **common, **train_options),
        eval=make_dataset(evaluation, label_list, batch_size=batch_size, **common,
                          **eval_options),
        train_examples=len(train), eval_examples=len(evaluation),
        label_list=label_list, reports=[train_report, eval_report], eval_path=eval_path,
    )


# ---------------------------------------------------------------------------
# Metrics and the serving record


def hparams_metrics(task):
    """The `(run, name)` metrics of the HParams tab for `task`: those of
    the `eval` and `train` runs.

    Example:

    >>> hparams_metrics("classification")[:2]
    (('eval', 'loss'), ('eval', 'accuracy'))
    """
    return tuple((group, name) for group in ("eval", "train")
                 for name in TASK_METRICS[task])

def classifier_pooling(flags):
    """`--pooling`, with "auto" resolved: "mean" for a sentence-transformers
    checkpoint that pools by mean (its pooler layer is untrained), else
    "pooled_output"."""
    if flags.pooling != "auto":
        return flags.pooling
    if flags.init_checkpoint and os.path.isdir(flags.init_checkpoint):
        if sentence_transformers_options(flags.init_checkpoint).get("pooling") == "mean":
            return "mean"
    return "pooled_output"


def serving_record(flags, label_list):
    """What `trainer.export` needs to rebuild and export this run's model."""
    return {
        "model": flags.task,
        "labels": list(label_list),
        "dropout": flags.dropout,
        "pooling": classifier_pooling(flags),
        "vocab_file": os.path.abspath(flags.vocab_file),
        "lower_case": flags.do_lower_case,
        "sequence_length": flags.max_seq_length,
    }


# ---------------------------------------------------------------------------
# The training loop's task


def batch_of(kind, features, *targets):
    """The task's batch dict of a `trainer.finetune_data` batch
    `(features, labels[, weights])` of `kind`."""
    batch = {name: features[name] for name in INPUT_NAMES}
    if kind == "classification":
        batch["label"] = targets[0]
    elif kind == "token_classification":
        batch["labels"], batch["label_weights"] = targets
    else:
        batch["start_positions"] = targets[0]["start_logits"]
        batch["end_positions"] = targets[0]["end_logits"]
    return batch


class FineTuningTask:
    """The loss, step sums and metrics of a fine-tuned BERT model.

    A batch is a dict: the encoder's inputs (`input_ids`, `input_mask`,
    `segment_ids`) and the targets of the kind of task (`batch_of` makes it
    from the `(features, labels...)` batches of `trainer.finetune_data`):

    - "classification": `label`, the class id of each example; the loss is
      the cross-entropy averaged over the examples of the global batch.
    - "token_classification": `labels` and `label_weights` `[batch, length]`,
      weight 1 on the first WordPiece of each word; the loss is the
      cross-entropy averaged over the weighted pieces of the global batch.
    - "span": `start_positions` and `end_positions`; the loss is the mean of
      the start and end cross-entropies (the original `run_squad.py`), each
      averaged over the examples of the global batch.

    The metrics are `accuracy`; `token_accuracy` (over the weighted pieces);
    `start_accuracy`, `end_accuracy` and `exact_match` (both argmax positions
    right).

    Args:
        model: a `tfnlp.models.BertClassifier` ("classification"),
            `BertTokenClassifier` ("token_classification") or
            `BertSpanExtractor` ("span"), called on the encoder's inputs.
        kind: one of `KINDS`.

    Example:

    >>> import numpy as np
    >>> task = FineTuningTask(lambda features, training=None: tf.constant([[0.0, 2.0]]),
    ...                       "classification")
    >>> batch = {"input_ids": tf.ones([1, 3], "int32"), "input_mask": tf.ones([1, 3], "int32"),
    ...          "segment_ids": tf.zeros([1, 3], "int32"), "label": tf.constant([1])}
    >>> loss = task.loss(batch, task.forward(batch), task.batch_totals(batch))
    >>> bool(np.isclose(float(loss), np.log(1 + np.exp(-2.0))))
    True
    """

    def __init__(self, model, kind):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
        self.model = model
        self.kind = kind
        self.sum_names = SUM_NAMES[kind]

    def forward(self, batch, training=None):
        """The model's logits (a dict of start and end logits for spans)."""
        return self.model({name: batch[name] for name in INPUT_NAMES}, training=training)

    def batch_totals(self, batch):
        """The examples and, for token classification, the weighted pieces
        (`labelled`), whose global sums normalise the loss."""
        totals = {"examples": _examples(batch)}
        if self.kind == "token_classification":
            totals["labelled"] = tf.reduce_sum(tf.cast(batch["label_weights"], tf.float32))
        return totals

    def loss(self, batch, outputs, totals):
        """This replica's share of the global batch's loss."""
        denominator = totals["labelled" if self.kind == "token_classification" else "examples"]
        return tf.reduce_sum(self._losses(batch, outputs)) / tf.maximum(denominator, 1.0)

    def _losses(self, batch, outputs):
        """The loss terms of the batch (per example, or per weighted piece)."""
        if self.kind == "classification":
            return _cross_entropy(batch["label"], outputs)
        if self.kind == "token_classification":
            return (_cross_entropy(batch["labels"], outputs)
                    * tf.cast(batch["label_weights"], tf.float32))
        return 0.5 * (_cross_entropy(batch["start_positions"], outputs["start_logits"])
                      + _cross_entropy(batch["end_positions"], outputs["end_logits"]))

    def sums(self, batch, outputs):
        """The summed loss, correct predictions and counts of a batch."""
        sums = {"loss_sum": tf.reduce_sum(self._losses(batch, outputs)),
                "examples": _examples(batch),
                "tokens": tf.reduce_sum(tf.cast(batch["input_mask"], tf.float32))}
        if self.kind == "classification":
            sums["correct"] = tf.reduce_sum(_right(batch["label"], outputs))
        elif self.kind == "token_classification":
            weights = tf.cast(batch["label_weights"], tf.float32)
            sums["correct"] = tf.reduce_sum(_right(batch["labels"], outputs) * weights)
            sums["labelled"] = tf.reduce_sum(weights)
        else:
            start = _right(batch["start_positions"], outputs["start_logits"])
            end = _right(batch["end_positions"], outputs["end_logits"])
            sums.update(start_correct=tf.reduce_sum(start), end_correct=tf.reduce_sum(end),
                        both_correct=tf.reduce_sum(start * end))
        return sums

    def results(self, totals):
        """The metrics of `METRICS[kind]` from summed figures."""
        examples = max(totals["examples"], 1.0)
        if self.kind == "classification":
            return {"loss": totals["loss_sum"] / examples,
                    "accuracy": totals["correct"] / examples}
        if self.kind == "token_classification":
            labelled = max(totals["labelled"], 1.0)
            return {"loss": totals["loss_sum"] / labelled,
                    "token_accuracy": totals["correct"] / labelled}
        return {"loss": totals["loss_sum"] / examples,
                "start_accuracy": totals["start_correct"] / examples,
                "end_accuracy": totals["end_correct"] / examples,
                "exact_match": totals["both_correct"] / examples}

    def step_record(self, sums):
        """The per-step figures of `train_log.jsonl` besides the loss: the
        examples and the step's metrics."""
        record = {"examples": sums["examples"]}
        record.update((name, value) for name, value in self.results(sums).items()
                      if name != "loss")
        return record


def _examples(batch):
    return tf.cast(tf.shape(batch["input_ids"])[0], tf.float32)


def _cross_entropy(labels, logits):
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.int32), logits=tf.cast(logits, tf.float32))


def _right(labels, logits):
    """1.0 where the argmax of `logits` is the label, else 0.0."""
    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return tf.cast(tf.equal(predictions, tf.cast(labels, tf.int32)), tf.float32)


# ---------------------------------------------------------------------------
# The run


def _steps(flags, train_examples):
    """`(steps_per_epoch, total_steps)` of the run: one epoch is
    `training examples // --global_batch_size` steps; the run is `--epochs`
    epochs, or exactly `--train_steps` steps if given (the last epoch is
    then cut short); `--stop_time_hours` may end it sooner."""
    steps_per_epoch = train_examples // flags.global_batch_size
    if steps_per_epoch < 1:
        raise UsageError(
            f"{flags.train_data} has {train_examples} usable examples, fewer than one "
            f"batch of --global_batch_size={flags.global_batch_size}. Use a smaller "
            "batch or more data."
        )
    total_steps = flags.train_steps or flags.epochs * steps_per_epoch
    return steps_per_epoch, total_steps


def loop_flags(flags, steps_per_epoch, total_steps):
    """The settings of the shared loop (`runtime.train_run`) that the
    fine-tuning flags give in epochs: `train_steps` (of `--epochs` without
    `--train_steps`), a checkpoint every `--eval_every_steps` or else every
    epoch, evaluations every `--eval_every_steps` or every
    `--eval_every_epochs` epochs (with `--eval_data`; 0: none during
    training), and no gradient accumulation nor profiling."""
    evaluates = flags.eval_data and (flags.eval_every_steps or flags.eval_every_epochs)
    eval_every_steps = flags.eval_every_steps or steps_per_epoch * flags.eval_every_epochs
    return argparse.Namespace(**{
        **vars(flags),
        "train_steps": total_steps,
        "eval_every_steps": eval_every_steps if evaluates else 0,
        "checkpoint_every_steps": flags.eval_every_steps or steps_per_epoch,
        "gradient_accumulation_steps": 1,
        "profile_steps": "",
    })


def distributed_batches(run, task, dataset):
    """`dataset` (a `finetune_data` dataset of the global batch) as the
    task's batch dicts, distributed over the replicas."""
    return run.strategy.experimental_distribute_dataset(
        dataset.map(lambda *batch: batch_of(task.kind, *batch)))


def evaluate_dataset(loop, run, dataset):
    """The task's metrics over one pass of `dataset`."""
    steps = int(dataset.cardinality())
    return evaluate(loop, iter(distributed_batches(run, loop.task, dataset)), steps)


def check_resumable(model_dir):
    """Raises UsageError when the latest checkpoint of `model_dir` was
    written by the earlier fine-tuning trainer (Keras `fit`: no optimizer
    beside the model), which the loop cannot resume; `trainer.export` still
    exports it."""
    latest = tf.train.latest_checkpoint(model_dir)
    if latest and not any(name.startswith("optimizer/")
                          for name, _ in tf.train.list_variables(latest)):
        raise UsageError(
            f"{latest} was written by the earlier fine-tuning trainer, whose runs do not "
            "resume on the training loop. Export it with `python -m trainer.export "
            f"--model_dir={model_dir}`, or fine-tune into a new --model_dir.")


def run(flags):
    """Fine-tunes as the flags say; returns the final evaluation's metrics (a dict).

        python -m trainer.finetune --task=classification \\
            --init_checkpoint=PRETRAINING_MODEL_DIR --train_data=train.csv \\
            --eval_data=dev.csv --model_dir=RUN --vocab_file=vocab.txt

    `load_data` says which files each task reads.

    Training runs on the shared loop of the other trainers
    (`trainer.runtime.train_run`, `trainer.training_loop`) with
    `FineTuningTask`, inside `strategy.scope()`, its step
    compiled with XLA (`--jit_compile`, on by default); `--clip_norm` clips
    the gradient summed over the replicas. Examples of similar length are
    batched together and each batch is padded only to its bucket's width
    (`--bucket_boundaries`, `trainer.length_buckets`), so a step costs what
    its real tokens cost and XLA compiles one step per width. The optimizer
    is `trainer.optimization.create_optimizer` (AdamW or LAMB, linear
    warmup, then a linear decay to zero at the last step; no weight decay
    on LayerNorm and bias variables).

    With `--eval_data`, the checkpoint with the best validation figure
    (`BEST_METRICS`) is kept, and the final evaluation and the export use
    it. With `--ema_momentum` (e.g. 0.999) the optimizer keeps a moving
    average of the weights, and the evaluations, the best checkpoint and
    the export use the average (`trainer.optimization.averaged_weights`;
    Polyak and Juditsky, 1992). A run started again with the same command
    resumes from its latest checkpoint.

    Writes into `--model_dir`:

    - `config.json` (the encoder's `BertConfig`) and `labels.json` (the
      label list; a label's class id is its index);
    - `ckpt-STEP.*`: the model, the optimizer (with the averaged weights),
      the step and the data iterator after each epoch, or every
      `--eval_every_steps` (the last `--keep_checkpoints`);
    - `best/`: the checkpoint of the best validation figure and
      `best/best.json`;
    - `train_log.jsonl` (each step's loss, metrics, learning rate and
      gradient norm) and `eval_log.jsonl` (each evaluation during training);
    - `tensorboard/`: TensorBoard logs (`trainer.summaries`): the training
      loss, metrics and learning rate in `train/`, the validation figures in
      `eval/`, and the hyperparameters (every flag and the encoder config)
      for the HParams tab, with `hparams_metrics` as its metrics;
    - `eval_results.json`: the final metrics on `--eval_data` (or on the
      training data without it) of the best checkpoint (its `step`), also
      printed;
    - `serving.json` (`serving_record`), which `python -m trainer.export`
      reads;
    - with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a
      SavedModel (`tfnlp.export`): `serving_default` on raw text (labels and
      probabilities, per example or per token; the answer span) and an ids
      signature (`classify_ids`, `extract_span_ids`).
    """
    check_resumable(flags.model_dir)
    state = {}

    def build(run):
        runtime.check_global_batch_size(flags.global_batch_size, run.replicas)
        tokenizer = BertTokenizer(flags.vocab_file, lower_case=flags.do_lower_case)
        data = load_data(flags, tokenizer, flags.global_batch_size,
                         drop_eval_remainder=flags.strategy == "tpu")
        for report in data.reports:
            LOGGER.info("%s", report.summary())
        if data.eval_examples == 0:
            raise UsageError(f"{data.eval_path} has no usable evaluation example (see above).")
        if data.label_list and run.chief:
            run_files.write_labels(flags.model_dir, data.label_list)
        record = serving_record(flags, data.label_list)
        steps_per_epoch, total_steps = _steps(flags, data.train_examples)
        warmup_steps = flags.warmup_steps
        if warmup_steps is None:
            warmup_steps = int(DEFAULT_WARMUP_FRACTION * total_steps)
        warmup_steps = min(warmup_steps, total_steps)
        encoder, source = build_encoder(flags)
        check_inputs_fit(encoder.config, flags.vocab_file, tokenizer.vocab_size,
                         flags.max_seq_length)
        model = build_model(flags.task, encoder, len(data.label_list), flags.dropout,
                            record["pooling"])
        model({name: tf.zeros([1, flags.max_seq_length], tf.int32) for name in INPUT_NAMES})
        optimizer = optimization.create_optimizer(
            flags.optimizer,
            learning_rate=flags.learning_rate,
            train_steps=total_steps,
            warmup_steps=warmup_steps,
            weight_decay=flags.weight_decay,
            model=model,
            mixed_precision=flags.mixed_precision,
            ema_momentum=flags.ema_momentum,
        )
        optimizer.build(model.trainable_variables)
        task = FineTuningTask(model, flags.task)
        metric, higher_is_better = BEST_METRICS[flags.task]
        best = BestCheckpoint(flags.model_dir, metric, higher_is_better, chief=run.chief)
        schedule = loop_flags(flags, steps_per_epoch, total_steps)
        state.update(run=run, data=data, model=model, optimizer=optimizer, source=source,
                     record=record, best=best, best_model=tf.train.Checkpoint(model=model))
        LOGGER.info(
            "Fine-tuning %s (%s) from %s: %d training examples, %d steps of %d (%d per "
            "epoch, %d warmup), %d evaluation examples; %s, %s.",
            flags.task, type(model).__name__, source, data.train_examples, total_steps,
            flags.global_batch_size, steps_per_epoch, warmup_steps, data.eval_examples,
            "XLA" if flags.jit_compile else "no XLA",
            f"length buckets {data_bucket_widths(flags)}" if data_bucket_widths(flags)
            else f"batches padded to {flags.max_seq_length}",
        )

        def dataset_function(seed):
            def dataset_fn(input_context):
                size = input_context.get_per_replica_batch_size(flags.global_batch_size)
                return data.train(size, seed).map(lambda *batch: batch_of(flags.task, *batch))

            return dataset_fn

        def evaluator(loop, writers, step):
            state["loop"] = loop

            def evaluate_eval_data():
                values = evaluate_dataset(loop, run, data.eval)
                best.update(int(step.numpy()), values, state["best_model"])
                return values

            return evaluate_eval_data if schedule.eval_every_steps else None

        return runtime.TrainingParts(
            model=model,
            optimizer=optimizer,
            task=task,
            dataset_function=dataset_function,
            config=encoder.config.to_dict(),
            serving_record=record,
            model_settings=encoder.config.to_dict(),
            hparams_metrics=hparams_metrics(flags.task),
            evaluator=evaluator,
            loop_flags=schedule,
        )

    runtime.train_run(flags, build, f"Fine-tuning ({flags.task})")
    return _final_evaluation(flags, state)


def _final_evaluation(flags, state):
    """Evaluates the best checkpoint (or the last weights) on the evaluation
    data, writes `eval_results.json` and exports; returns the results."""
    run, data, model, best = state["run"], state["data"], state["model"], state["best"]
    final_step = int(state["optimizer"].iterations.numpy())
    metric = best.metric
    if best.path() and best.best.get("step") != final_step:
        state["best_model"].read(best.path()).assert_consumed()
        LOGGER.info("Restored the best checkpoint: step %d, validation %s %.4g.",
                    best.best["step"], metric, best.best[metric])
    values = evaluate_dataset(state["loop"], run, data.eval)
    results = {
        "task": flags.task,
        "step": best.best.get("step", final_step),
        "eval_data": data.eval_path,
        "eval_examples": data.eval_examples,
        "train_examples": data.train_examples,
        "init": state["source"],
        **values,
        "data": [report.to_dict() for report in data.reports],
    }
    if run.chief:
        run_files.write_json(os.path.join(flags.model_dir, run_files.RESULTS_FILE), results)
    LOGGER.info("Final evaluation on %s: %s", data.eval_path, ", ".join(
        f"{name}={value:.4g}" for name, value in values.items()))
    print(json.dumps({name: value for name, value in results.items() if name != "data"}))
    if flags.export_dir:
        record = state["record"]
        runtime.export_at_end(
            run, export_trained_model, model, flags.export_dir,
            vocab_file=record["vocab_file"], lower_case=record["lower_case"],
            sequence_length=record["sequence_length"], labels=record["labels"] or None,
        )
    return results


# ---------------------------------------------------------------------------
# Registration: `trainer.train` trains these tasks and `trainer.export`
# exports their runs (a run's serving record "model" is its --task).


TASK = register_task(TaskEntry(
    names=finetune_data.TASKS,
    summary="BERT fine-tuned for a label per text, a tag per word or an answer span.",
    parse_flags=parse_flags, check_paths=check_paths, run=run,
    export_run=export_bert_run,
    command="finetune",
))
