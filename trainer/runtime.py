"""What every training entry point does around its training: start the run
(dtype policy, strategy, model_dir, seed), check the batch against the
replicas, and export the trained model at the end."""

import dataclasses
import logging
import os
import sys

import keras
import tensorflow as tf

from trainer import distribution, run_files

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

    @property
    def replicas(self):
        return self.strategy.num_replicas_in_sync


def configure_logging():
    """INFO log lines with time, level and logger on stderr (the trainers'
    command lines)."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def start_run(model_dir, strategy="default", tpu="", mixed_precision=None, seed=0):
    """Starts a run: the global dtype policy (`mixed_precision`:
    "bfloat16", "float16" or None), the strategy of `--strategy`, the
    model_dir, and the Keras seed of the initial weights and dropout."""
    if mixed_precision:
        keras.mixed_precision.set_global_policy(f"mixed_{mixed_precision}")
    strategy = distribution.get_strategy(strategy, tpu)
    _, task_id = distribution.task_of(strategy)
    tf.io.gfile.makedirs(model_dir)
    keras.utils.set_random_seed(seed)
    return Run(strategy, model_dir, distribution.is_chief(strategy), task_id)


def check_global_batch_size(global_batch_size, replicas, accumulation_steps=1):
    """Raises ValueError unless the global batch splits evenly over the
    replicas and, on each, into `accumulation_steps` micro-batches."""
    divisor = replicas * accumulation_steps
    if global_batch_size % divisor:
        accumulation = (f" times --gradient_accumulation_steps ({accumulation_steps}) = "
                        f"{divisor}" if accumulation_steps > 1 else "")
        raise ValueError(
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


def write_run_files(run, config, serving_record):
    """Writes the run's `config.json` (`config.to_json`) and `serving.json`
    (on the chief only)."""
    if run.chief:
        config.to_json(os.path.join(run.model_dir, run_files.CONFIG_FILE))
        run_files.write_serving_record(run.model_dir, serving_record)
