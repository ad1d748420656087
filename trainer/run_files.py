"""The files of a training run's `model_dir`, named in one place.

Every entry point reads and writes a run's files through these names, so a
new trainer writes what `trainer.export` and users already know how to read:

| file | written by | holds |
|---|---|---|
| `flags.yaml` | every trainer | the run's flags, resolved from `--config_file` and the command line: the same command with `--config_file=MODEL_DIR/flags.yaml` repeats the run (`write_flags`) |
| `config.json` | every trainer | the model's config: the `BertConfig` (pretraining, fine-tuning) or the Keras-serialized translation model |
| `serving.json` | every trainer | what an export needs besides the checkpoint: the model kind and vocabulary, then lower-casing, sequence length and labels (BERT) or the decoding settings (translation) (`write_serving_record`) |
| `labels.json` | `trainer.finetune` | the label list; a label's class id is its index |
| `eval_results.json` | `trainer.finetune` | the final evaluation |
| `train_log.jsonl`, `eval_log.jsonl` | the custom loop | one JSON line per step / per evaluation (`JsonLog`) |
| `ckpt-STEP.*`, `checkpoint` | `trainer.checkpoints` | `tf.train.Checkpoint`s |
| `tensorboard/` | the trainers | TensorBoard logs: the hparams, and the `train/` and `eval/` runs (`eval/` only when the run evaluates) (`trainer.summaries`) |
| `best/`, `best/best.json` | `trainer.translate` | the checkpoint of the best validation BLEU, its step and scores (named in `trainer.checkpoints`) |
| `.worker_checkpoints/`, `.worker_export/` | non-chief workers | scratch, deleted or ignored |
"""

import json
import os

import tensorflow as tf

from tfnlp import command_line

FLAGS_FILE = "flags.yaml"
CONFIG_FILE = "config.json"
SERVING_FILE = "serving.json"
LABELS_FILE = "labels.json"
RESULTS_FILE = "eval_results.json"
TRAIN_LOG_FILE = "train_log.jsonl"
EVAL_LOG_FILE = "eval_log.jsonl"
TENSORBOARD = "tensorboard"
TRAIN_SUMMARIES = f"{TENSORBOARD}/train"
EVAL_SUMMARIES = f"{TENSORBOARD}/eval"
# Non-chief workers of a multi-worker cluster must save and export too (both
# run collective ops); they write here, per worker.
WORKER_CHECKPOINTS = ".worker_checkpoints"
WORKER_EXPORT = ".worker_export"


def worker_directory(model_dir, scratch, task_id):
    """The scratch directory (`WORKER_CHECKPOINTS` or `WORKER_EXPORT`) of
    worker `task_id`."""
    return os.path.join(model_dir, scratch, f"worker_{task_id}")


def read_json(path, default=None):
    """The JSON value in `path` (any TensorFlow filesystem), or `default`
    if there is no such file."""
    if not tf.io.gfile.exists(path):
        return default
    with tf.io.gfile.GFile(path) as file:
        return json.load(file)


def write_json(path, value):
    """Writes `value` to `path` as indented JSON."""
    with tf.io.gfile.GFile(path, "w") as file:
        file.write(json.dumps(value, indent=2) + "\n")


def write_flags(model_dir, flags):
    """Writes `model_dir/flags.yaml`: every flag of the run (`vars(flags)`),
    as `--config_file` reads it back (`tfnlp.command_line.settings_text`),
    so that the same command with `--config_file=MODEL_DIR/flags.yaml`
    parses to the same flags. A resumed run writes its own."""
    comments = (
        "The flags of this run, resolved from --config_file and the command line.",
        "Repeat the run: the same command with --config_file=<this file>;",
        "flags on the command line override these.",
        f"Relative paths are relative to {os.getcwd()}, where the run started.",
    )
    with tf.io.gfile.GFile(os.path.join(model_dir, FLAGS_FILE), "w") as file:
        file.write(command_line.settings_text(vars(flags), comments))


def write_serving_record(model_dir, record):
    """Writes `model_dir/serving.json`: what an export of the run needs
    besides its checkpoint (`model`: one of `trainer.bert_models.MODEL_KINDS`;
    `vocab_file`, `lower_case`, `sequence_length`, `labels`, `dropout` when
    known)."""
    write_json(os.path.join(model_dir, SERVING_FILE), record)


def write_labels(model_dir, labels):
    """Writes `model_dir/labels.json`: the label list (class id -> label)."""
    with tf.io.gfile.GFile(os.path.join(model_dir, LABELS_FILE), "w") as file:
        file.write(json.dumps(labels, indent=0) + "\n")


def read_serving_record(model_dir):
    """The record of `write_serving_record`, or `{}` if the run has none."""
    return read_json(os.path.join(model_dir, SERVING_FILE), {})


class JsonLog:
    """Appends one JSON object per line to a file (only on the chief).

    Args:
        path: the file; opened for appending, so a resumed run goes on
            where the last one stopped.
        enabled: False on workers that must not write.
    """

    def __init__(self, path, enabled=True):
        self.path = path
        self.enabled = enabled
        self.file = open(path, "a", encoding="utf-8") if enabled else None

    def write(self, record):
        if self.file:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()

    def close(self):
        if self.file:
            self.file.close()
