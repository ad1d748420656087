"""Shared helpers of the trainer tests: tiny TFRecords and trainer runs."""

import contextlib
import importlib
import io
import json
import logging
import os
import random
import socket
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf

from tests.conftest import REPOSITORY
from tfnlp.data import pretraining_schema

MAX_SEQ_LENGTH = 32
MAX_PREDICTIONS = 5
VOCAB_SIZE = 100


def write_records(path, count=64, seed=0, nan_weight_records=()):
    """Writes `count` random pretraining records (ids in [5, 100)) to `path`.

    The records whose index is in `nan_weight_records` get a NaN masked-LM
    weight, so that a batch holding one has a NaN loss computed in the graph.
    """
    rng = random.Random(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for index in range(count):
            length = rng.randint(8, MAX_SEQ_LENGTH)
            input_ids = [2] + [rng.randint(5, VOCAB_SIZE - 1) for _ in range(length - 2)] + [3]
            segment_ids = [0] * (length // 2) + [1] * (length - length // 2)
            positions = sorted(rng.sample(range(1, length - 1), 3))
            labels = [rng.randint(5, VOCAB_SIZE - 1) for _ in positions]
            record = pretraining_schema.serialize_instance(
                input_ids, segment_ids, positions, labels, index % 2 == 1,
                MAX_SEQ_LENGTH, MAX_PREDICTIONS,
            )
            if index in nan_weight_records:
                example = tf.train.Example.FromString(record)
                example.features.feature["masked_lm_weights"].float_list.value[0] = float("nan")
                record = example.SerializeToString()
            writer.write(record)
    return path


def flags(train_data, model_dir, *extra, **overrides):
    """The command-line flags of a tiny, fast, deterministic run."""
    values = {
        "train_data": train_data,
        "model_dir": model_dir,
        "config": "tiny",
        "num_layers": 1,
        "vocab_size": VOCAB_SIZE,
        "max_seq_length": MAX_SEQ_LENGTH,
        "max_predictions_per_seq": MAX_PREDICTIONS,
        "global_batch_size": 8,
        "train_steps": 5,
        "warmup_steps": 2,
        "learning_rate": 1e-3,
        "hidden_dropout": 0.0,
        "attention_dropout": 0.0,
        "log_every_steps": 1,
        "attention_images_every_steps": 0,
    }
    values.update(overrides)
    return [f"--{name}={value}" for name, value in values.items()] + list(extra)


def environment(**extra):
    """The environment of a trainer subprocess (quiet TensorFlow, no GPU)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPOSITORY)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env.update(extra)
    return env


def multi_worker_configs(count):
    """The TF_CONFIG of each of `count` workers of one cluster on free
    ports of 127.0.0.1."""
    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("127.0.0.1", 0))
    workers = [f"127.0.0.1:{each.getsockname()[1]}" for each in sockets]
    for each in sockets:
        each.close()
    return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
            for index in range(count)]


def start(arguments, logical_cpus=0, module="trainer.pretrain", **env):
    """Starts `python -m MODULE ARGUMENTS` (a `subprocess.Popen`).

    With `logical_cpus`, the CPU is first split into that many logical
    devices (for MirroredStrategy on a machine without GPUs).
    """
    if logical_cpus:
        code = (
            "import sys, tensorflow as tf\n"
            "cpu = tf.config.list_physical_devices('CPU')[0]\n"
            f"tf.config.set_logical_device_configuration(cpu, "
            f"[tf.config.LogicalDeviceConfiguration()] * {logical_cpus})\n"
            f"import importlib; importlib.import_module({module!r}).main(sys.argv[1:])\n"
        )
        command = [sys.executable, "-c", code, *arguments]
    else:
        command = [sys.executable, "-m", module, *arguments]
    return subprocess.Popen(
        command, cwd=REPOSITORY, env=environment(**env),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def run(arguments, logical_cpus=0, timeout=240, module="trainer.pretrain", **env):
    """Runs the trainer to the end; returns its output (fails on errors)."""
    process = start(arguments, logical_cpus=logical_cpus, module=module, **env)
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-4000:]
    return output


def run_here(arguments, module="trainer.pretrain"):
    """Runs the trainer's `main(arguments)` in this process, as `run` does
    in a new one but without the interpreter's and TensorFlow's start-up;
    returns the trainer's log lines. A `--mixed_precision` run sets the
    global dtype policy, which the caller must set back."""
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    logger = logging.getLogger("trainer")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            importlib.import_module(module).main(list(arguments))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return lines.getvalue()


def train_log(model_dir):
    """The records of `model_dir/train_log.jsonl`."""
    with open(os.path.join(model_dir, "train_log.jsonl"), encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def event_values(log_dir):
    """`{tag: [(step, value or tensor)]}` of every event file under `log_dir`."""
    values = {}
    for path in tf.io.gfile.glob(os.path.join(log_dir, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                values.setdefault(value.tag, []).append(
                    (event.step, tf.make_ndarray(value.tensor))
                )
    return values


def tensorboard_values(model_dir, run=""):
    """`event_values` of a run's TensorBoard `run` ("train", "eval"), or of
    the folder of its hparams (run="")."""
    return event_values(os.path.join(model_dir, "tensorboard", run))


def checkpoint_values(prefix, scopes=("model/", "optimizer/")):
    """`{name: array}` of the variables under `scopes` in a checkpoint."""
    reader = tf.train.load_checkpoint(str(prefix))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name.startswith(scopes)
    }


def zero_batch(batch_size=1):
    """A pretraining batch of zeros in the shapes of the tiny runs."""
    batch = {
        name: np.zeros([batch_size, length], dtype)
        for name, length, dtype in (
            ("input_ids", MAX_SEQ_LENGTH, "int32"),
            ("input_mask", MAX_SEQ_LENGTH, "int32"),
            ("segment_ids", MAX_SEQ_LENGTH, "int32"),
            ("masked_lm_positions", MAX_PREDICTIONS, "int32"),
            ("masked_lm_ids", MAX_PREDICTIONS, "int32"),
            ("masked_lm_weights", MAX_PREDICTIONS, "float32"),
        )
    }
    batch["next_sentence_labels"] = np.zeros([batch_size, 1], "int32")
    return batch


def restored_pretraining_model(model_dir):
    """The pretraining model of a run, restored here from its latest checkpoint.

    Built from the run's config.json and restored with a plain
    `tf.train.Checkpoint`, not with the trainer's or the exporter's code, so
    that the tests compare those against an independent copy of the weights.
    """
    from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel

    config = BertConfig.from_json(os.path.join(model_dir, "config.json"))
    model = BertPretrainingModel(BertEncoder(config))
    model(zero_batch(), training=False)
    status = tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(str(model_dir)))
    status.assert_existing_objects_matched()
    status.expect_partial()
    return model


class LineTask:
    """Fits y = 3x with one weight from 0: the mean squared error."""

    sum_names = ("loss_sum", "examples", "tokens")

    def __init__(self):
        self.model = keras.Sequential([
            keras.Input((1,)),
            keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])

    def forward(self, batch, training=None):
        return self.model(batch["x"], training=training)

    def batch_totals(self, batch):
        return {"examples": tf.cast(tf.shape(batch["x"])[0], tf.float32)}

    def loss(self, batch, outputs, totals):
        return tf.reduce_sum(tf.square(outputs - batch["y"])) / totals["examples"]

    def sums(self, batch, outputs):
        examples = tf.cast(tf.shape(batch["x"])[0], tf.float32)
        return {"loss_sum": tf.reduce_sum(tf.square(outputs - batch["y"])),
                "examples": examples, "tokens": examples}

    def results(self, totals):
        return {"loss": totals["loss_sum"] / max(totals["examples"], 1.0)}

    def step_record(self, sums):
        return {}


def kernel(model):
    return float(model.layers[0].kernel.numpy()[0, 0])
