"""What every training entry point does around its training: start the run
(dtype policy, strategy, model_dir, seed), check the batch against the
replicas, and export the trained model at the end."""

import dataclasses
import logging
import os
import sys

import keras
import tensorflow as tf

from tfnlp.command_line import UsageError, verbose_requested
from trainer import distribution, run_files
from trainer.checkpoints import Checkpoints, latest_step

LOGGER = logging.getLogger(__name__)

# The --mixed_precision choices: Keras' "mixed_<dtype>" policies.
MIXED_PRECISION = ("bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class Run:
    """The process's place in a training job.

    Attributes:
        strategy: the `tf.distribute.Strategy`.
        model_dir: the run's directory (`trainer.run_files`).
        chief: whether this process writes the run's files.
        task_id: this worker's index in a multi-worker cluster (0 otherwise).
    """

    strategy: tf.distribute.Strategy
    model_dir: str
    chief: bool
    task_id: int
    default_strategy: bool = True

    @property
    def replicas(self):
        return self.strategy.num_replicas_in_sync


def configure_logging():
    """INFO log lines with time, level and logger on stderr (the trainers'
    command lines). TensorFlow's and absl's own INFO lines (a SavedModel's
    assets written, its inputs renamed) show only with `--verbose`; their
    warnings and errors always do."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose_requested():
        for name in ("tensorflow", "absl"):
            logging.getLogger(name).setLevel(logging.WARNING)


def start_run(model_dir, strategy_name="default", tpu="", mixed_precision=None, seed=0):
    """Starts a run: the global dtype policy (`mixed_precision`:
    "bfloat16", "float16" or None), the strategy of `--strategy`, the
    model_dir, and the Keras seed of the initial weights and dropout."""
    if mixed_precision:
        keras.mixed_precision.set_global_policy(f"mixed_{mixed_precision}")
    strategy = distribution.get_strategy(strategy_name, tpu)
    _, task_id = distribution.task_of(strategy)
    tf.io.gfile.makedirs(model_dir)
    keras.utils.set_random_seed(seed)
    return Run(strategy, model_dir, distribution.is_chief(strategy), task_id,
               default_strategy=(strategy_name == "default"))


def check_global_batch_size(global_batch_size, replicas, accumulation_steps=1):
    """Raises UsageError unless the global batch splits evenly over the
    replicas and, on each, into `accumulation_steps` micro-batches."""
    divisor = replicas * accumulation_steps
    if global_batch_size % divisor:
        accumulation = (f" times --gradient_accumulation_steps ({accumulation_steps}) = "
                        f"{divisor}" if accumulation_steps > 1 else "")
        raise UsageError(
            f"--global_batch_size={global_batch_size} must be divisible by the number of "
            f"replicas ({replicas}){accumulation}."
        )


def export_at_end(run, export, model, export_dir, **options):
    """Exports the trained model at the end of training; returns the path.

    Every worker of a multi-worker cluster must export (saving runs
    collective ops); only the chief writes to `export_dir`, the others to a
    scratch directory in the model_dir.

    Args:
        run: the `Run`.
        export: the function `(model, export_dir, **options) -> path` of the
            model family (`trainer.export.export_trained_model` for BERT).
        model: the trained model.
        export_dir: the base directory of the versioned exports.
        options: passed on to `export`.
    """
    if not run.chief:
        export_dir = run_files.worker_directory(run.model_dir, run_files.WORKER_EXPORT,
                                                run.task_id)
    path = export(model, export_dir, **options)
    if run.chief:
        LOGGER.info("Exported the model to %s.", path)
    return path


def write_run_files(run, config, serving_record, flags):
    """Writes the run's `flags.yaml` (the parsed `flags`), `config.json`
    (`config.to_json`) and `serving.json` (on the chief only)."""
    if run.chief:
        run_files.write_flags(run.model_dir, flags)
        config.to_json(os.path.join(run.model_dir, run_files.CONFIG_FILE))
        run_files.write_serving_record(run.model_dir, serving_record)


def step_variable():
    """The int64 training step, counted once however many replicas (create
    it in the strategy's scope)."""
    return tf.Variable(0, dtype=tf.int64, trainable=False, name="step",
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def training_state(run, dataset_function, seed, keep, **tracked):
    """The training iterator and the run's `Checkpoints`, restored.

    The iterator of one device is saved in the checkpoints, so a resumed run
    goes on with the next batch. Distributed iterators cannot be saved: a
    resumed distributed run reads the data in a new order instead, seeded
    with the restored step, rather than the first batches again.

    Args:
        run: the `Run`.
        dataset_function: `seed -> (input_context -> tf.data.Dataset)`, for
            `distribute_datasets_from_function`.
        seed: the data seed of `--seed`.
        keep: how many checkpoints to keep.
        tracked: what the checkpoints hold besides the iterator: the model,
            optimizer and `step` (a `step_variable`), built already.

    Returns:
        `(train_iterator, checkpoints, step)`: `step` is the restored step
        (0 when there was no checkpoint).
    """
    saved_iterator = run.replicas == 1 and run.default_strategy
    data_seed = seed if saved_iterator else seed + latest_step(run.model_dir)
    train_iterator = iter(run.strategy.distribute_datasets_from_function(
        dataset_function(data_seed)))
    if saved_iterator:
        tracked["train_iterator"] = train_iterator
    checkpoints = Checkpoints(tf.train.Checkpoint(**tracked), run.model_dir, tracked["step"],
                              keep=keep, chief=run.chief, task_id=run.task_id)
    return train_iterator, checkpoints, checkpoints.restore_latest()
