"""Fine-tuning BERT for classification, token classification or spans.

    python -m trainer.finetune --task=classification \\
        --init_checkpoint=PRETRAINING_MODEL_DIR --train_data=train.csv \\
        --eval_data=dev.csv --model_dir=RUN --vocab_file=vocab.txt \\
        --max_seq_length=128 --global_batch_size=32 --epochs=3 \\
        --learning_rate=2e-5

Tasks and data (read by `trainer.finetune_data`, which says more):

- `classification` (`tfnlp.models.BertClassifier`): CSV, TSV or JSONL rows
  with a text column (`--text_column`, default "text"; an optional second
  segment in `--text_pair_column`; a file with "text_a"/"text_b" and no
  "text" is read as pairs) and a label column (`--label_column`, default
  "label"). The labels are `--labels=a,b,c`, or "0".."N-1" with
  `--num_classes=N`, or else the sorted distinct labels of the training
  file; the list is written to `model_dir/labels.json` (a label's class id
  is its index). Metric: `accuracy`.
- `token_classification` (`tfnlp.models.BertTokenClassifier`): JSONL
  `{"tokens": [...], "tags": [...]}`; the tag of a word labels its first
  WordPiece, the other pieces have weight 0. Tags as labels above. Metric:
  `token_accuracy` over the weighted (first) pieces.
- `span` (`tfnlp.models.BertSpanExtractor`): SQuAD-like JSONL `{"context",
  "question", "answer_start", "answer_text"}`, packed as `[CLS] question
  [SEP] context [SEP]`. Metrics: `start_accuracy`, `end_accuracy` and
  `exact_match` (both argmax positions right).

Bad rows (missing text or label, a label outside the label list, an
answer truncated away, ...) are skipped; one summary line per file says
how many, and why.

Initialization (`--init_checkpoint`):

- a pretraining model_dir of `python -m trainer.pretrain` (its latest
  `ckpt-N`) or one checkpoint prefix (`DIR/ckpt-N`): the encoder's
  variables are restored (the object path `model/encoder` of its
  `tf.train.Checkpoint(model=..., optimizer=..., step=...)`), the heads and
  the optimizer state are not; the config is the `config.json` beside it.
  A model_dir of this script works too (its checkpoints hold
  `model/encoder` as well).
- a Hugging Face BERT directory (`config.json` and `model.safetensors`,
  read by `tfnlp.models.bert.huggingface`, without PyTorch).
- nothing: the encoder of `--config` (a preset name or a BertConfig JSON
  file) starts from random weights.

Training is Keras' `compile()` + `fit()` inside `strategy.scope()` (the
strategy of `--strategy`, as in pretraining), its step compiled with XLA
(`--jit_compile`, on by default). Examples of similar length are batched
together and each batch is padded only to its bucket's width
(`--bucket_boundaries`, `trainer.length_buckets`), so a step costs what
its real tokens cost and XLA compiles one step per width. This is simpler
than the custom loop of `trainer.pretrain` and good enough for
fine-tuning, which is short and small; the price is that `--clip_norm` is
Keras' `global_clipnorm`, which under a multi-replica strategy clips each
replica's share of the gradient rather than the summed gradient (see
`trainer.optimization`). The optimizer is
`trainer.optimization.create_optimizer` (AdamW or LAMB, linear warmup,
then a linear decay to zero at the last step; no weight decay on
LayerNorm and bias variables).

Steps: one epoch is `training examples // --global_batch_size` steps; the
run is `--epochs` epochs, or exactly `--train_steps` steps if given (the
last epoch is then cut short), or less with `--stop_time_hours`. With
`--eval_data`, the eval metrics are computed every `--eval_every_steps`
steps, or else at the end of every `--eval_every_epochs`-th epoch; the
checkpoint with the best validation figure (accuracy, token accuracy, or
the span loss) is kept, and the final evaluation and the export use it.
With `--ema_momentum` (e.g. 0.999) the optimizer keeps a moving average of
the weights, and the evaluations, checkpoints, best checkpoint and export
all use the average (`AveragedWeights`; Polyak and Juditsky, 1992).

Writes into `--model_dir`:

- `config.json` (the encoder's `BertConfig`) and `labels.json`;
- `ckpt-STEP.*`: `tf.train.Checkpoint(model=..., step=...)` after each
  epoch, or every `--eval_every_steps` (the last `--keep_checkpoints`);
- `best/`: the checkpoint of the best validation figure and `best/best.json`;
- `backup/`: Keras' `BackupAndRestore` state, so that an interrupted run
  started again with the same command goes on from its last epoch (the
  backup is deleted when the run ends);
- `tensorboard/`: TensorBoard logs (`trainer.summaries`): the training loss,
  metrics and learning rate in `train/`, the validation figures in `eval/`
  (`FitSummaries`), and the hyperparameters (every flag and the encoder
  config) for the HParams tab, with the loss and accuracy of both runs as
  its metrics;
- `eval_results.json`: the final metrics on `--eval_data` (or on the
  training data without it) of the best checkpoint (its `step`), also
  printed;
- `serving.json`: the task, labels, vocabulary, lower-casing and
  sequence length, which `python -m trainer.export` reads;
- with `--export_dir`, the next version `EXPORT_DIR/<N>/` of a SavedModel
  (`tfnlp.export`): `serving_default` on raw text (labels and
  probabilities, per example or per token; the answer span) and an ids
  signature (`classify_ids`, `extract_span_ids`).
"""

import dataclasses
import json
import logging
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tfnlp.command_line import UsageError, run_main
from tfnlp.text.bert_tokenizer import BertTokenizer
from trainer import finetune_data, length_buckets, optimization, run_files, runtime, summaries
from trainer.bert_models import build_model, check_inputs_fit, encoder_from_source
from trainer.checkpoints import BestCheckpoint, Checkpoints
from trainer.export import export_trained_model, sentence_transformers_options
from trainer.finetune_flags import check_paths, parse_flags, split_labels
from trainer.progress import Progress

LOGGER = logging.getLogger("trainer.finetune")

# The fraction of the steps used for the warmup when --warmup_steps is not given.
DEFAULT_WARMUP_FRACTION = 0.1


# ---------------------------------------------------------------------------
# The encoder and its initialization


def _config_overrides(flags, from_scratch):
    """The config fields the flags change: the dropouts and, from scratch,
    the sizes (a checkpoint's are its own: `finetune_flags` checked that
    the flags repeat them)."""
    names = ["hidden_dropout", "attention_dropout"]
    if from_scratch:
        names += ["vocab_size", "num_layers"]
    return {name: getattr(flags, name) for name in names if getattr(flags, name) is not None}


def build_encoder(flags):
    """The encoder: restored from `--init_checkpoint`, or new from `--config`
    (`trainer.bert_models.encoder_from_source`). Call inside the strategy's
    scope.

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
    """The datasets of a run and what reading them gave."""

    train: tf.data.Dataset
    eval: tf.data.Dataset
    train_examples: int
    eval_examples: int
    label_list: list
    reports: list
    eval_path: str
    mean_tokens: float = 0.0
    eval_span_positions: dict = None


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


def mean_token_count(flags, tokenizer, examples):
    """The mean real (not padding) tokens of a training example, for the
    tokens/s of the progress lines."""
    if not examples:
        return 0.0
    if flags.task == "classification":
        counts = length_buckets.token_counts(
            tokenizer, [text for text, _, _ in examples], [pair for _, pair, _ in examples],
            flags.max_seq_length)
    else:
        words = [word for example_words, _ in examples for word in example_words]
        pieces = int(tokenizer.tokenize(tf.constant(words)).row_lengths().numpy().sum())
        counts = np.array([min(pieces / len(examples) + 2, flags.max_seq_length)])
    return float(np.mean(counts))


def load_data(flags, tokenizer, batch_size, drop_eval_remainder=False):
    """Reads the data files and makes the training and evaluation datasets.

    Without `--eval_data` the evaluation reads the training file again
    (without shuffling or repeating).
    """
    eval_path = flags.eval_data or flags.train_data
    widths = data_bucket_widths(flags)
    common = dict(tokenizer=tokenizer, max_seq_length=flags.max_seq_length,
                  batch_size=batch_size)
    eval_options = dict(training=False, drop_remainder=drop_eval_remainder,
                        bucket_widths=widths)
    train_options = dict(training=True, seed=flags.seed, bucket_widths=widths)
    if flags.task == "span":
        reports, encoded = [], []
        for path in (flags.train_data, eval_path):
            examples, report = finetune_data.read_spans(path)
            encoded.append(finetune_data.encode_spans(
                examples, tokenizer, flags.max_seq_length, report))
            reports.append(report)
        train, evaluation = encoded
        return TaskData(
            train=finetune_data.span_dataset(train, batch_size, **train_options),
            eval=finetune_data.span_dataset(evaluation, batch_size, **eval_options),
            mean_tokens=(float(train["input_mask"].sum(axis=1).mean())
                         if len(train["input_ids"]) else 0.0),
            train_examples=len(train["input_ids"]), eval_examples=len(evaluation["input_ids"]),
            label_list=[], reports=reports, eval_path=eval_path,
            eval_span_positions={"start": evaluation["start_positions"],
                                 "end": evaluation["end_positions"]},
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
    return TaskData(
        mean_tokens=mean_token_count(flags, tokenizer, train),
        train=make_dataset(train, label_list, **common, **train_options),
        eval=make_dataset(evaluation, label_list, **common, **eval_options),
        train_examples=len(train), eval_examples=len(evaluation),
        label_list=label_list, reports=[train_report, eval_report], eval_path=eval_path,
    )


# ---------------------------------------------------------------------------
# Model, optimizer, callbacks


def compile_model(model, task, optimizer, jit_compile=False):
    """Compiles `model` with the loss and metrics of `task` (its steps with
    XLA when `jit_compile`)."""
    if task == "classification":
        model.compile(
            jit_compile=jit_compile,
            optimizer=optimizer,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        )
    elif task == "token_classification":
        model.compile(
            jit_compile=jit_compile,
            optimizer=optimizer,
            # The mean over the weighted tokens (the first piece of each word).
            loss=keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight"),
            weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="token_accuracy")],
        )
    else:
        model.compile(
            jit_compile=jit_compile,
            optimizer=optimizer,
            loss={
                "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            },
            # The original run_squad.py: the mean of the start and end losses.
            loss_weights={"start_logits": 0.5, "end_logits": 0.5},
            metrics={
                "start_logits": [keras.metrics.SparseCategoricalAccuracy(name="start_accuracy")],
                "end_logits": [keras.metrics.SparseCategoricalAccuracy(name="end_accuracy")],
            },
        )


# The metrics of each task in `fit`'s logs (`_results_names`: without the
# head's name before a metric of the span model's two heads).
TASK_METRICS = {
    "classification": ("loss", "accuracy"),
    "token_classification": ("loss", "token_accuracy"),
    "span": ("loss", "start_accuracy", "end_accuracy"),
}


def hparams_metrics(task):
    """The `(run, name)` metrics of the HParams tab for `task`: those of
    the `eval` and `train` runs of `FitSummaries`.

    Example:

    >>> hparams_metrics("classification")[:2]
    (('eval', 'loss'), ('eval', 'accuracy'))
    """
    return tuple((group, name) for group in ("eval", "train")
                 for name in TASK_METRICS[task])


def _hparams(flags, config, run):
    """The HParams tab's values: every flag, the encoder config
    (`model/...`) and the number of replicas."""
    values = {f"model/{name}": value for name, value in config.to_dict().items()}
    values.update(vars(flags))
    values["replicas"] = run.replicas
    return values


class FitSummaries(keras.callbacks.Callback):
    """Writes `fit`'s figures to TensorBoard as the other trainers do
    (`trainer.summaries`), each at its optimizer step: to the `train` run
    the loss and metrics of the epoch so far (`fit`'s running means) and
    the learning rate, every `every` steps and at the end of each of
    `fit`'s epochs; to the `eval` run the validation figures, when `fit`
    validates.

    Args:
        writers: the run's `summaries.SummaryWriters`.
        every: steps between training scalars (`--log_every_steps`).
    """

    def __init__(self, writers, every):
        super().__init__()
        self.writers = writers
        self.every = max(every, 1)
        self.written = None

    def on_train_batch_end(self, batch, logs=None):
        if logs and self._step() % self.every == 0:
            self._write_train(logs)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self._write_train({name: value for name, value in logs.items()
                           if not name.startswith("val_")})
        validation = {name[len("val_"):]: value for name, value in logs.items()
                      if name.startswith("val_")}
        if validation:
            self.writers.scalars(self.writers.eval, _results_names(validation), self._step())

    def _step(self):
        return int(self.model.optimizer.iterations.numpy())

    def _write_train(self, logs):
        step = self._step()
        if step == self.written:
            return
        values = _results_names(logs)
        # The rate of the step just taken (0-based `step - 1`), as the
        # custom loop logs it.
        values["learning_rate"] = float(
            optimization.learning_rate_schedule(self.model.optimizer)(step - 1))
        self.writers.scalars(self.writers.train, values, step)
        self.written = step


class StopAtStep(keras.callbacks.Callback):
    """Stops `fit` after the optimizer's `total_steps`-th step."""

    def __init__(self, total_steps):
        super().__init__()
        self.total_steps = total_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.total_steps:
            self.model.stop_training = True


class FitProgress(keras.callbacks.Callback):
    """Reports `fit`'s progress over the whole run (not per epoch) with
    `trainer.progress.Progress`: step/total, examples per second, loss,
    elapsed and remaining time.

    Args:
        total_steps: the optimizer step the run trains to.
        global_batch_size: the examples of a step.
        interval_seconds: seconds between lines when not on a terminal.
        mean_tokens: the mean real (not padding) tokens of an example:
            tokens/s are examples/s times this.
    """

    def __init__(self, total_steps, global_batch_size, interval_seconds, mean_tokens=0.0):
        super().__init__()
        self.total_steps = total_steps
        self.global_batch_size = global_batch_size
        self.interval_seconds = interval_seconds
        self.mean_tokens = mean_tokens
        self.progress = None

    def on_train_begin(self, logs=None):
        start = int(self.model.optimizer.iterations.numpy())
        self.progress = Progress(self.total_steps, start=start,
                                 interval_seconds=self.interval_seconds)

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        self.progress.update(int(self.model.optimizer.iterations.numpy()),
                             examples=self.global_batch_size,
                             tokens=round(self.global_batch_size * self.mean_tokens),
                             loss=None if loss is None else float(loss))


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves `tf.train.Checkpoint(model=..., step=...)` as `ckpt-STEP` each epoch."""

    def __init__(self, checkpoints, step):
        super().__init__()
        self.checkpoints = checkpoints
        self.step = step

    def on_epoch_end(self, epoch, logs=None):
        current = int(self.model.optimizer.iterations.numpy())
        self.step.assign(current)
        self.checkpoints.save(current)


class StopAtTime(keras.callbacks.Callback):
    """Stops `fit` after the first step that ends `hours` after training
    began (`--stop_time_hours`); the interval's evaluation still runs."""

    def __init__(self, hours):
        super().__init__()
        self.seconds = hours * 3600
        self.start = None

    def on_train_begin(self, logs=None):
        self.start = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        if time.monotonic() - self.start >= self.seconds:
            LOGGER.info("--stop_time_hours: stopping after %.1f minutes of training.",
                        (time.monotonic() - self.start) / 60)
            self.model.stop_training = True


class AveragedWeights(keras.callbacks.SwapEMAWeights):
    """Puts the optimizer's moving average of the weights (`--ema_momentum`)
    in the model for each evaluation and from the end of each epoch to the
    start of the next, so the callbacks after it checkpoint the averaged
    weights; the model ends training with them.

    `keras.callbacks.SwapEMAWeights(swap_on_epoch=True)`, which also leaves
    the averaged weights in the model when training stops before its last
    epoch (`--train_steps`, `--stop_time_hours`): Keras' own callback then
    left the raw weights there. Place it after `BackupAndRestore`, which
    must save the raw weights, and before the callbacks that save the model.
    """

    def __init__(self):
        super().__init__(swap_on_epoch=True)

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if self.model.stop_training and epoch != self.params["epochs"] - 1:
            # fit() assigns the averages to the weights when it returns; the
            # averages hold the raw weights now, so copy the average back.
            self._finalize_ema_values()


class KeepBest(keras.callbacks.Callback):
    """Keeps the checkpoint of the best validation `metric` in `best/`
    (`trainer.checkpoints.BestCheckpoint`) after each evaluation."""

    def __init__(self, best, checkpoint):
        super().__init__()
        self.best = best
        self.checkpoint = checkpoint

    def on_epoch_end(self, epoch, logs=None):
        scores = {name[len("val_"):]: float(value) for name, value in (logs or {}).items()
                  if name.startswith("val_")}
        if self.best.metric in scores:
            self.best.update(int(self.model.optimizer.iterations.numpy()), scores,
                             self.checkpoint)


# The validation figure each task's best checkpoint is chosen by, and
# whether higher is better (Keras' names, without a head's prefix).
BEST_METRICS = {
    "classification": ("accuracy", True),
    "token_classification": ("token_accuracy", True),
    "span": ("loss", False),
}


# ---------------------------------------------------------------------------
# The run


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


def _steps(flags, train_examples):
    """`(steps_per_epoch, total_steps)` of the run."""
    steps_per_epoch = train_examples // flags.global_batch_size
    if steps_per_epoch < 1:
        raise UsageError(
            f"{flags.train_data} has {train_examples} usable examples, fewer than one "
            f"batch of --global_batch_size={flags.global_batch_size}. Use a smaller "
            "batch or more data."
        )
    total_steps = flags.train_steps or flags.epochs * steps_per_epoch
    return steps_per_epoch, total_steps


def fit_intervals(flags, steps_per_epoch, total_steps):
    """`(steps, intervals, validation_freq)`: `fit`'s epochs are intervals
    of `--eval_every_steps` steps (each ending with an evaluation and a
    checkpoint), or else data epochs evaluated every `--eval_every_epochs`."""
    steps = flags.eval_every_steps or steps_per_epoch
    frequency = 1 if flags.eval_every_steps else max(flags.eval_every_epochs, 1)
    return steps, math.ceil(total_steps / steps), frequency


def span_exact_match(model, dataset, positions):
    """The fraction of examples whose argmax start and end are both right."""
    outputs = model.predict(dataset, verbose=0)
    start = np.argmax(outputs["start_logits"], axis=-1)
    end = np.argmax(outputs["end_logits"], axis=-1)
    count = len(positions["start"])
    right = (start[:count] == positions["start"]) & (end[:count] == positions["end"])
    return float(right.mean()) if count else 0.0


def _results_names(values):
    """Keras' metric names without the output prefix of multi-output models."""
    renamed = {}
    for name, value in values.items():
        for prefix in ("start_logits_", "end_logits_"):
            if name.startswith(prefix) and name[len(prefix):].endswith("accuracy"):
                name = name[len(prefix):]
        renamed[name] = float(value)
    return renamed


def _callbacks(flags, writers, checkpoints, step, total_steps, keep_best, mean_tokens):
    callbacks = [
        keras.callbacks.BackupAndRestore(os.path.join(flags.model_dir, "backup")),
        *([AveragedWeights()] if flags.ema_momentum else []),
        StopAtStep(total_steps),
        EpochCheckpoint(checkpoints, step),
        keep_best,
        FitProgress(total_steps, flags.global_batch_size, flags.progress_every_seconds,
                    mean_tokens),
        FitSummaries(writers, flags.log_every_steps),
    ]
    if flags.stop_time_hours:
        callbacks.append(StopAtTime(flags.stop_time_hours))
    return callbacks


def _final_evaluation(model, flags, data, source, step):
    """The final metrics on the evaluation data, as written to
    `eval_results.json`."""
    values = _results_names(model.evaluate(data.eval, return_dict=True, verbose=0))
    if flags.task == "span":
        values["exact_match"] = span_exact_match(model, data.eval, data.eval_span_positions)
    return {
        "task": flags.task,
        "step": step,
        "eval_data": data.eval_path,
        "eval_examples": data.eval_examples,
        "train_examples": data.train_examples,
        "init": source,
        **values,
        "data": [report.to_dict() for report in data.reports],
    }


def run(flags):
    """Fine-tunes as the flags say; returns the final evaluation's metrics (a dict)."""
    run = runtime.start_run(flags.model_dir, flags.strategy, flags.tpu,
                            flags.mixed_precision, flags.seed)
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
    interval_steps, intervals, validation_freq = fit_intervals(flags, steps_per_epoch,
                                                               total_steps)
    warmup_steps = flags.warmup_steps
    if warmup_steps is None:
        warmup_steps = int(DEFAULT_WARMUP_FRACTION * total_steps)
    warmup_steps = min(warmup_steps, total_steps)

    with run.strategy.scope():
        encoder, source = build_encoder(flags)
        check_inputs_fit(encoder.config, flags.vocab_file, tokenizer.vocab_size,
                         flags.max_seq_length)
        model = build_model(flags.task, encoder, len(data.label_list), flags.dropout,
                            record["pooling"])
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
        if flags.clip_norm:
            inner = getattr(optimizer, "inner_optimizer", optimizer)
            inner.global_clipnorm = flags.clip_norm
        compile_model(model, flags.task, optimizer, flags.jit_compile)
        step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    runtime.write_run_files(run, encoder.config.to_dict(), record, flags)
    writers = summaries.SummaryWriters(flags.model_dir, enabled=run.chief)
    writers.hparams(_hparams(flags, encoder.config, run), hparams_metrics(flags.task))
    LOGGER.info(
        "Fine-tuning %s (%s) from %s on %d replica(s): %d training examples "
        "(%.1f tokens on average), %d steps of %d (%d per epoch, %d warmup), "
        "%d evaluation examples; %s, %s.",
        flags.task, type(model).__name__, source, run.replicas, data.train_examples,
        data.mean_tokens, total_steps, flags.global_batch_size, steps_per_epoch,
        warmup_steps, data.eval_examples, "XLA" if flags.jit_compile else "no XLA",
        f"length buckets {data_bucket_widths(flags)}" if data_bucket_widths(flags)
        else f"batches padded to {flags.max_seq_length}",
    )
    metric, higher_is_better = BEST_METRICS[flags.task]
    best = BestCheckpoint(flags.model_dir, metric, higher_is_better, chief=run.chief)
    best_model = tf.train.Checkpoint(model=model)

    checkpoints = Checkpoints(
        tf.train.Checkpoint(model=model, step=step), flags.model_dir, step,
        keep=flags.keep_checkpoints, chief=run.chief, task_id=run.task_id,
    )
    try:
        evaluates = flags.eval_data and (flags.eval_every_steps or flags.eval_every_epochs)
        model.fit(
            data.train,
            epochs=intervals,
            steps_per_epoch=interval_steps,
            validation_data=data.eval if evaluates else None,
            validation_freq=validation_freq,
            shuffle=False,  # the dataset shuffles (seeded); Keras would only warn
            callbacks=_callbacks(flags, writers, checkpoints, step, total_steps,
                                 KeepBest(best, best_model), data.mean_tokens),
            verbose=flags.verbose,
        )
        final_step = int(optimizer.iterations.numpy())
        if best.path() and best.best.get("step") != final_step:
            best_model.read(best.path()).assert_consumed()
            LOGGER.info("Restored the best checkpoint: step %d, validation %s %.4g.",
                        best.best["step"], metric, best.best[metric])
        results = _final_evaluation(model, flags, data, source,
                                    best.best.get("step", final_step))
        if run.chief:
            run_files.write_json(os.path.join(flags.model_dir, run_files.RESULTS_FILE), results)
        metrics = {name: value for name, value in results.items()
                   if isinstance(value, float)}
        LOGGER.info("Final evaluation on %s: %s", data.eval_path, ", ".join(
            f"{name}={value:.4g}" for name, value in metrics.items()))
        print(json.dumps({name: value for name, value in results.items() if name != "data"}))
        if flags.export_dir:
            runtime.export_at_end(
                run, export_trained_model, model, flags.export_dir,
                vocab_file=record["vocab_file"], lower_case=record["lower_case"],
                sequence_length=record["sequence_length"], labels=record["labels"] or None,
            )
    finally:
        writers.close()
        checkpoints.close()
    return results


def main(argv=None):
    runtime.configure_logging()
    flags = parse_flags(argv)
    check_paths(flags)
    return run(flags)


if __name__ == "__main__":
    run_main(main)
