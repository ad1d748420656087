"""Resumable checkpoints of a training job in its model_dir."""

import logging
import os
import shutil

import tensorflow as tf

from trainer import run_files

LOGGER = logging.getLogger(__name__)

# Where `BestCheckpoint` keeps the best checkpoint, and its record.
BEST_DIRECTORY = "best"
BEST_FILE = "best.json"


class Checkpoints:
    """A `tf.train.CheckpointManager` over `model_dir`, multi-worker aware.

    The chief writes `model_dir/ckpt-STEP.*`; in a multi-worker cluster the
    other workers must save too (saving runs collective ops), so they write
    to a scratch directory under `model_dir/.worker_checkpoints/` that
    `close()` deletes. Every worker restores from `model_dir`.

    Args:
        checkpoint: the `tf.train.Checkpoint` (model, optimizer, step, ...).
        model_dir: the job's directory.
        step: the int64 step variable (checkpoint numbers).
        keep: how many of the latest checkpoints to keep.
        chief: whether this process is the chief.
        task_id: this worker's index (names the scratch directory).
    """

    def __init__(self, checkpoint, model_dir, step, keep=5, chief=True, task_id=0):
        self.checkpoint = checkpoint
        self.model_dir = model_dir
        self.step = step
        self.chief = chief
        directory = model_dir
        if not chief:
            directory = run_files.worker_directory(
                model_dir, run_files.WORKER_CHECKPOINTS, task_id)
        self.directory = directory
        self.manager = tf.train.CheckpointManager(
            checkpoint, directory, max_to_keep=keep, step_counter=step
        )

    def restore_latest(self):
        """Restores the latest checkpoint of `model_dir`; returns its step or 0."""
        latest = tf.train.latest_checkpoint(self.model_dir)
        if latest is None:
            LOGGER.info("No checkpoint in %s: training from scratch.", self.model_dir)
            return 0
        self.checkpoint.restore(latest).assert_existing_objects_matched()
        step = int(self.step.numpy())
        LOGGER.info("Restored %s: resuming from step %d.", latest, step)
        return step

    def save(self, step):
        """Saves the checkpoint numbered `step` (on every worker)."""
        path = self.manager.save(checkpoint_number=step)
        if self.chief:
            LOGGER.info("Saved checkpoint %s.", path)
        return path

    def close(self):
        if not self.chief:
            shutil.rmtree(self.directory, ignore_errors=True)
            try:
                os.rmdir(os.path.dirname(self.directory))
            except OSError:
                pass  # Another worker's directory is still there.


class BestCheckpoint:
    """The checkpoint of the best validation figure so far, kept in
    `model_dir/best/` with `best/best.json` (its step, checkpoint name and
    scores), which a resumed run reads back.

    Args:
        model_dir: the run's directory.
        metric: the evaluation figure that ranks checkpoints ("bleu",
            "loss").
        higher_is_better: whether a larger `metric` is better.
        chief: whether this process writes (other workers only track).

    Example:

    >>> import tempfile
    >>> best = BestCheckpoint(tempfile.mkdtemp(), "loss", higher_is_better=False)
    >>> checkpoint = tf.train.Checkpoint(weight=tf.Variable(1.0))
    >>> best.update(10, {"loss": 2.0}, checkpoint), best.update(20, {"loss": 2.5}, checkpoint)
    (True, False)
    >>> best.best["step"]
    10
    """

    def __init__(self, model_dir, metric, higher_is_better=True, chief=True):
        self.model_dir = model_dir
        self.metric = metric
        self.higher_is_better = higher_is_better
        self.chief = chief
        self.directory = os.path.join(model_dir, BEST_DIRECTORY)
        self.best = run_files.read_json(os.path.join(self.directory, BEST_FILE), {})

    def is_better(self, value):
        """Whether `value` of the metric beats the best so far."""
        if self.metric not in self.best:
            return True
        best = self.best[self.metric]
        return value > best if self.higher_is_better else value < best

    def update(self, step, scores, checkpoint):
        """Saves `checkpoint` (a `tf.train.Checkpoint`) as the best when
        `scores[metric]` beats the best so far; returns whether it did."""
        value = scores[self.metric]
        if not self.is_better(value):
            return False
        if self.chief:
            path = checkpoint.write(os.path.join(self.directory, "ckpt"))
            self.best = {"step": step, "checkpoint": os.path.basename(path), **scores}
            run_files.write_json(os.path.join(self.directory, BEST_FILE), self.best)
            LOGGER.info("Validation %s %.4g is the best so far: saved %s.", self.metric,
                        value, path)
        else:
            self.best = {"step": step, **scores}
        return True

    def path(self):
        """The best checkpoint's prefix, or None before any was saved."""
        return best_checkpoint(self.model_dir)


def best_checkpoint(model_dir):
    """The prefix of a run's best checkpoint (`BestCheckpoint`), or None."""
    best = run_files.read_json(os.path.join(model_dir, BEST_DIRECTORY, BEST_FILE), {})
    if not best.get("checkpoint"):
        return None
    return os.path.join(model_dir, BEST_DIRECTORY, best["checkpoint"])


def read_run_config(model_dir, entry_point):
    """The `config.json` of a run (`trainer.run_files`), or FileNotFoundError
    naming the `entry_point` ("trainer.lm") whose runs have one."""
    config = run_files.read_json(os.path.join(model_dir, run_files.CONFIG_FILE))
    if config is None:
        raise FileNotFoundError(
            f"{model_dir} has no {run_files.CONFIG_FILE}: it is not the model_dir of a "
            f"`python -m {entry_point}` run."
        )
    return config


def restore_run_model(model, model_dir, checkpoint=""):
    """Reads a run's weights into `model` (built): those of `checkpoint`
    (a prefix), by default the best checkpoint (`BestCheckpoint`), else the
    latest. Every model variable must be in it; the optimizer and the step
    are left out. Returns `model`."""
    path = checkpoint or best_checkpoint(model_dir) or find_checkpoint(model_dir, "--model_dir")
    status = tf.train.Checkpoint(model=model).read(path)
    status.assert_existing_objects_matched()
    status.expect_partial()
    return model


def latest_step(model_dir):
    """The step of the latest checkpoint in `model_dir`, or 0 (read from the
    checkpoint's `step` variable, without restoring anything)."""
    latest = tf.train.latest_checkpoint(model_dir)
    if latest is None:
        return 0
    return int(tf.train.load_variable(latest, "step/.ATTRIBUTES/VARIABLE_VALUE"))


def find_checkpoint(path, flag):
    """The checkpoint prefix that `path` (a directory or a prefix) names.

    Args:
        path: a model_dir (its latest checkpoint) or a checkpoint prefix
            such as `DIR/ckpt-1000`.
        flag: the command-line flag that gave `path`, for the error message.

    Raises:
        FileNotFoundError: if `path` is neither a directory with a
            checkpoint nor a checkpoint prefix.
    """
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(
                f"{flag}={path!r} is a directory without a TensorFlow checkpoint (no "
                "'checkpoint' file naming a ckpt-N) and without Hugging Face weights "
                "(model.safetensors). Pass the model_dir of a trainer run "
                "(trainer.pretrain, trainer.finetune, trainer.translate) that has saved "
                "a checkpoint, a checkpoint prefix such as DIR/ckpt-1000, or a Hugging "
                "Face BERT directory."
            )
        return latest
    if tf.io.gfile.exists(path + ".index"):
        return path
    raise FileNotFoundError(
        f"{flag}={path!r} does not exist (no directory and no {path}.index). Pass a "
        "model_dir, a checkpoint prefix such as DIR/ckpt-1000, or a Hugging Face BERT "
        "directory."
    )
